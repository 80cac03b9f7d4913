"""Documents chunked through a Markdown rendering of their text (HTML,
notebooks): ``Rendering`` collects the rendered lines with the sections over
them, and remembers for each line which lines of the original file it came
from, so chunks point at the file as it lies on disk.

A chunk's content is rendered text (headings as ``#`` lines, code as fences);
its startLine is the first original line of its first rendered line, its
endLine the last original line of its last one.
"""

from typing import Any

from rag.chunking.lines import Lines
from rag.chunking.markdown import Block, BlockKind, SectionBuilder, chunk_sections
from rag.chunking.model import Chunk
from rag.storable import make_storable


class Rendering:
    """Rendered lines, each with the (first, last) 1-based original lines it
    stands for, and the ``SectionBuilder`` that groups them."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.origins: list[tuple[int, int]] = []
        self.sections = SectionBuilder()

    def append(self, line: str, first: int, last: int) -> int:
        """Add one rendered line without giving it a block; its index."""
        self.lines.append(line)
        self.origins.append((first, max(first, last)))
        return len(self.lines) - 1

    def add_line(self, line: str, first: int, last: int, kind: BlockKind = "line") -> Block:
        """Add one rendered line as a block of its own."""
        index = self.append(line, first, last)
        block = Block(index, index + 1, kind)
        self.sections.add(block)
        return block

    def add_header(self, level: int, title: str, first: int, last: int) -> None:
        index = self.append(f"{'#' * level} {title}", first, last)
        self.sections.add_header(Block(index, index + 1, "header"), level, title)

    def add_blank(self) -> None:
        """A paragraph break (where a chunk prefers to end), never two in a row."""
        if self.lines and self.lines[-1] != "":
            self.add_line("", *self.origins[-1])

    def chunks(
        self, path: str, *, source_type: str, language: str, max_tokens: int, overlap: int
    ) -> list[Chunk]:
        """The rendered text chunked by sections, lines mapped to the original."""
        text, _ = make_storable("".join(line + "\n" for line in self.lines))
        lines = Lines(text)
        chunks = chunk_sections(
            lines,
            self.sections.sections(lines),
            path,
            source_type=source_type,
            language=language,
            max_tokens=max_tokens,
            overlap=overlap,
        )
        return [self._original_lines(chunk) for chunk in chunks]

    def _original_lines(self, chunk: Chunk) -> Chunk:
        metadata: dict[str, Any] = dict(chunk.metadata)
        metadata["startLine"] = self.origins[metadata["startLine"] - 1][0]
        metadata["endLine"] = self.origins[metadata["endLine"] - 1][1]
        if "sections" in metadata:
            metadata["sections"] = [
                {**part, "startLine": self.origins[part["startLine"] - 1][0],
                 "endLine": self.origins[part["endLine"] - 1][1]}
                for part in metadata["sections"]
            ]
        return Chunk(chunk.content, metadata)

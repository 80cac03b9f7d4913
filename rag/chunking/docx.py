"""Word (.docx) chunking with python-docx, through the Markdown section chunker.

The stored text renders the body the way Markdown would: "Heading N" (and
"Title", as level 1) paragraphs become ``#`` header lines, other paragraphs
their text followed by a blank line, tables ``| a | b |`` rows with a delimiter
row after the first. The sections are built while rendering, from the styles,
never by re-parsing that text, so a paragraph that happens to start with
``#`` or a fence stays plain text. Chunks get sourceType "text", language
"docx", and headerPath/headerLevel as Markdown chunks do.
"""

import re
from io import BytesIO

from docx import Document
from docx.table import Table, _Cell
from docx.text.paragraph import Paragraph

from rag.chunking.lines import Lines
from rag.chunking.markdown import Block, BlockKind, SectionBuilder, chunk_sections
from rag.chunking.model import Chunk
from rag.errors import ChunkingError
from rag.storable import make_storable

_HEADING_STYLE = re.compile(r"Heading ([1-9])")


class _Renderer:
    """Appends the text lines of a document while recording its sections."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.sections = SectionBuilder()

    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def paragraph(self, paragraph: Paragraph) -> None:
        text = paragraph.text
        if not text.strip():
            return
        level = _heading_level(paragraph)
        if level is not None:
            title = " ".join(text.split())
            self.sections.add_header(self._append(f"{'#' * level} {title}", "header"), level, title)
        else:
            for line in text.split("\n"):
                self.sections.add(self._append(line, "line"))
        self.sections.add(self._append("", "line"))

    def table(self, table: Table) -> None:
        rows = [_cell_texts(row.cells) for row in table.rows]
        if not rows:
            return
        first = len(self.lines)
        self.lines.append(_table_line(rows[0]))
        self.lines.append(_table_line(["---"] * len(rows[0])))
        self.lines.extend(_table_line(row) for row in rows[1:])
        self.sections.add(Block(first, len(self.lines), "table"))
        self.sections.add(self._append("", "line"))

    def _append(self, line: str, kind: BlockKind) -> Block:
        self.lines.append(line)
        return Block(len(self.lines) - 1, len(self.lines), kind)


def chunk_docx(
    data: bytes, path: str, *, max_tokens: int, overlap: int
) -> tuple[str, list[Chunk], list[str]]:
    """The stored text, the chunks and the warnings for a .docx file's bytes."""
    renderer = _Renderer()
    try:
        for item in Document(BytesIO(data)).iter_inner_content():
            if isinstance(item, Paragraph):
                renderer.paragraph(item)
            else:
                renderer.table(item)
    except Exception as error:  # not a zip, missing parts, bad XML, encrypted (OLE) files
        raise ChunkingError(f"unreadable .docx: {type(error).__name__}: {error}") from error
    text, warnings = make_storable(renderer.text())
    lines = Lines(text)
    chunks = chunk_sections(
        lines,
        renderer.sections.sections(lines),
        path,
        source_type="text",
        language="docx",
        max_tokens=max_tokens,
        overlap=overlap,
    )
    return text, chunks, warnings


def _heading_level(paragraph: Paragraph) -> int | None:
    name = paragraph.style.name if paragraph.style is not None else None
    if name == "Title":
        return 1
    match = _HEADING_STYLE.fullmatch(name or "")
    return int(match.group(1)) if match else None


def _cell_texts(cells: tuple[_Cell, ...]) -> list[str]:
    """The row's cell texts on one line each, a cell spanning columns once."""
    texts: list[str] = []
    index = 0
    while index < len(cells):
        cell = cells[index]
        texts.append(" ".join(cell.text.split()).replace("|", "\\|"))
        index += max(1, cell.grid_span)
    return texts


def _table_line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"

"""Plain-text chunking (.txt, .csv, .log and any text that is not code):
windows of whole lines under the token bound, with overlap, ending at a blank
line when one is close; a line is cut only when it alone is over the bound.

Each chunk's content is exactly ``text[startOffset:endOffset]``.
"""

from rag.chunking.lines import Lines, line_spans
from rag.chunking.model import Chunk


def chunk_text(
    text: str, path: str, *, language: str = "text", max_tokens: int, overlap: int
) -> list[Chunk]:
    """Chunks of ``text`` with sourceType "text", line numbers and offsets."""
    lines = Lines(text)
    return [
        Chunk(
            text[span.start : span.end],
            {
                "path": path,
                "sourceType": "text",
                "language": language,
                "startLine": span.first_line + 1,
                "endLine": span.last_line + 1,
                "startOffset": span.start,
                "endOffset": span.end,
            },
        )
        for span in line_spans(lines, 0, len(lines), max_tokens, overlap)
    ]

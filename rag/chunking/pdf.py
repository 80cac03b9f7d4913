"""PDF chunking with pypdf: the text of every page, one chunk per page.

The stored text is the pages' text, each ending in a newline, joined by a line
holding only a form feed, so line numbers point into it like into any file.
A page over the bound is split into line windows with overlap; a page under a
quarter of the bound absorbs the pages after it while they fit (slides, title
pages), so pageStart/pageEnd may differ. Pages without text (scans) add
nothing. Encrypted PDFs that need a password and PDFs pypdf cannot read raise
ChunkingError; nothing else escapes.
"""

import logging
from io import BytesIO

from pypdf import PasswordType, PdfReader

from rag.chunking.lines import Lines, Span, line_spans
from rag.chunking.model import Chunk
from rag.errors import ChunkingError
from rag.storable import make_storable

# pypdf logs every repair it makes ("EOF marker not found"…) to stderr; what
# matters reaches the user as a warning or error of the file instead.
logging.getLogger("pypdf").setLevel(logging.ERROR)

PAGE_SEPARATOR = "\f\n"
# A page holding fewer tokens than this share of the bound is merged with the next.
_SMALL_PAGE_SHARE = 1 / 4


def chunk_pdf(
    data: bytes, path: str, *, max_tokens: int, overlap: int
) -> tuple[str, list[Chunk], list[str]]:
    """The stored text, the chunks and the warnings for a PDF file's bytes."""
    pages, warnings = _extract_pages(data)
    text, replaced = make_storable(PAGE_SEPARATOR.join(pages))
    warnings += replaced
    lines = Lines(text)
    page_lines = _page_line_ranges(pages)
    chunks: list[Chunk] = []
    for first_page, last_page in _page_groups(lines, page_lines, max_tokens):
        first, end = lines.trimmed(page_lines[first_page][0], page_lines[last_page][1])
        if lines.tokens_in(first, end) <= max_tokens:
            spans = [Span(lines.starts[first], lines.starts[end], first, end - 1)]
        else:  # a single page: groups of several pages fit by construction
            spans = line_spans(lines, first, end, max_tokens, overlap)
        chunks.extend(
            Chunk(
                text[span.start : span.end],
                {
                    "path": path,
                    "sourceType": "pdf",
                    "language": "pdf",
                    "startLine": span.first_line + 1,
                    "endLine": span.last_line + 1,
                    "pageStart": first_page + 1,
                    "pageEnd": last_page + 1,
                },
            )
            for span in spans
        )
    if not chunks and not warnings:
        warnings.append("no extractable text in PDF (scanned images?)")
    return text, chunks, warnings


def _extract_pages(data: bytes) -> tuple[list[str], list[str]]:
    """Each page's text ending in a newline, and warnings for pages that failed."""
    try:
        reader = PdfReader(BytesIO(data))
        # Many PDFs are encrypted only against editing, with an empty password.
        locked = reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED
        pages = [] if locked else list(reader.pages)
    except Exception as error:  # pypdf raises many kinds on damaged files
        raise ChunkingError(f"unreadable PDF: {_describe(error)}") from error
    if locked:
        raise ChunkingError("encrypted PDF: a password is needed to read it")
    texts: list[str] = []
    warnings: list[str] = []
    for number, page in enumerate(pages, start=1):
        try:
            page_text = page.extract_text()
        except Exception as error:
            warnings.append(f"page {number}: text not extracted: {_describe(error)}")
            page_text = ""
        texts.append(page_text if page_text.endswith("\n") else page_text + "\n")
    return texts, warnings


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _page_line_ranges(pages: list[str]) -> list[tuple[int, int]]:
    """Lines ``first`` .. ``end - 1`` of each page in the joined text."""
    ranges: list[tuple[int, int]] = []
    first = 0
    for page in pages:
        end = first + page.count("\n")
        ranges.append((first, end))
        first = end + 1  # the separator line
    return ranges


def _page_groups(
    lines: Lines, page_lines: list[tuple[int, int]], max_tokens: int
) -> list[tuple[int, int]]:
    """Runs of pages ``(first, last)`` that become chunks: one page each,
    except that small pages take in the pages after them while the sum fits."""
    page_tokens = [lines.tokens_in(first, end) for first, end in page_lines]
    groups: list[tuple[int, int]] = []
    page = 0
    while page < len(page_tokens):
        if page_tokens[page] == 0:
            page += 1
            continue
        last, tokens = page, page_tokens[page]
        while (
            tokens < max_tokens * _SMALL_PAGE_SHARE
            and last + 1 < len(page_tokens)
            and tokens + page_tokens[last + 1] <= max_tokens
        ):
            last += 1
            tokens += page_tokens[last]
        while page_tokens[last] == 0:  # end on a page with text
            last -= 1
        groups.append((page, last))
        page = last + 1
    return groups

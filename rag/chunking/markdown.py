"""Markdown chunking (.md, .mdx), and the section chunker the other
structured documents reuse (reST, AsciiDoc, HTML, notebooks, .docx): they
build their sections with ``SectionBuilder`` and call ``chunk_sections``.

A document becomes sections, one per header (ATX ``#`` or setext underline),
plus the text before the first header (headerPath ""). A section is a list of
blocks: lines, its header, fenced code (never split while it fits) and tables
(split by rows, header and delimiter rows repeated). A section that fits the
bound is one chunk; a longer one is packed block by block with overlap, and
every piece but the first starts with the section's header line again (its
startLine/endLine still name only its own lines, as do a split fence's
re-opened and re-closed fence lines).

A header whose section holds nothing but blank lines is folded into the next
section when that one is nested under it, so "# API" directly followed by
"## Auth" gives one chunk, not a chunk with a lone header.

Consecutive sections that fit the bound together are merged into one chunk,
as the code chunker merges small definitions: a short section alone is too
little text for the model or BM25 to place (measured: eval/README.md).
The merged chunk's headerPath is the deepest path its sections share (the
text before the first header, under none, does not count), and its
``sections`` metadata lists each one's headerPath and lines, so a section can
still be read back by its own path.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from rag.chunking.lines import Lines, line_spans, pack
from rag.chunking.model import Chunk, count_tokens

# "literal": lines kept together while they fit and cut at lines otherwise
# (a reST directive or literal block, an AsciiDoc delimited block).
BlockKind = Literal["line", "header", "fence", "table", "literal"]

_ATX_HEADER = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?\s*")
# Fences inside list items are indented, so any indentation opens one.
_FENCE_OPEN = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")
_SETEXT_UNDERLINE = re.compile(r" {0,3}(?:=+|-+)\s*")
_TABLE_DELIMITER_CELL = re.compile(r"\s*:?-+:?\s*")
# Lines that cannot be the text of a setext header: list items, quotes, code.
_NOT_SETEXT_TEXT = re.compile(r"(?:[ \t]*(?:[-*+>]|\d{1,9}[.)])(?:\s|$))| {4}|\t")
# A header line repeated at the top of later pieces may take at most this
# share of the bound; a longer one is chunked like any other line.
_MAX_REPEATED_HEADER_SHARE = 1 / 2
HEADER_SEPARATOR = " > "


@dataclass(frozen=True, slots=True)
class Block:
    """Lines ``first`` .. ``end - 1`` that are packed as one unit."""

    first: int
    end: int
    kind: BlockKind = "line"


@dataclass(slots=True)
class Section:
    """Blocks under one header; ``header`` indexes the header block (None for
    the text before the first header)."""

    blocks: list[Block] = field(default_factory=list)
    header: int | None = None
    level: int = 0
    path: str = ""
    # The open headers the path joins, as (level, "## Title"): a title may hold " > ".
    trail: tuple[tuple[int, str], ...] = ()
    # A merged section's parts: (headerPath, first line, end line), 0-based.
    parts: list[tuple[str, int, int]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Piece:
    content: str
    first_line: int
    last_line: int


class SectionBuilder:
    """Collects blocks into sections, keeping the stack of open headers that
    gives each section its headerPath (``# API > ## Auth > ### JWT``)."""

    def __init__(self) -> None:
        self._sections = [Section()]
        self._open_headers: list[tuple[int, str]] = []

    def add(self, block: Block) -> None:
        self._sections[-1].blocks.append(block)

    def add_header(self, block: Block, level: int, title: str) -> None:
        while self._open_headers and self._open_headers[-1][0] >= level:
            self._open_headers.pop()
        self._open_headers.append((level, f"{'#' * level} {title}".rstrip()))
        path = HEADER_SEPARATOR.join(name for _, name in self._open_headers)
        self._sections.append(Section([block], 0, level, path, tuple(self._open_headers)))

    def sections(self, lines: Lines) -> list[Section]:
        """The sections, empty parents folded into their first child."""
        folded: list[Section] = []
        carried: list[Block] = []
        for index, section in enumerate(self._sections):
            if carried and section.header is not None:  # a section after a header has one
                blocks, header = carried + section.blocks, section.header + len(carried)
                section = Section(blocks, header, section.level, section.path, section.trail)
                carried = []
            following = self._sections[index + 1] if index + 1 < len(self._sections) else None
            if (
                section.header is not None
                and following is not None
                and following.level > section.level
                and _body_is_blank(lines, section)
            ):
                carried = section.blocks
            else:
                folded.append(section)
        return folded


def _body_is_blank(lines: Lines, section: Section) -> bool:
    assert section.header is not None
    header = section.blocks[section.header]
    return lines.tokens_in(header.end, section.blocks[-1].end) == 0


def chunk_markdown(text: str, path: str, *, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of a Markdown document, each with headerPath and headerLevel."""
    return chunk_by_sections(
        text, path, parse_markdown, "markdown", "markdown", max_tokens=max_tokens, overlap=overlap
    )


def chunk_by_sections(
    text: str,
    path: str,
    parse: Callable[[Lines], list[Section]],
    source_type: str,
    language: str,
    *,
    max_tokens: int,
    overlap: int,
) -> list[Chunk]:
    """Chunks of a document chunked as it is stored, at the sections ``parse`` finds."""
    lines = Lines(text)
    return chunk_sections(
        lines,
        parse(lines),
        path,
        source_type=source_type,
        language=language,
        max_tokens=max_tokens,
        overlap=overlap,
    )


def markdown_sections(text: str) -> list[tuple[str, int, int]]:
    """(headerPath, startLine, endLine) of each section of a Markdown text that
    holds any text, its blank lines at either end left out: the spans of its
    chunks were none split or merged."""
    lines = Lines(text)
    spans = []
    for section in parse_markdown(lines):
        if section.blocks:
            first, end = lines.trimmed(section.blocks[0].first, section.blocks[-1].end)
            if first < end:
                spans.append((section.path, first + 1, end))
    return spans


def parse_markdown(lines: Lines) -> list[Section]:
    """The sections of a Markdown document, in one pass over its lines."""
    strings = lines.strings
    builder = SectionBuilder()
    index = _front_matter_end(strings)
    for front_matter_line in range(index):
        builder.add(Block(front_matter_line, front_matter_line + 1))
    add_markdown_blocks(builder, strings, index, len(strings))
    return builder.sections(lines)


def add_markdown_blocks(builder: SectionBuilder, strings: list[str], first: int, end: int) -> None:
    """Add the blocks and headers of Markdown lines ``first`` .. ``end - 1`` to
    ``builder``; no block reaches past ``end`` (a notebook's cell)."""
    index = first
    while index < end:
        line = strings[index]
        marker = line.lstrip()[:1]
        if marker in ("`", "~") and (fence := _fence_marker(line)):
            block = Block(index, _fence_end(strings, index, end, fence), "fence")
            builder.add(block)
        elif marker == "#" and (atx := _ATX_HEADER.fullmatch(line)):
            block = Block(index, index + 1, "header")
            builder.add_header(block, len(atx.group(1)), (atx.group(2) or "").strip())
        elif index + 1 < end and _is_setext_header(strings, index):
            block = Block(index, index + 2, "header")
            level = 1 if strings[index + 1].lstrip()[0] == "=" else 2
            builder.add_header(block, level, line.strip())
        elif "|" in line and index + 1 < end and _is_table_delimiter(strings[index + 1]):
            block = Block(index, _table_end(strings, index + 2, end), "table")
            builder.add(block)
        else:
            block = Block(index, index + 1)
            builder.add(block)
        index = block.end


def _front_matter_end(strings: list[str]) -> int:
    """The line after a YAML front matter block (``---`` … ``---``), or 0."""
    if not strings or strings[0].rstrip() != "---":
        return 0
    for index in range(1, len(strings)):
        if strings[index].rstrip() in ("---", "..."):
            return index + 1
    return 0


def _fence_marker(line: str) -> str | None:
    """The run of backticks or tildes that opens a code fence on ``line``, or
    None (```` ```a``` ```` is inline code: no backtick after a backtick fence)."""
    match = _FENCE_OPEN.fullmatch(line)
    if match is None or (match.group(1)[0] == "`" and "`" in match.group(2)):
        return None
    return match.group(1)


def _fence_end(strings: list[str], first: int, end: int, marker: str) -> int:
    """The line after the fence opened at ``first`` closes (``end`` when it
    never does, as CommonMark says)."""
    for index in range(first + 1, end):
        if _closes_fence(strings[index], marker):
            return index + 1
    return end


def _closes_fence(line: str, marker: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(marker) and not stripped.strip(marker[0])


def _is_setext_header(strings: list[str], index: int) -> bool:
    if index + 1 >= len(strings) or strings[index + 1].lstrip()[:1] not in ("=", "-"):
        return False
    line = strings[index]
    return (
        _SETEXT_UNDERLINE.fullmatch(strings[index + 1]) is not None
        and line.strip() != ""
        and _NOT_SETEXT_TEXT.match(line) is None
    )


def _is_table_delimiter(line: str) -> bool:
    """A GFM delimiter row such as ``| --- | :-: |`` (one pipe at least)."""
    if "|" not in line:
        return False
    cells = line.strip().strip("|").split("|")
    return all(_TABLE_DELIMITER_CELL.fullmatch(cell) for cell in cells)


def _table_end(strings: list[str], index: int, end: int) -> int:
    while index < end and "|" in strings[index] and not strings[index].isspace():
        index += 1
    return index


def chunk_sections(
    lines: Lines,
    sections: list[Section],
    path: str,
    *,
    source_type: str,
    language: str,
    max_tokens: int,
    overlap: int,
) -> list[Chunk]:
    """One chunk per run of sections that fit ``max_tokens`` together, several
    per longer section."""
    chunks: list[Chunk] = []
    for section in merge_small_sections(lines, sections, max_tokens):
        metadata: dict[str, Any] = {"path": path, "sourceType": source_type, "language": language}
        if section.parts:
            metadata["sections"] = [
                {"headerPath": part_path, "startLine": first + 1, "endLine": end}
                for part_path, first, end in section.parts
            ]
        for piece in _section_pieces(lines, section, max_tokens, overlap):
            chunks.append(
                Chunk(
                    piece.content,
                    {
                        **metadata,
                        "startLine": piece.first_line + 1,
                        "endLine": piece.last_line + 1,
                        "headerPath": section.path,
                        "headerLevel": section.level,
                    },
                )
            )
    return chunks


def merge_small_sections(lines: Lines, sections: list[Section], max_tokens: int) -> list[Section]:
    """Each run of consecutive sections whose lines together hold at most
    ``max_tokens`` tokens as one section; a longer section stays alone."""
    merged: list[Section] = []
    run: list[Section] = []
    for section in sections:
        if not section.blocks:
            continue
        if run and lines.tokens_in(run[0].blocks[0].first, section.blocks[-1].end) <= max_tokens:
            run.append(section)
            continue
        if run:
            merged.append(_joined(lines, run))
        run = [section]
    if run:
        merged.append(_joined(lines, run))
    return merged


def _joined(lines: Lines, run: list[Section]) -> Section:
    if len(run) == 1:
        return run[0]
    parts, trails = [], []
    for section in run:
        first, end = lines.trimmed(section.blocks[0].first, section.blocks[-1].end)
        if first < end:
            parts.append((section.path, first, end))
            if section.trail:  # (the text before the first header sits under none)
                trails.append(section.trail)
    shared = 0
    while trails and all(len(t) > shared and t[shared] == trails[0][shared] for t in trails):
        shared += 1
    common = trails[0][:shared] if trails else ()
    blocks = [block for section in run for block in section.blocks]
    return Section(blocks, None, common[-1][0] if common else 0,
                   HEADER_SEPARATOR.join(name for _, name in common), common, parts)


def _section_pieces(
    lines: Lines, section: Section, max_tokens: int, overlap: int
) -> list[_Piece]:
    blocks = section.blocks
    if not blocks:
        return []
    first, end = lines.trimmed(blocks[0].first, blocks[-1].end)
    total = lines.tokens_in(first, end)
    if total == 0:
        return []
    if total <= max_tokens:
        return [_Piece(lines.slice(first, end), first, end - 1)]
    header_text, budget = _repeated_header(lines, section, max_tokens)
    unit_tokens = [lines.tokens_in(block.first, block.end) for block in blocks]
    windows = pack(unit_tokens, budget, overlap)
    # Headers alone (the section's, after its folded empty parents'): the next piece repeats the
    # section's header anyway, and the parents are in its headerPath: no chunk of headings alone.
    header_alone = (section.header is not None and len(windows) > 1 and windows[0][1] == section.header + 1
                    and all(blocks[i].kind == "header" or not unit_tokens[i] for i in range(*windows[0])))
    if header_text and header_alone:
        del windows[0]
    pieces: list[_Piece] = []
    for window_first, window_end in windows:
        if window_end - window_first == 1 and unit_tokens[window_first] > budget:
            body = _split_block(lines, blocks[window_first], budget, overlap)
        else:
            start, stop = blocks[window_first].first, blocks[window_end - 1].end
            body = [_Piece(lines.slice(start, stop), start, stop - 1)]
        after_header = section.header is not None and window_first > section.header
        lead = header_text if after_header else ""
        pieces.extend(replace(piece, content=lead + piece.content) for piece in body)
    if header_text and header_alone:
        pieces[0] = replace(pieces[0], first_line=first)
    return pieces


def _repeated_header(lines: Lines, section: Section, max_tokens: int) -> tuple[str, int]:
    """The header text later pieces start with, and the budget left beside it."""
    if section.header is None:
        return "", max_tokens
    header = section.blocks[section.header]
    tokens = lines.tokens_in(header.first, header.end)
    if tokens > max_tokens * _MAX_REPEATED_HEADER_SHARE:
        return "", max_tokens
    return _with_newline(lines.slice(header.first, header.end)), max_tokens - tokens


def _split_block(lines: Lines, block: Block, budget: int, overlap: int) -> list[_Piece]:
    """Pieces of one block that alone is over ``budget``."""
    if block.kind == "fence":
        return _split_fence(lines, block, budget, overlap)
    if block.kind == "table":
        return _split_table(lines, block, budget)
    return _line_pieces(lines, block.first, block.end, budget, overlap)


def _line_pieces(lines: Lines, first: int, end: int, budget: int, overlap: int) -> list[_Piece]:
    return [
        _Piece(lines.text[span.start : span.end], span.first_line, span.last_line)
        for span in line_spans(lines, first, end, budget, overlap)
    ]


def _split_fence(lines: Lines, block: Block, budget: int, overlap: int) -> list[_Piece]:
    """Cut a code fence at lines, each piece re-opened and closed so it stays code."""
    marker = _fence_marker(lines.strings[block.first])
    assert marker is not None
    closed = block.end - block.first >= 2 and _closes_fence(lines.strings[block.end - 1], marker)
    inner_end = block.end - 1 if closed else block.end
    opener = _with_newline(lines.slice(block.first, block.first + 1))
    closer = _with_newline(lines.slice(inner_end, block.end) if closed else _indent(opener) + marker)
    inner_budget = budget - lines.tokens[block.first] - count_tokens(closer)
    pieces: list[_Piece] = []
    if inner_budget >= 1:
        pieces = [
            replace(piece, content=opener + _with_newline(piece.content) + closer)
            for piece in _line_pieces(lines, block.first + 1, inner_end, inner_budget, overlap)
        ]
    if not pieces:
        return _line_pieces(lines, block.first, block.end, budget, overlap)
    pieces[0] = replace(pieces[0], first_line=block.first)
    pieces[-1] = replace(pieces[-1], last_line=block.end - 1)
    return pieces


def _split_table(lines: Lines, block: Block, budget: int) -> list[_Piece]:
    """Cut a table between rows, each piece starting with the header and
    delimiter rows. Rows are independent, so pieces do not overlap."""
    rows = block.first + 2
    head_tokens = lines.tokens_in(block.first, rows)
    if head_tokens > budget * _MAX_REPEATED_HEADER_SHARE or rows >= block.end:
        return _line_pieces(lines, block.first, block.end, budget, 0)
    head = lines.slice(block.first, rows)
    pieces = [
        replace(piece, content=head + piece.content)
        for piece in _line_pieces(lines, rows, block.end, budget - head_tokens, 0)
    ]
    pieces[0] = replace(pieces[0], first_line=block.first)
    return pieces


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"

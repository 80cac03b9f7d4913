"""AsciiDoc chunking (.adoc, .asciidoc), by section titles, through the
Markdown section chunker.

Titles are ``= Document``, ``== Section`` … ``====== Level 5`` (or ``#`` …
Markdown-style), outside delimited blocks; headerPath names them
Markdown-style by their number of markers (``# Guide > ## Install``). A
delimited block (``----`` listing, ``....`` literal, ``====`` example,
``****`` sidebar, ``____`` quote, ``++++`` passthrough, ``////`` comment,
``|===`` table, ``--`` open block, ```` ``` ```` fence) runs to the same
delimiter line and is one block with the attribute (``[source,python]``) and
title (``.Example``) lines just above it: never split while it fits. The
legacy two-line (underlined) titles are not recognised.
"""

import re

from rag.chunking.lines import Lines
from rag.chunking.markdown import Block, Section, SectionBuilder, chunk_by_sections
from rag.chunking.model import Chunk

_TITLE = re.compile(r"(={1,6}|#{1,6})[ \t]+(\S.*?)(?:[ \t]+\1)?\s*")
_DELIMITER = re.compile(
    r"(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|[|,:!]={3,}|--)\s*|(`{3,}).*"
)
# Lines that belong to the block below them: [attributes] and .Block titles.
_BLOCK_PREAMBLE = re.compile(r"\[[^\]]*\]\s*|\.[^.\s].*")


def chunk_asciidoc(text: str, path: str, *, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of an AsciiDoc document, each with headerPath and headerLevel."""
    return chunk_by_sections(
        text, path, parse_asciidoc, "text", "asciidoc", max_tokens=max_tokens, overlap=overlap
    )


def parse_asciidoc(lines: Lines) -> list[Section]:
    """The sections of an AsciiDoc document, in one pass over its lines."""
    strings = lines.strings
    builder = SectionBuilder()
    index = 0
    while index < len(strings):
        line = strings[index]
        title = _TITLE.fullmatch(line)
        if title is not None:
            block = Block(index, index + 1, "header")
            builder.add_header(block, len(title.group(1)), title.group(2).strip())
        else:
            end = _delimited_block_end(strings, index)
            block = Block(index, end, "literal" if end > index + 1 else "line")
            builder.add(block)
        index = block.end
    return builder.sections(lines)


def _delimited_block_end(strings: list[str], index: int) -> int:
    """The line after the delimited block that starts at ``index`` (after any
    attribute and title lines), or ``index + 1`` when none does."""
    opening = index
    while opening < len(strings) and _BLOCK_PREAMBLE.fullmatch(strings[opening]):
        opening += 1
    if opening == len(strings):
        return index + 1
    match = _DELIMITER.fullmatch(strings[opening])
    if match is None:
        return index + 1
    delimiter = match.group(1) or match.group(2)
    for probe in range(opening + 1, len(strings)):
        if strings[probe].rstrip() == delimiter:
            return probe + 1
    return len(strings)  # never closed: the block runs to the end, as Asciidoctor reads it

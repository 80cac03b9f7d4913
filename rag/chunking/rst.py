"""reStructuredText chunking (.rst, and .txt files that read as reST), by
section titles, through the Markdown section chunker.

A title is a non-blank line under a blank line (or at the top) with an
underline, and optionally an overline, of one punctuation character repeated
at least as long as the title and followed by a blank line or the end. Levels
follow the order in which each style (character, with or without overline)
first appears, as docutils numbers them; headerPath names them Markdown-style
(``# Guide > ## Install``). A transition (a lone line of punctuation) or a
table border (several runs of ``=`` with spaces between) is not a title.

Explicit markup (``.. code-block:: python``, ``.. note::``, comments,
targets) with its indented body, and a paragraph ending in ``::`` with its
indented literal block, are each one block: never split while they fit.
"""

import re

from rag.chunking.lines import Lines
from rag.chunking.markdown import Block, Section, SectionBuilder, chunk_by_sections
from rag.chunking.model import Chunk

# One punctuation character (any of docutils' adornment characters) repeated.
_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+\s*")
_EXPLICIT_MARKUP = re.compile(r"([ \t]*)\.\.(?:\s|$)")
_ADORNMENT_CHARS = frozenset(r"""!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~""")
_RST_MARKUP = re.compile(
    r"^[ \t]*\.\. [\w.:+-]+::|\S::[ \t\r]*$|:[\w.+-]+:`[^`\n]+`|``[^`\n]+``|`[^`\n]+`_",
    re.MULTILINE,
)

Style = tuple[str, bool]  # the adornment character, whether it has an overline


def chunk_rst(text: str, path: str, *, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of a reST document, each with headerPath and headerLevel."""
    return chunk_by_sections(
        text, path, parse_rst, "text", "rst", max_tokens=max_tokens, overlap=overlap
    )


def looks_like_rst(text: str) -> bool:
    """Whether a .txt file is reST: it has a section title, and a second one
    or some reST markup (a directive, a ``::`` literal block, a role, a
    ``literal`` or a `link`_)."""
    strings = text.split("\n")
    titles = 0
    for index in range(len(strings)):
        if _title_at(strings, index) is not None:
            titles += 1
            if titles == 2:
                return True
    return titles == 1 and _RST_MARKUP.search(text) is not None


def parse_rst(lines: Lines) -> list[Section]:
    """The sections of a reST document, in one pass over its lines."""
    strings = lines.strings
    builder = SectionBuilder()
    styles: list[Style] = []
    index = 0
    while index < len(strings):
        title = _title_at(strings, index)
        if title is not None:
            style, title_line, end = title
            if style not in styles:
                styles.append(style)
            builder.add_header(
                Block(index, end, "header"), styles.index(style) + 1, strings[title_line].strip()
            )
            index = end
            continue
        end = _indented_block_end(strings, index)
        builder.add(Block(index, end, "literal" if end > index + 1 else "line"))
        index = end
    return builder.sections(lines)


def _title_at(strings: list[str], index: int) -> tuple[Style, int, int] | None:
    """(style, the title's line, the line after it) when a title starts at ``index``."""
    line = strings[index]
    following = strings[index + 1][:1] if index + 1 < len(strings) else ""
    if line[:1] not in _ADORNMENT_CHARS and following not in _ADORNMENT_CHARS:
        return None  # neither an overline here nor an underline next: the common case, fast
    if not line.strip() or (index > 0 and strings[index - 1].strip()):
        return None
    over = _ADORNMENT.fullmatch(line)
    if over is not None:  # an overline: the title is the next line, then the underline
        if index + 2 >= len(strings) or not strings[index + 1].strip():
            return None
        under = _ADORNMENT.fullmatch(strings[index + 2])
        text = strings[index + 1].strip()
        if (
            under is None
            or under.group(1) != over.group(1)
            or _ADORNMENT.fullmatch(strings[index + 1].strip())
            or min(len(line.rstrip()), len(strings[index + 2].rstrip())) < len(text)
        ):
            return None
        end = index + 3
        style: Style = (over.group(1), True)
        title_line = index + 1
    else:
        if index + 1 >= len(strings) or line[0] in " \t":
            return None
        under = _ADORNMENT.fullmatch(strings[index + 1])
        if under is None or len(strings[index + 1].rstrip()) < len(line.rstrip()):
            return None
        end = index + 2
        style = (under.group(1), False)
        title_line = index
    if end < len(strings) and strings[end].strip():
        return None  # a table row or a paragraph follows: not a title
    return style, title_line, end


def _indented_block_end(strings: list[str], index: int) -> int:
    """The line after the block starting at ``index``: explicit markup or a
    ``::`` paragraph line with the indented lines that follow it (blank lines
    between them included, trailing ones not); else ``index + 1``."""
    line = strings[index]
    markup = _EXPLICIT_MARKUP.match(line)
    if markup is not None:
        indent = len(markup.group(1))
    elif line.rstrip().endswith("::"):
        indent = len(line) - len(line.lstrip())
    else:
        return index + 1
    end = index + 1
    probe = index + 1
    while probe < len(strings):
        current = strings[probe]
        if current.strip():
            if len(current) - len(current.lstrip()) <= indent:
                break
            end = probe + 1
        probe += 1
    return end

"""HTML chunking (.html, .htm): the text of a page by its headings, through
the Markdown section chunker.

``html.parser`` reads the page (entities decoded, broken markup tolerated).
Scripts, styles, navigation (``nav``, ``role="navigation"``), buttons,
templates, SVG and the page title are dropped;
``h1``..``h6`` become ``#`` header lines, block elements (paragraphs, list
items, table rows, …) lines of their text with whitespace collapsed, and
``pre`` a code fence keeping its lines. Chunk contents are that rendered text;
startLine/endLine are lines of the HTML file.
"""

import re
from html.parser import HTMLParser

from rag.chunking.markdown import Block
from rag.chunking.model import Chunk
from rag.chunking.rendered import Rendering
from rag.errors import ChunkingError

_DROPPED = frozenset(
    {
        "button", "canvas", "iframe", "math", "nav", "noscript", "script", "select", "style",
        "svg", "template", "title",
    }
)
# Sidebars and search boxes marked up as <div role="navigation">, as Sphinx does.
_DROPPED_ROLES = frozenset({"navigation", "search"})
# Elements without an end tag: they never start a dropped run.
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_BACKTICKS = re.compile("`+")
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
# Elements whose start and end break the line of text.
_BREAKING = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "div",
        "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "li",
        "main", "ol", "p", "section", "summary", "table", "tbody", "tfoot", "thead", "tr", "ul",
    }
)
# Elements whose end is also a paragraph break (where chunks prefer to end).
_PARAGRAPH_ENDS = frozenset(
    {
        "article", "aside", "blockquote", "details", "div", "dl", "figure", "footer", "header",
        "hr", "main", "ol", "p", "section", "table", "ul",
    }
)


def chunk_html(text: str, path: str, *, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of an HTML page's text, each with headerPath and headerLevel."""
    parser = _PageText()
    try:
        parser.feed(text)
        parser.close()
    except Exception as error:  # html.parser is lenient, but one page must not stop a run
        raise ChunkingError(f"unreadable HTML: {type(error).__name__}: {error}") from error
    parser.finish()
    return parser.rendering.chunks(
        path, source_type="text", language="html", max_tokens=max_tokens, overlap=overlap
    )


class _PageText(HTMLParser):
    """Renders the page's text into a ``Rendering`` while it is parsed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rendering = Rendering()
        self._dropped: tuple[str, int] | None = None  # the dropped element open, and its nesting
        self._words: list[str] = []
        self._span = (0, 0)  # original lines of the words collected
        self._heading: tuple[int, int] | None = None  # (level, line) of an open h1..h6
        self._pre: list[tuple[str, int]] | None = None  # lines of an open <pre>, with origins
        self._pre_depth = 0
        self._list_item = False
        self._glued = False  # the last text ended inside a word: "foo<b>bar</b>" is one word

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropped is not None:
            dropped, depth = self._dropped
            self._dropped = (dropped, depth + 1) if tag == dropped else self._dropped
            return
        if tag not in _VOID and (tag in _DROPPED or _DROPPED_ROLES.intersection(
            value for name, value in attrs if name == "role" and value
        )):
            self._dropped = (tag, 1)
            return
        line = self.getpos()[0]
        if tag in ("td", "th"):
            self._glued = False  # a row is one line, its cells apart
        if tag == "pre":
            self._pre_depth += 1
            if self._pre is None:
                self._flush()
                self._pre = [("", line)]
        elif self._pre is not None:
            return
        elif tag in _HEADINGS:
            self._flush()
            self._heading = (_HEADINGS[tag], line)
        elif tag in _BREAKING:
            self._flush()
            self._list_item = self._list_item or tag == "li"

    def handle_endtag(self, tag: str) -> None:
        if self._dropped is not None:
            dropped, depth = self._dropped
            if tag == dropped:
                self._dropped = (dropped, depth - 1) if depth > 1 else None
            return
        if tag == "pre" and self._pre is not None:
            self._pre_depth -= 1
            if self._pre_depth == 0:
                self._end_pre(self.getpos()[0])
        elif self._pre is not None:
            return
        elif tag in _HEADINGS and self._heading is not None:
            level, first = self._heading
            title = " ".join(self._words)
            if title:
                self.rendering.add_header(level, title, first, self.getpos()[0])
            self._words = []
            self._heading = None
        elif tag in _BREAKING:
            self._flush()
            self._list_item = False
            if tag in _PARAGRAPH_ENDS:
                self.rendering.add_blank()

    def handle_data(self, data: str) -> None:
        if self._dropped is not None:
            return
        line = self.getpos()[0]
        if self._pre is not None:
            for number, part in enumerate(data.split("\n")):
                if number:
                    self._pre.append(("", line + number))
                text, origin = self._pre[-1]
                self._pre[-1] = (text + part, origin)
            return
        words = data.split()
        glue, self._glued = self._glued, bool(words) and not data[-1].isspace()
        if not words:
            return
        if glue and not data[0].isspace() and self._words:
            self._words[-1] += words.pop(0)
            if not words:
                return
        first = line + data[: len(data) - len(data.lstrip())].count("\n")
        last = line + data[: len(data.rstrip())].count("\n")
        self._span = (first, last) if not self._words else (self._span[0], last)
        if self._list_item and not self._words and self._heading is None:
            words.insert(0, "-")  # the first line of a list item
            self._list_item = False
        self._words.extend(words)

    def finish(self) -> None:
        """Render what an unclosed element left open at the end of the page."""
        if self._pre is not None:
            self._end_pre(self._pre[-1][1])
        if self._heading is not None:
            self._heading = None  # its words become a line of text
        self._flush()

    def _flush(self) -> None:
        self._glued = False
        if self._words and self._heading is None:
            self.rendering.add_line(" ".join(self._words), *self._span)
            self._words = []

    def _end_pre(self, closing_line: int) -> None:
        pre_lines, self._pre, self._pre_depth = self._pre or [], None, 0
        if pre_lines and not pre_lines[0][0].strip():
            del pre_lines[0]  # the newline right after <pre> is not content
        while pre_lines and not pre_lines[-1][0].strip():
            pre_lines.pop()
        if not pre_lines:
            return
        longest = max(_backtick_run(text) for text, _ in pre_lines)
        fence = "`" * max(3, longest + 1)
        first = self.rendering.append(fence, pre_lines[0][1], pre_lines[0][1])
        for text, origin in pre_lines:
            self.rendering.append(text.rstrip(), origin, origin)
        self.rendering.append(fence, closing_line, closing_line)
        self.rendering.sections.add(Block(first, first + len(pre_lines) + 2, "fence"))
        self.rendering.add_blank()


def _backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)

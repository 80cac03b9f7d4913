"""Confluence storage format (the XHTML a page body is kept in) → Markdown.

``storage_to_markdown`` reads the body with ``html.parser`` (as the HTML
chunker does) into a small tree, then writes Markdown:

- headings under the page title's ``#``: the body's highest level becomes ``##``, the others
  keep their distance from it (at most ``######``);
- paragraphs, ``br``, ``hr``, block quotes, bold/italic/code/strike-through inline;
- lists (``ul``/``ol``, nested), task lists (``- [ ]``/``- [x]``);
- tables as pipe tables (the first row is the header; a cell's blocks joined by ``<br>``);
- links: ``a href`` as Markdown links; ``ac:link`` to a page (by title, to its web address:
  the listing's when it holds the page, else ``/display/SPACE/Title``) and to an attachment
  (``/download/attachments/PAGE/NAME``) as Markdown links when ``Links`` says where the page
  lives, to a user or a space by name;
- the ``code`` and ``noformat`` macros as fenced code with their ``language``;
- the ``info``, ``note``, ``warning``, ``tip`` and ``panel`` macros as quotes headed by their
  kind (and title); the ``status`` macro as its title and the ``jira`` macro as its issue key
  (inline, as a reader sees them); any other macro with a rich-text body as that body, and one
  with no text (``toc``, ``children``, a Jira issue list…) dropped;
- images (``ac:image``) by file name: ``![diagram.png](URL)`` (URL as for attachments).

CDATA sections (the code macros' bodies) are turned into escaped text before parsing,
since ``html.parser`` reads them differently across Python versions. The tags of elements
nested deeper than ``MAX_DEPTH`` (10,000 ``<div>``s in a hostile body) are dropped, their
text kept in the deepest element: the writers' recursion stays far from Python's limit.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import quote, quote_plus

from rag.errors import ChunkingError

_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
_VOID = frozenset({"br", "hr", "img", "col", "wbr", "input", "meta", "link"})
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_INLINE_MARKS = {"strong": "**", "b": "**", "em": "*", "i": "*", "del": "~~", "s": "~~"}
_PANELS = {"info": "Info", "note": "Note", "warning": "Warning", "tip": "Tip", "panel": "Panel"}
_CODE_MACROS = frozenset({"code", "noformat"})
_INLINE_MACROS = frozenset({"status", "jira"})  # shown inside a line of text
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0]+")
# A ``br`` while inline text is collapsed: whitespace (newlines of the XHTML source included)
# becomes one space, this becomes a line break once the blocks are written.
_BREAK = "\u2028"
_AROUND_BREAK = re.compile(" ?\u2028 ?")
_BACKTICKS = re.compile("`+")
_TEXTLESS = frozenset({"ul", "ol", "table", "tbody", "thead", "tr", "colgroup", "ac:task-list"})
MAX_DEPTH = 48  # open elements kept nested (a list item costs the writers about four frames a level)


@dataclass(frozen=True)
class Links:
    """Where a page's links lead: its site, space and id, and the web address of each listed
    page by (space key, title)."""

    base_url: str  # e.g. https://acme.atlassian.net/wiki
    space: str  # the space a link naming none is in
    page_id: str  # the page whose attachments a link names
    pages: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def page(self, title: str, space: str = "") -> str:
        space = space or self.space
        known = self.pages.get((space, title))
        return known or f"{self.base_url}/display/{quote(space)}/{quote_plus(title)}"

    def attachment(self, filename: str) -> str:
        return f"{self.base_url}/download/attachments/{quote(self.page_id)}/{quote(filename)}"


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[_Node | str] = field(default_factory=list)

    def elements(self, tag: str) -> list[_Node]:
        return [c for c in self.children if isinstance(c, _Node) and c.tag == tag]

    def first(self, tag: str) -> _Node | None:
        """The first descendant element named ``tag`` (depth first)."""
        for child in self.children:
            if isinstance(child, _Node):
                if child.tag == tag:
                    return child
                found = child.first(tag)
                if found is not None:
                    return found
        return None

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("root")
        self._open = [self.root]
        self._dropped = 0  # elements opened beyond MAX_DEPTH and not closed yet

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self._open) >= MAX_DEPTH:
            self._dropped += tag not in _VOID
            return
        node = _Node(tag, {k: v or "" for k, v in attrs})
        self._open[-1].children.append(node)
        if tag not in _VOID:
            self._open.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if len(self._open) < MAX_DEPTH:
            self._open[-1].children.append(_Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if self._dropped:
            self._dropped -= 1
            return
        for depth in range(len(self._open) - 1, 0, -1):  # an unclosed element ends with its parent
            if self._open[depth].tag == tag:
                del self._open[depth:]
                return

    def handle_data(self, data: str) -> None:
        holder = self._open[-1]
        if self._dropped:  # within dropped tags: in the deepest element that shows text
            holder = next(n for n in reversed(self._open) if n.tag not in _TEXTLESS)
        holder.children.append(data)


_LINKS: ContextVar[Links | None] = ContextVar("links", default=None)  # the page being converted


def storage_to_markdown(storage: str, links: Links | None = None) -> str:
    """The Markdown of a page body in storage format (ChunkingError if it cannot be read);
    ``links`` None: links to pages and attachments by name only."""
    token = _LINKS.set(links)
    try:
        return _markdown(storage)
    finally:
        _LINKS.reset(token)


def _markdown(storage: str) -> str:
    builder = _TreeBuilder()
    try:
        builder.feed(_CDATA.sub(lambda m: html.escape(m.group(1), quote=False), storage))
        builder.close()
    except Exception as error:  # html.parser is lenient, but one page must not stop a run
        raise ChunkingError(f"unreadable page body: {type(error).__name__}: {error}") from error
    headings = list(_headings(builder.root))
    top = min((_HEADINGS[h.tag] for h in headings), default=1)
    for heading in headings:
        heading.tag = f"h{min(_HEADINGS[heading.tag] - top + 2, 6)}"
    return _breaks(_join_blocks(_blocks(builder.root))) + "\n"


def _headings(node: _Node) -> Iterator[_Node]:
    for child in node.children:
        if isinstance(child, _Node):
            if child.tag in _HEADINGS:
                yield child
            yield from _headings(child)


def _join_blocks(blocks: list[str]) -> str:
    return "\n\n".join(b for b in blocks if b.strip())


def _blocks(node: _Node) -> list[str]:
    """The Markdown blocks of ``node``'s children: block elements each give their own, runs of
    inline content between them make a paragraph."""
    blocks: list[str] = []
    inline: list[str] = []

    def flush() -> None:
        text = _collapse("".join(inline))
        if text:
            blocks.append(text)
        inline.clear()

    for child in node.children:
        if isinstance(child, str):
            inline.append(child)
            continue
        rendered = _block(child)
        if rendered is None:
            inline.append(_inline(child))
        else:
            flush()
            blocks.extend(rendered)
    flush()
    return blocks


def _block(node: _Node) -> list[str] | None:
    """``node`` as Markdown blocks, or None when it is inline content."""
    tag = node.tag
    if tag in _HEADINGS:
        level = _HEADINGS[tag]
        title = _collapse(_inline_children(node))
        return [f"{'#' * level} {title}"] if title else []
    if tag in ("p", "div", "section", "ac:layout", "ac:layout-section", "ac:layout-cell",
               "ac:rich-text-body", "tbody", "thead"):
        return _blocks(node)
    if tag in ("ul", "ol"):
        return [_list(node, ordered=tag == "ol")]
    if tag == "ac:task-list":
        return [_task_list(node)]
    if tag == "table":
        return [_table(node)]
    if tag == "pre":
        return [_fence(node.text(), "")]
    if tag == "blockquote":
        return [_quote(_join_blocks(_blocks(node)))]
    if tag == "hr":
        return ["---"]
    if tag == "ac:structured-macro" or tag == "ac:macro":
        return None if _macro_name(node) in _INLINE_MACROS else _macro(node)
    if tag == "ac:image":
        return None
    if tag.startswith("ac:") or tag.startswith("ri:"):
        # Placeholders, emoticons, parameters outside a macro: nothing to read.
        return [] if tag not in ("ac:link", "ac:task-body", "ac:link-body") else None
    return None


def _macro_name(node: _Node) -> str:
    return node.attrs.get("ac:name", "").lower()


def _macro_params(node: _Node) -> dict[str, str]:
    return {p.attrs.get("ac:name", "").lower(): _collapse(p.text()) for p in node.elements("ac:parameter")}


def _inline_macro(node: _Node) -> str:
    """A status lozenge as its title, a Jira issue as its key (a Jira list has no text here)."""
    params = _macro_params(node)
    if _macro_name(node) == "status":
        return params.get("title", "")
    return params.get("key", "")


def _macro(node: _Node) -> list[str]:
    name = _macro_name(node)
    params = _macro_params(node)
    if name in _CODE_MACROS:
        body = node.first("ac:plain-text-body")
        code = body.text() if body is not None else ""
        fence = _fence(code, params.get("language", ""))
        return [f"**{params['title']}**", fence] if params.get("title") else [fence]
    rich = node.first("ac:rich-text-body")
    if name in _PANELS:
        label = _PANELS[name] + (f": {params['title']}" if params.get("title") else "")
        text = _join_blocks(_blocks(rich)) if rich is not None else ""
        return [_quote(f"**{label}**" + (f"\n\n{text}" if text else ""))]
    if rich is not None:
        title = params.get("title")
        inner = _blocks(rich)
        return [f"**{title}**", *inner] if title and inner else inner
    plain = node.first("ac:plain-text-body")
    if plain is not None and plain.text().strip():
        return [_fence(plain.text(), "")]
    return []  # toc, children, a Jira list…: no text of its own


def _inline(node: _Node) -> str:
    tag = node.tag
    if tag == "br":
        return _BREAK
    if tag in _INLINE_MARKS:
        inner = _collapse(_inline_children(node))
        mark = _INLINE_MARKS[tag]
        return f"{mark}{inner}{mark}" if inner else ""
    if tag == "code":
        return _code_span(node.text())
    if tag == "a":
        text = _collapse(_inline_children(node))
        href = node.attrs.get("href", "")
        return f"[{text or href}]({href})" if href else text
    if tag == "ac:link":
        return _link(node)
    if tag == "ac:image":
        name = _resource_name(node)
        return f"![{name}]({_attachment_url(node, name)})" if name else ""
    if tag == "time":
        return node.attrs.get("datetime", "")
    if tag in ("ac:parameter", "ac:placeholder", "ac:emoticon", "script", "style"):
        return ""
    if tag in ("ac:structured-macro", "ac:macro") and _macro_name(node) in _INLINE_MACROS:
        return _inline_macro(node)
    if tag in ("ac:structured-macro", "ac:macro") or _block(node) is not None:
        return " ".join(_blocks(_Node("root", children=[node])))  # a block inside a cell or a link
    return _inline_children(node)


def _inline_children(node: _Node) -> str:
    return "".join(c if isinstance(c, str) else _inline(c) for c in node.children)


def _link(node: _Node) -> str:
    body = node.first("ac:link-body") or node.first("ac:plain-text-link-body")
    text = _collapse(_inline_children(body)) if body is not None else ""
    target = _resource_name(node)
    anchor = node.attrs.get("ac:anchor", "")
    if target is None:
        return text or (f"#{anchor}" if anchor else "")
    shown = text or target
    if node.first("ri:attachment") is not None:
        return f"[{shown}]({_attachment_url(node, target)})"
    page, links = node.first("ri:page"), _LINKS.get()
    if page is not None and links is not None and target:
        url = links.page(target, page.attrs.get("ri:space-key", ""))
        return f"[{shown}]({url}{'#' + quote(anchor) if anchor else ''})"
    return shown


def _attachment_url(node: _Node, filename: str) -> str:
    """Where an attachment of this page is downloaded (its name alone when not known, or when
    it is another page's)."""
    links = _LINKS.get()
    attachment = node.first("ri:attachment")
    if links is None or (attachment is not None and attachment.first("ri:page") is not None):
        return filename
    return links.attachment(filename)


def _resource_name(node: _Node) -> str | None:
    """What an ``ac:link`` or ``ac:image`` points at, by name."""
    for child in node.children:
        if not isinstance(child, _Node):
            continue
        attrs = child.attrs
        if child.tag == "ri:attachment":
            return attrs.get("ri:filename", "")
        if child.tag == "ri:page":
            return attrs.get("ri:content-title", "")
        if child.tag == "ri:blog-post":
            return attrs.get("ri:content-title", "")
        if child.tag == "ri:url":
            return attrs.get("ri:value", "")
        if child.tag == "ri:user":
            who = attrs.get("ri:username") or attrs.get("ri:account-id") or attrs.get("ri:userkey", "")
            return f"@{who}"
        if child.tag == "ri:space":
            return attrs.get("ri:space-key", "")
    return None


def _list(node: _Node, *, ordered: bool) -> str:
    lines: list[str] = []
    for number, item in enumerate(node.elements("li"), 1):
        marker = f"{number}. " if ordered else "- "
        lines.extend(_item(item, marker))
    return "\n".join(lines)


def _item(item: _Node, marker: str) -> list[str]:
    """A list item's lines: its text after the marker, nested blocks indented under it."""
    indent = " " * len(marker)
    text, nested = [], []
    for child in item.children:
        if isinstance(child, _Node) and child.tag in ("ul", "ol", "ac:task-list", "table", "pre",
                                                        "ac:structured-macro"):
            nested.extend(_block(child) or [])
        else:
            text.append(child if isinstance(child, str) else
                        " ".join(_block(child) or []) if child.tag in ("p", "div") else _inline(child))
    lines = [marker + _collapse("".join(text))]
    for block in nested:
        lines.extend(indent + line if line else line for line in _breaks(block).split("\n"))
    return lines


def _task_list(node: _Node) -> str:
    lines = []
    for task in node.elements("ac:task"):
        status = task.first("ac:task-status")
        done = status is not None and status.text().strip() == "complete"
        body = task.first("ac:task-body")
        lines.append(f"- [{'x' if done else ' '}] {_collapse(_inline_children(body)) if body else ''}")
    return "\n".join(lines)


def _table(node: _Node) -> str:
    rows = [row for part in [node, *node.elements("thead"), *node.elements("tbody"), *node.elements("tfoot")]
            for row in part.elements("tr")]
    cells = [[_cell(c) for c in row.children if isinstance(c, _Node) and c.tag in ("th", "td")]
             for row in rows]
    cells = [row for row in cells if row]
    if not cells:
        return ""
    width = max(len(row) for row in cells)
    padded = [row + [""] * (width - len(row)) for row in cells]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * width]
    lines.extend("| " + " | ".join(row) + " |" for row in padded[1:])
    return "\n".join(lines)


def _cell(cell: _Node) -> str:
    blocks = [_breaks(b).replace("\n", "<br>") for b in _blocks(cell)]
    return "<br>".join(blocks).replace("|", "\\|")


def _fence(code: str, language: str) -> str:
    code = code.strip("\n")
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language.strip()}\n{code}\n{fence}"


def _code_span(code: str) -> str:
    code = _collapse(code)
    if not code:
        return ""
    longest = max((len(run) for run in _BACKTICKS.findall(code)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in _breaks(text).split("\n"))


def _collapse(text: str) -> str:
    """Whitespace runs as one space, line breaks (``br``) kept, ends trimmed."""
    return _AROUND_BREAK.sub(_BREAK, _SPACES.sub(" ", text)).strip(" " + _BREAK)


def _breaks(text: str) -> str:
    return text.replace(_BREAK, "\n")

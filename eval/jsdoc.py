"""JSDoc-to-definition cases for TypeScript and JavaScript sets: find, strip, map lines.

``strip_jsdoc`` parses a file with tree-sitter, removes every ``/** ... */``
comment that stands on lines of its own, and returns the stripped text with
the definitions those comments documented: a function, method, class or
variable declaration (``export`` included) that starts on the line right after
the comment. A definition's span runs from its first to its last line in the
stripped text; its query is the comment's first paragraph (the text before the
first blank line or ``@tag``), HTML tags and ``{@link X}`` reduced to words.
Overload signatures (no body) and type-only declarations give no case.
"""

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tree_sitter_language_pack
from common import drop_repeated_queries, fresh_copy, write_cases, write_copy
from tree_sitter import Node

MIN_WORDS, MAX_WORDS = 4, 60
DEFINITIONS = frozenset({
    "function_declaration", "generator_function_declaration", "method_definition", "class_declaration",
    "abstract_class_declaration", "lexical_declaration", "variable_declaration", "public_field_definition",
})

_LINK = re.compile(r"\{@(?:link|linkcode|linkplain)\s+([^}|\s]+)(?:[\s|]+([^}]*))?\}")
_TAG = re.compile(r"<[^>]+>")
_ENTITY = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&#39;": "'", "&nbsp;": " "}


@dataclass(frozen=True)
class Definition:
    name: str
    start: int  # 1-based first line in the stripped text
    end: int
    query: str


def comment_lines(comment: str) -> list[str]:
    """The text lines of a ``/** ... */`` comment without its delimiters and leading ``*``."""
    body = comment.removeprefix("/**").removesuffix("*/")
    return [re.sub(r"^\s*\*? ?", "", line).rstrip() for line in body.split("\n")]


def first_paragraph(comment: str) -> str:
    """The comment's first paragraph as plain words ('' when it opens with a tag)."""
    paragraph = []
    for line in comment_lines(comment):
        if not line.strip():
            if paragraph:
                break
            continue
        if line.lstrip().startswith("@"):
            break
        paragraph.append(line)
    text = _LINK.sub(lambda m: m.group(2) or m.group(1), " ".join(paragraph))
    text = _TAG.sub(" ", text)
    for entity, char in _ENTITY.items():
        text = text.replace(entity, char)
    return " ".join(text.replace("`", "").split())


def usable_query(text: str) -> bool:
    return MIN_WORDS <= len(text.split()) <= MAX_WORDS


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.named_children:
        yield from _walk(child)


def _documented(definition: Node) -> Node | None:
    """The declaration a comment documents (inside ``export``), or None when it is not one."""
    if definition.type == "export_statement":
        inner = definition.child_by_field_name("declaration")
        return inner if inner is not None and inner.type in DEFINITIONS else None
    return definition if definition.type in DEFINITIONS else None


def _name(node: Node) -> str:
    named = node.child_by_field_name("name")
    if named is None:  # a variable declaration: the first declarator's name
        declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
        named = declarator.child_by_field_name("name") if declarator is not None else None
    return named.text.decode() if named is not None and named.text is not None else "?"


def strip_jsdoc(source: str, grammar: str) -> tuple[str, list[Definition]]:
    """``source`` without its JSDoc comments, and the documented definitions that can be cases."""
    parser = tree_sitter_language_pack.get_parser(grammar)  # type: ignore[arg-type]
    data = source.encode()
    tree = parser.parse(data)
    lines = source.split("\n")
    raw = data.split(b"\n")
    removed: set[int] = set()  # 0-based line numbers
    candidates: list[tuple[str, int, int, str]] = []
    for node in _walk(tree.root_node):
        text = node.text.decode() if node.text is not None else ""
        if node.type != "comment" or not text.startswith("/**") or not text.endswith("*/"):
            continue
        (first, col), (last, end_col) = node.start_point, node.end_point
        if raw[first][:col].strip() or raw[last][end_col:].strip():
            continue  # shares a line with code: left in place
        removed.update(range(first, last + 1))
        following = node.next_named_sibling
        documented = _documented(following) if following is not None else None
        if following is None or documented is None or following.start_point[0] != last + 1:
            continue
        candidates.append((_name(documented), following.start_point[0], following.end_point[0],
                           first_paragraph(text)))
    kept = sorted(removed)

    def new_line(old: int) -> int:  # 0-based old line -> 1-based line in the stripped text
        return old - bisect.bisect_right(kept, old) + 1

    stripped = "\n".join(line for number, line in enumerate(lines) if number not in removed)
    definitions = [Definition(name, new_line(start), new_line(end), query)
                   for name, start, end, query in candidates if usable_query(query)]
    return stripped, definitions


def build_set(name: str, tree: Path, files: Callable[[Path], list[Path]], grammar: str, header: str,
              max_queries: int) -> Path:
    """Copies ``files(tree)`` without JSDoc to the set's ``copy/`` and writes its cases."""
    copy = fresh_copy(name)
    cases: list[dict[str, Any]] = []
    for source in files(tree):
        relative = source.relative_to(tree).as_posix()
        text, definitions = strip_jsdoc(source.read_text(encoding="utf-8"), grammar)
        write_copy(copy, relative, text)
        cases.extend({"id": f"{relative}:{d.start}:{d.name}", "query": d.query,
                      "relevant": [{"path": relative, "startLine": d.start, "endLine": d.end}]}
                     for d in definitions)
    return write_cases(name, drop_repeated_queries(cases), max_queries, header)

"""SQL files cut by statement, each named by what it creates.

Owns ``sql_sections``: a scanner splits the text at the semicolons that end
statements, skipping those in strings ('...', E'...', "..."), dollar quotes
($$...$$, $fn$...$fn$), comments (-- and nested /* */) and block bodies
(``BEGIN ATOMIC ... END``, a MySQL/T-SQL/Oracle ``BEGIN`` ... ``END`` that ends
its line). tree-sitter's SQL grammar is not used: it loses whole PL/pgSQL
functions to error recovery (it finds 2 of the 5 in sql/040_readback.sql).

A ``CREATE [OR REPLACE] FUNCTION rag.search(...)`` statement is the section
``rag.search`` of kind FUNCTION; so are procedures, tables, views
(materialized too), triggers, types and domains, indexes, schemas, sequences,
extensions and policies of their kinds. A ``COMMENT ON`` the object the
statement before it created (or on one of its columns) joins that
statement's section: it documents the object as a docstring does; elsewhere
it is a COMMENT section named by its object. Other statements (DO blocks,
ALTER, INSERT, ...) are unnamed code. Comments between two statements belong
to the second.
"""

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from rag.chunking.sections import Section, joined

# What the scanner stops at, outside strings and comments ([\w$] is an identifier's character).
_TOKEN = re.compile(
    r"""--[^\n]*|/\*|(?P<estring>(?<![\w$])E')|['"`]|(?P<dollar>(?<![\w$])\$(?:[A-Z_]\w*)?\$)"""
    r"""|(?P<word>(?<![\w$])(?:BEGIN|CASE|END)(?![\w$]))|;""",
    re.I,
)
_SPACE = re.compile(r"(?:\s+|--[^\n]*)*")
_BLOCK_COMMENT = re.compile(r"/\*|\*/")
_SPACE_TO_NEWLINE = re.compile(r"[ \t\r\f\v]*(?:--[^\n]*)?\n")
# The rest of a string after its opening quote: a doubled quote is part of it.
_STRING_REST = {quote: re.compile(f"[^{quote}]*(?:{quote}{quote}[^{quote}]*)*{quote}")
                for quote in "'\"`"}
_E_STRING_REST = re.compile(r"(?:\\.|''|[^'\\])*'", re.S)  # E'...': backslash escapes too
_ATOMIC = re.compile(r"\s+ATOMIC\b", re.I)
_CLOSES_UNCOUNTED = re.compile(r"\s+(?:IF|LOOP|WHILE|REPEAT|FOR)\b", re.I)

# CREATE <modifiers> <object> [IF NOT EXISTS] name: the object words and their fragmentType.
_OBJECT_KINDS = {
    "FUNCTION": "FUNCTION", "PROCEDURE": "PROCEDURE", "AGGREGATE": "FUNCTION",
    "TABLE": "TABLE", "VIEW": "VIEW", "TRIGGER": "TRIGGER", "TYPE": "TYPE", "DOMAIN": "TYPE",
    "INDEX": "INDEX", "SCHEMA": "SCHEMA", "SEQUENCE": "SEQUENCE", "EXTENSION": "EXTENSION",
    "POLICY": "POLICY",
}
_CREATE_MODIFIERS = frozenset(
    {"OR", "REPLACE", "TEMP", "TEMPORARY", "UNLOGGED", "GLOBAL", "LOCAL", "MATERIALIZED",
     "RECURSIVE", "UNIQUE", "CONSTRAINT", "FOREIGN"}
)
_NAME_SKIPS = frozenset({"IF", "NOT", "EXISTS", "CONCURRENTLY"})
# What may stand between COMMENT ON and the object's name.
_COMMENT_OBJECT_WORDS = frozenset(
    {*_OBJECT_KINDS, "MATERIALIZED", "FOREIGN", "COLUMN", "CONSTRAINT", "RULE"}
)
_NAMING = re.compile(r"(?:CREATE|COMMENT)\b", re.I)
_HEAD_TOKEN = re.compile(r'"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|[A-Za-z_][A-Za-z0-9_$]*|\S')


@dataclass(frozen=True)
class _Statement:
    start: int  # offset of its first token
    end: int  # offset just past its terminating semicolon (or the text's end)


def sql_sections(text: str) -> list[Section]:
    """The statements of a SQL file as sections, named by what they create."""
    line_starts = [0, *(match.end() for match in re.finditer("\n", text))]

    def row(offset: int) -> int:
        return bisect_right(line_starts, offset) - 1

    sections: list[Section] = []
    floor = 0  # the first row after the previous statement
    for statement in _statements(text):
        head = row(statement.start)
        kind, name, comment_on = _describe(text, statement)
        section = Section(min(floor, head), head, kind, name)
        if not sections:
            sections.append(section)
        elif comment_on is not None and _documents(comment_on, sections[-1].name):
            pass  # part of the section before
        elif head < floor:
            sections[-1] = joined(sections[-1], section)
        else:
            sections.append(section)
        floor = row(max(statement.start, statement.end - 1)) + 1
    return sections


def _documents(target: str, name: str | None) -> bool:
    """Whether a COMMENT ON ``target`` is about the object ``name`` or one of its columns."""
    if name is None:
        return False
    target, name = target.lower(), name.lower()
    return target == name or target.rsplit(".", 1)[0] == name


def _statements(text: str) -> Iterator[_Statement]:
    """Statements in order: from their first token to their semicolon."""
    start = _skip_space(text, 0)
    position, depth = start, 0
    while start < len(text):
        match = _TOKEN.search(text, position)
        if match is None:
            yield _Statement(start, len(text))
            return
        token, position = match.group(), match.end()
        if token == ";":
            if depth == 0:
                yield _Statement(start, position)
                start = position = _skip_space(text, position)
        elif token == "/*":
            position = _skip_block_comment(text, position)
        elif match.group("dollar"):
            found = text.find(token, position)
            position = found + len(token) if found >= 0 else len(text)
        elif match.group("word"):
            depth = _block_depth(text, token.upper(), match.start() == start, position, depth)
        elif not token.startswith("--"):  # a quote
            rest = _STRING_REST.get(token) or _E_STRING_REST
            closing = rest.match(text, position)
            position = closing.end() if closing else len(text)


def _skip_space(text: str, position: int) -> int:
    """Past the whitespace and comments at ``position``."""
    while True:
        space = _SPACE.match(text, position)  # matches, if only the empty string
        position = space.end() if space else position
        if not text.startswith("/*", position):
            return position
        position = _skip_block_comment(text, position + 2)


def _skip_block_comment(text: str, position: int) -> int:
    """Past the end of a /* comment (they nest in PostgreSQL) opened before ``position``."""
    nesting = 1
    while nesting:
        match = _BLOCK_COMMENT.search(text, position)
        if match is None:
            return len(text)
        nesting += 1 if match.group() == "/*" else -1
        position = match.end()
    return position


def _block_depth(text: str, word: str, first: bool, position: int, depth: int) -> int:
    """How deep in BEGIN ... END bodies the scanner is after ``word``, which
    ends at ``position``: a semicolon ends a statement only at depth 0.

    A statement's ``first`` word BEGIN or END is a transaction's; a BEGIN
    later opens a body when ATOMIC or the end of its line follows (a column
    named ``begin`` does not); inside a body, CASE opens what END closes
    (END IF, END LOOP, ... close what was not counted)."""
    if first:
        return 0
    if word == "BEGIN":
        opens = _ATOMIC.match(text, position) or _SPACE_TO_NEWLINE.match(text, position)
        return depth + 1 if opens else depth
    if depth and word == "CASE":
        return depth + 1
    if depth and word == "END" and not _CLOSES_UNCOUNTED.match(text, position):
        return depth - 1
    return depth


def _describe(text: str, statement: _Statement) -> tuple[str, str | None, str | None]:
    """The statement's kind and name, and for a COMMENT ON what it comments on."""
    if not _NAMING.match(text, statement.start):
        return "MODULE", None, None  # most statements of a dump: no need to read their words
    words = _head_tokens(text[statement.start : min(statement.end, statement.start + 2000)])
    upper = [word.upper() for word in words]
    if upper[:1] == ["CREATE"]:
        index = 1
        while index < len(upper) and upper[index] in _CREATE_MODIFIERS:
            index += 1
        kind = _OBJECT_KINDS.get(upper[index]) if index < len(upper) else None
        if kind is not None:
            index += 1
            while index < len(upper) and upper[index] in _NAME_SKIPS:
                index += 1
            name = None if upper[index : index + 1] == ["ON"] else _qualified_name(words, index)
            return kind, name, None
    if upper[:2] == ["COMMENT", "ON"]:
        index = 2
        while index < len(upper) and upper[index] in _COMMENT_OBJECT_WORDS:
            index += 1
        target = _qualified_name(words, index)
        return "COMMENT", target, target
    return "MODULE", None, None


def _head_tokens(head: str) -> list[str]:
    """The first tokens of a statement, comments left out."""
    head = re.sub(r"--[^\n]*|/\*.*?\*/", " ", head, flags=re.S)
    return _HEAD_TOKEN.findall(head)[:40]


def _qualified_name(words: list[str], index: int) -> str | None:
    """``a.b.c`` from ``words[index:]``, quotes taken off; None if none is there."""
    parts: list[str] = []
    while index < len(words) and _is_identifier(words[index]):
        parts.append(words[index].strip('"`[]').replace('""', '"'))
        if words[index + 1 : index + 2] != ["."]:
            break
        index += 2
    name = ".".join(parts)
    return name if 0 < len(name) <= 200 else None


def _is_identifier(token: str) -> bool:
    return token[0] in '"`[' or token[0].isalpha() or token[0] == "_"

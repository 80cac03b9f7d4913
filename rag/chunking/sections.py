"""Named sections of a file found without a syntax tree: what ``code.chunk_sections`` cuts.

Owns ``Section`` and the rules every section finder (SQL statements,
configuration keys, Dockerfile stages) shares: the comment lines right above
a section's first line are its own, and sections sharing a line are one.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """Rows ``start`` up to the next section's start (or the file's end) that
    are one thing: a SQL statement, a config file's top-level key, a stage.

    ``head`` is the row it is declared on (``CREATE FUNCTION ...``, ``key:``,
    ``FROM ... AS build``), put in front of its windows when it is too big for
    one chunk; ``kind`` is the chunks' fragmentType (MODULE for a section that
    declares nothing) and ``name`` their fqn.
    """

    start: int  # 0-based, comment lines above ``head`` included
    head: int
    kind: str
    name: str | None


def joined(first: Section, second: Section) -> Section:
    """One section for two that share a line (chunks hold whole lines): named
    as the one with a name, or by no name when they have two."""
    if second.name is None or second.name == first.name:
        return first
    if first.name is None:
        return Section(first.start, first.head, second.kind, second.name)
    return Section(first.start, first.head, "MODULE", None)


def start_with_comments(lines: list[str], head: int, floor: int, markers: tuple[str, ...]) -> int:
    """``head``, or the first of the comment lines (starting with one of
    ``markers``) right above it, none of them before ``floor``; a comment
    indented deeper than the head line is the end of the block before."""
    indent = _indent(lines[head])
    start = head
    while start > floor:
        line = lines[start - 1]
        if not line.lstrip().startswith(markers) or _indent(line) > indent:
            break
        start -= 1
    return start


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())

"""The definitions of a parsed file: a walk of its syntax tree asking
``rag.languages.definitions`` what each node defines (the names chunks carry), with
fqns by nesting, each definition's enclosing one, and its signature line."""

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Node

from rag.languages.definitions import find_definition, may_define
from rag.languages.syntax import CONTAINER_KINDS, last_row

# Deeper nesting of definitions than this is not followed.
_MAX_DEPTH = 40
_SIGNATURE_CHARS = 200
# A class defined inside a function is named as Python's __qualname__ names it
# (outer.<locals>.Inner): its own definition, never the function's. Only bodies
# whose text may hold one are walked (walking every body: 0.15 -> 0.22 s for
# pip's 441 files; with this look first, 0.16 s).
LOCALS = "<locals>"
_CLASS_WORDS = (b"class", b"struct", b"interface", b"enum", b"trait", b"impl", b"record")


def _may_hold_class(body: Node) -> bool:
    text = body.text or b""
    return any(word in text for word in _CLASS_WORDS)


@dataclass(slots=True)  # not frozen: _with_parents sets ``parent`` in place
class Found:
    """A definition as the walk finds it: its bytes, rows, and where its name's line starts."""

    fqn: str
    kind: str
    start: int  # bytes
    end: int
    parent: int  # index of the enclosing definition, -1 at module level
    node_start_row: int
    node_end_row: int
    name_row: int
    name_line_start: int  # byte offset of that line
    bodiless: bool  # a declaration only: an overload signature, a prototype


# Plain code at module or class level that may hold definitions (if/try/with blocks).
_COMPOUND = re.compile(r"(_statement|_clause|block|_declaration_list|declaration_list)$")


# What a node's type says it may be, for the walk below (bit flags).
_MAY_DEFINE, _MAY_HOLD = 1, 2
_node_roles: dict[str, dict[str, int]] = {}  # language -> node type -> flags


def _node_role(language: str, node_type: str) -> int:
    return (_MAY_DEFINE if may_define(node_type, language) else 0) | (
        _MAY_HOLD if _COMPOUND.search(node_type) else 0
    )


def walk_definitions(root: Node, language: str) -> list[Found]:
    found: list[Found] = []
    roles = _node_roles.setdefault(language, {})
    # (nodes, the fqn they are in, whether functions there are methods, depth,
    # whether they are a function's: then only classes are definitions)
    stack: list[tuple[Sequence[Node], str | None, bool, int, bool]] = [
        (root.named_children, None, False, 0, False)
    ]
    while stack:
        nodes, prefix, methods, depth, local = stack.pop()
        for node in nodes:
            # Most statements are neither: their type tells without looking further.
            node_type = node.type
            role = roles.get(node_type)
            if role is None:
                role = roles[node_type] = _node_role(language, node_type)
            if not role:
                continue
            definition = find_definition(node, language) if role & _MAY_DEFINE else None
            if definition is None:
                if depth < _MAX_DEPTH and role & _MAY_HOLD and node.named_child_count:
                    stack.append((node.named_children, prefix, methods, depth + 1, local))
                continue
            if not definition.name or (local and definition.kind not in CONTAINER_KINDS):
                continue
            kind = "METHOD" if definition.kind == "FUNCTION" and methods else definition.kind
            fqn = f"{prefix}.{definition.name}" if prefix else definition.name
            name_node = definition.node.child_by_field_name("name") or definition.node
            name_point = name_node.start_point
            found.append(Found(
                fqn, kind, node.start_byte, node.end_byte, -1, node.start_point.row, last_row(node),
                name_point.row, name_node.start_byte - name_point.column, definition.body is None,
            ))
            # Members of classes and modules; what a function defines inside is
            # part of it (its calls are the function's), but for its classes.
            if definition.body is not None and depth < _MAX_DEPTH:
                if kind in CONTAINER_KINDS:
                    stack.append((definition.body.named_children, fqn, kind != "MODULE", depth + 1, False))
                elif not local and _may_hold_class(definition.body):
                    stack.append((definition.body.named_children, f"{fqn}.{LOCALS}", False, depth + 1, True))
    return _with_parents(_without_overloads(sorted(found, key=lambda d: (d.start, -d.end))))


def _without_overloads(found: list[Found]) -> list[Found]:
    """TypeScript's overload signatures (and a C prototype right above its
    body) are one definition with what follows: a bodiless declaration is
    dropped when the next definition has its fqn, else a call of ``map``
    would be ambiguous among the three ``map`` of its file."""
    return [d for i, d in enumerate(found)
            if not (d.bodiless and i + 1 < len(found) and found[i + 1].fqn == d.fqn)]


def _with_parents(found: list[Found]) -> list[Found]:
    """Definitions in file order, each with the index of the innermost one containing it."""
    open_defs: list[int] = []
    for index, d in enumerate(found):
        while open_defs and found[open_defs[-1]].end <= d.start:
            open_defs.pop()
        d.parent = open_defs[-1] if open_defs else -1
        open_defs.append(index)
    return found


def signature_lines(definitions: list[Found], text: str) -> list[str]:
    """The line each definition's name is on, stripped: in ASCII text found from
    its offset, without splitting the whole file into lines."""
    if text.isascii():  # byte offsets are character offsets
        signatures = []
        for d in definitions:
            end = text.find("\n", d.name_line_start)
            line = text[d.name_line_start:end] if end >= 0 else text[d.name_line_start:]
            signatures.append(line.strip()[:_SIGNATURE_CHARS])
        return signatures
    lines = text.split("\n")
    return [lines[d.name_row].strip()[:_SIGNATURE_CHARS] if d.name_row < len(lines) else ""
            for d in definitions]


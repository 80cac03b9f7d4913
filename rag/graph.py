"""The code graph as Python calls: ``rag.find_symbols`` and ``rag.traverse`` rows as typed models.

Owns nothing the SQL functions do (``sql/050_graph.sql`` resolves, walks and
caps); it names the relations the way people ask for them (callers, callees,
subclasses, superclasses) and turns an ambiguous or unknown symbol into a
``GraphError`` whose message lists the candidates.
"""

from typing import Any

import psycopg
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from rag.errors import RagError

# name -> (relation, direction) of rag.traverse
RELATIONS: dict[str, tuple[str, str]] = {
    "callers": ("calls", "in"),
    "callees": ("calls", "out"),
    "subclasses": ("inherits", "in"),
    "superclasses": ("inherits", "out"),
}


class GraphError(RagError):
    """A symbol that names no definition or several, or a bad argument."""


class _Row(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class SymbolRow(_Row):
    fqn: str
    kind: str
    path: str
    start_line: int
    end_line: int
    source: str
    signature: str


class Symbols(_Row):
    results: list[SymbolRow]
    total: int  # matched, of which at most the cap are listed


class GraphRow(_Row):
    fqn: str | None  # None: module-level code of the file
    kind: str
    path: str
    start_line: int
    end_line: int
    depth: int
    ambiguous: bool
    ref_line: int | None
    edge_path: list[str]


class Traversal(_Row):
    results: list[GraphRow]


def find_symbols(
    conn: psycopg.Connection[dict[str, Any]],
    name: str,
    sources: list[str] | None = None,
    kinds: list[str] | None = None,
    max_rows: int = 50,
) -> Symbols:
    """Definitions named ``name`` (a name, an fqn or ``path:fqn``), capped, with the count."""
    rows = _call(conn, "SELECT * FROM rag.find_symbols(%s, %s, %s, %s)",
                 name, sources or None, [k.upper() for k in kinds] if kinds else None, max_rows)
    return Symbols(
        results=[SymbolRow.model_validate(row) for row in rows],
        total=rows[0]["total"] if rows else 0,
    )


def traverse(
    conn: psycopg.Connection[dict[str, Any]],
    symbol: str,
    relation: str,
    depth: int = 1,
    sources: list[str] | None = None,
    max_rows: int = 500,
) -> Traversal:
    """``relation`` (callers, callees, subclasses, superclasses) of ``symbol``, up to ``depth`` away."""
    if relation not in RELATIONS:
        raise GraphError(f"relation {relation!r}: choose one of {', '.join(RELATIONS)}")
    edge, direction = RELATIONS[relation]
    rows = _call(conn, "SELECT * FROM rag.traverse(%s, %s, %s, %s, %s, %s)",
                 symbol, [edge], direction, depth, sources or None, max_rows)
    return Traversal(results=[GraphRow.model_validate(row) for row in rows])


def _call(conn: psycopg.Connection[dict[str, Any]], query: str, *params: Any) -> list[dict[str, Any]]:
    try:
        return conn.execute(query.encode(), params).fetchall()
    except (psycopg.errors.InvalidParameterValue, psycopg.errors.NoDataFound) as exc:
        raise GraphError(exc.diag.message_primary or str(exc)) from None

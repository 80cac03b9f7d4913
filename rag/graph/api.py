"""The code graph as Python calls: ``rag.find_symbols`` and ``rag.traverse`` rows as typed models.

Owns nothing the SQL functions do (``sql/05x_graph_*.sql`` resolves, walks and
caps); it names the relations the way people ask for them (callers, callees,
subclasses, superclasses) and turns an ambiguous or unknown symbol into a
``GraphError`` whose message lists the candidates.
"""

from collections.abc import Callable
from typing import Any

import psycopg

from rag import db, sqlapi
from rag.errors import GraphError
from rag.schemas import GraphRow, SymbolRow, SymbolsOutput, TraversalOutput

EDGES = ("calls", "inherits", "imports", "contains")  # the relations of rag.traverse
DIRECTIONS = ("in", "out")

# the names people ask by -> (relation, direction)
RELATIONS: dict[str, tuple[str, str]] = {
    "callers": ("calls", "in"),
    "callees": ("calls", "out"),
    "subclasses": ("inherits", "in"),
    "superclasses": ("inherits", "out"),
}


def find_symbols(
    conn: db.Conn,
    name: str,
    sources: list[str] | None = None,
    kinds: list[str] | None = None,
    max_rows: int = 50,
) -> SymbolsOutput:
    """Definitions named ``name`` (a name, an fqn or ``path:fqn``), capped, with the count."""
    rows = _call(lambda: sqlapi.find_symbols(conn, name, sources or None,
                                             [k.upper() for k in kinds] if kinds else None, max_rows))
    return SymbolsOutput(
        results=[SymbolRow.model_validate(row) for row in rows],
        total=rows[0]["total"] if rows else 0,
    )


def traverse(
    conn: db.Conn,
    symbol: str,
    relation: str,
    direction: str,
    depth: int = 1,
    sources: list[str] | None = None,
    max_rows: int = 500,
    dynamic: bool = False,
) -> TraversalOutput:
    """Definitions ``depth`` edges of ``relation`` (calls, inherits, imports, contains) away from
    ``symbol``, inwards (callers, subclasses) or outwards (callees, superclasses); ``dynamic``:
    also calls on receivers of unknown type, to every method of that name."""
    if relation not in EDGES:
        raise GraphError(f"relation {relation!r}: choose one of {', '.join(EDGES)}")
    if direction not in DIRECTIONS:
        raise GraphError(f"direction {direction!r}: in (callers, subclasses) or out (callees, superclasses)")
    rows = _call(lambda: sqlapi.traverse(conn, symbol, [relation], direction, depth, sources or None,
                                         max_rows, dynamic))
    return TraversalOutput(results=[GraphRow.model_validate(row) for row in rows])


def named_relation(name: str) -> tuple[str, str]:
    """(relation, direction) of callers, callees, subclasses or superclasses."""
    if name not in RELATIONS:
        raise GraphError(f"relation {name!r}: choose one of {', '.join(RELATIONS)}")
    return RELATIONS[name]


def _call(work: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """A ``rag.sqlapi`` call; its refusals (an unknown or ambiguous symbol, a bad argument)
    become a ``GraphError`` with the message ``rag.db.rag_error`` gives them."""
    try:
        return work()
    except (psycopg.errors.InvalidParameterValue, psycopg.errors.NoDataFound) as exc:
        error = db.rag_error(exc)
        raise GraphError(str(error), error.hint) from None

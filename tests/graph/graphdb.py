"""Helpers for the code graph tests: a fixture project indexed into a fresh database
(``Graph``; the ``graph_of`` fixture that makes one is in conftest.py)."""

from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from rag import db
from rag.indexer import ChunkSettings, SourceSpec, index_source
from rag.providers import NoneEmbedder

FIXTURES = Path(__file__).parent / "fixtures"


class Graph:
    """An indexed fixture project and a way to ask its database."""

    def __init__(self, target: db.DatabaseTarget, root: Path, source: str) -> None:
        self.target, self.root, self.source = target, root, source

    def index(self) -> None:
        spec = SourceSpec(self.source, "local", str(self.root))
        with db.connect(self.target) as conn:
            index_source(conn, spec, self.root, NoneEmbedder(), ChunkSettings(max_tokens=200, overlap=20))

    def rows(self, query: str, *params: Any) -> list[dict[str, Any]]:
        with psycopg.connect(self.target.url, row_factory=dict_row, autocommit=True) as conn:
            return conn.execute(query.encode(), params or None).fetchall()

    def names(self, function: str, symbol: str, depth: int = 1) -> set[tuple[str | None, bool]]:
        """(fqn, ambiguous) of what rag.<function>(symbol, depth) lists."""
        found = self.rows(f"SELECT fqn, ambiguous FROM rag.{function}(%s, %s)", symbol, depth)
        return {(row["fqn"], row["ambiguous"]) for row in found}

    def ref(self, path: str, name: str, line: int | None = None) -> dict[str, Any]:
        """The one reference named ``name`` in ``path`` (at ``line``), with its target's fqn."""
        found = self.rows(
            "SELECT r.*, t.fqn AS target, tf.path AS target_path,"
            " ARRAY(SELECT s.fqn || '@' || sf.path FROM rag.ref_candidates c"
            "       JOIN rag.symbols s ON s.id = c.symbol_id JOIN rag.files sf ON sf.id = s.file_id"
            "       WHERE c.ref_id = r.id ORDER BY 1) AS candidate_fqns"
            " FROM rag.ref_status r"
            " LEFT JOIN rag.symbols t ON t.id = r.target_id LEFT JOIN rag.files tf ON tf.id = t.file_id"
            " WHERE r.path = %s AND r.name = %s AND (%s::int IS NULL OR r.line = %s::int)",
            path, name, line, line,
        )
        assert len(found) == 1, f"{len(found)} references to {name} in {path}: {found}"
        return found[0]

    def outcomes(self, path: str, name: str, *lines: int) -> list[tuple[str, str | None]]:
        """(status, target's fqn) of the references named ``name`` at these lines of ``path``."""
        refs = [self.ref(path, name, line) for line in lines]
        return [(ref["status"], ref["target"]) for ref in refs]


"""Helpers for the code graph tests: a fixture project indexed into a fresh database
(``Graph``; the ``graph_of`` fixture that makes one is in conftest.py), and the
references its files promise in comments (``expectations``)."""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from plugins.mcp import Harness, loaded_config
from psycopg.rows import dict_row

from rag import db
from rag.indexer import ChunkSettings, SourceSpec, index_source
from rag.providers import NoneEmbedder
from rag.service import RagService

FIXTURES = Path(__file__).parent / "fixtures"


class Graph:
    """An indexed fixture project and a way to ask its database."""

    def __init__(self, target: db.DatabaseTarget, root: Path, source: str) -> None:
        self.target, self.root, self.source = target, root, source

    def index(self, force: bool = False) -> None:
        spec = SourceSpec(self.source, "local", str(self.root))
        with db.connect(self.target) as conn:
            index_source(conn, spec, self.root, NoneEmbedder(), ChunkSettings(max_tokens=200, overlap=20),
                         force=force)

    def write(self, files: dict[str, str | None]) -> None:
        """Files of the project written (made with their folders), or deleted (None)."""
        for path, text in files.items():
            file = self.root / path
            if text is None:
                file.unlink()
            else:
                file.parent.mkdir(parents=True, exist_ok=True)
                file.write_text(text)

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


@contextmanager
def mcp_harness(graph: Graph, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    """MCP tools (the SDK's in-memory client) over the graph's database."""
    monkeypatch.setenv("RAG_DATABASE_URL", graph.target.url)
    harness = Harness(RagService(loaded=loaded_config()))
    try:
        yield harness
    finally:
        harness.service.close()


# `ref NAME: BY -> TARGET @ PATH` in a comment at the end of a fixture's line: the
# reference named NAME on that line resolves, by BY, to TARGET in PATH (in its own
# file when "@ PATH" is left out). Several on one line are separated by ";".
_EXPECTATION = re.compile(r"ref (\S+): (\w+) -> (\S+?)(?: @ (\S+))?\s*(?:;|\*/|$)")
_COMMENT = re.compile(r"(?:#|//|/\*)\s*(ref \S+: .*)$")


@dataclass(frozen=True)
class Expected:
    """A reference a fixture file promises in a comment on its line (see ``_EXPECTATION``)."""

    project: str
    path: str
    line: int
    name: str
    resolved_by: str
    target: str
    target_path: str

    def __str__(self) -> str:
        return f"{self.project}/{self.path}:{self.line}:{self.name}"

    def check(self, graph: "Graph") -> None:
        ref = graph.ref(self.path, self.name, self.line)
        assert (ref["status"], ref["resolved_by"], ref["target"], ref["target_path"]) == (
            "resolved", self.resolved_by, self.target, self.target_path)


def expectations(project: str) -> list[Expected]:
    """Every reference the files of ``fixtures/<project>`` promise, in path and line order."""
    root = FIXTURES / project
    found: list[Expected] = []
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        path = file.relative_to(root).as_posix()
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            comment = _COMMENT.search(line)
            for name, by, target, target_path in _EXPECTATION.findall(comment[1] if comment else ""):
                found.append(Expected(project, path, number, name, by, target, target_path or path))
    assert found, f"no expectations in fixtures/{project}"
    return found

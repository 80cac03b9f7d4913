"""Fixtures of the hostile-tree suite (see harness.py for what every case checks)."""

from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest
from harness import KEYWORD_ONLY, Handler, Rag, serve

from rag import db


@pytest.fixture
def rag(rag_db: db.DatabaseTarget, tmp_path: Path) -> Iterator[Rag]:
    """`rag` on a database that already holds another source, 'other', checked untouched at the end."""
    runner = Rag(rag_db, tmp_path / "rag.yaml")
    runner.write_config(KEYWORD_ONLY)
    other = tmp_path / "other"
    other.mkdir()
    (other / "kept.py").write_text("def untouched():\n    return 1\n", encoding="utf-8")
    (other / "notes.md").write_text("# Other\n\nIndexed before the hostile run.\n", encoding="utf-8")
    assert runner("index", "--path", str(other), "--name", "other").code == 0
    before = runner.snapshot("other")
    yield runner
    assert runner.snapshot("other") == before, "a run of another source changed 'other'"


@pytest.fixture
def fake_api() -> Iterator[Callable[[Handler], str]]:
    """Starts fake embedding APIs (see harness.serve); yields a starter returning the base URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(handler: Handler) -> str:
        servers.append(serve(handler))
        return f"http://127.0.0.1:{servers[-1].server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()

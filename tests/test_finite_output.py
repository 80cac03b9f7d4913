"""JSON answers never hold NaN or Infinity (#42.15): zero vectors stored before providers'
were refused make cosines NaN, which a strict JSON parser refuses with the whole answer."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest
from fakes import HashEmbedder
from plugins.mcp import Harness, make_project
from typer.testing import CliRunner

from rag import db
from rag.cli import app
from rag.service import RagService


def strict(text: str) -> Any:
    def refuse(constant: str) -> NoReturn:
        raise AssertionError(f"{constant} in JSON output: {text[:200]}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def zero_vectors(rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project indexed with vectors, each then made all-zero."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setattr(RagService, "embedder", lambda self: HashEmbedder(8))
    (tmp_path / "rag.config.yaml").write_text("reranker: {provider: none}\n")
    root = make_project(tmp_path / "proj")
    assert CliRunner().invoke(app, ["index", "--path", str(root)], catch_exceptions=False).exit_code == 0
    with db.connect(rag_db) as conn:
        conn.execute("UPDATE rag.embeddings SET embedding = array_fill(0, ARRAY[8])::real[]::vector")
        conn.execute("UPDATE rag.query_embeddings SET embedding = array_fill(0, ARRAY[8])::real[]::vector")


def test_search_json_has_no_nan(zero_vectors: None) -> None:
    done = CliRunner().invoke(app, ["search", "combine latest", "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.stderr
    results = strict(done.stdout)["results"]
    assert results and all(r["scores"]["vector"] is None for r in results)


def test_mcp_search_has_no_nan(zero_vectors: None, make_harness: Callable[..., Harness]) -> None:
    harness = make_harness({"reranker": {"provider": "none"}}, embedder=HashEmbedder(8))
    result = harness.call("search", {"query": "combine latest"})
    assert not result.is_error
    out = strict(result.content[0].text)  # type: ignore[union-attr]
    assert out["results"] and all(r["scores"]["vector"] is None for r in out["results"])

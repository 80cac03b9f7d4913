"""`rag graph …` through typer's CliRunner on the indexed Python fixture."""

import json
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from graphdb import Graph
from typer.testing import CliRunner

from rag import db
from rag.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def shop(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("python")


def rag(shop: Graph, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setenv("RAG_DATABASE_URL", shop.target.url)
    result = runner.invoke(app, ["graph", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_callers_as_json(shop: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = rag(shop, monkeypatch, "callers", "Cart.total", "--json")
    assert code == 0
    results = json.loads(out)["results"]
    assert {(r["fqn"], r["path"], r["depth"], r["ambiguous"]) for r in results} == {
        ("checkout", "shop/checkout.py", 1, False), ("local_helper", "shop/checkout.py", 1, False)}
    assert set(results[0]) >= {"fqn", "kind", "path", "startLine", "endLine", "depth", "ambiguous"}


def test_callees_subclasses_superclasses_as_text(shop: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = rag(shop, monkeypatch, "callees", "Item.cost", "--depth", "2")
    assert code == 0
    assert out.splitlines() == ["shop/models.py:13-14  Item.price (METHOD)",
                                "  shop/models.py:5-6  Base.price (METHOD)"]
    code, out, _ = rag(shop, monkeypatch, "subclasses", "Base")
    assert code == 0 and "Item (CLASS)" in out and "Cart (CLASS)" in out
    code, out, _ = rag(shop, monkeypatch, "superclasses", "shop/models.py:Item")
    assert code == 0 and out.strip() == "shop/models.py:4-9  Base (CLASS)"


def test_find_lists_with_the_count(shop: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = rag(shop, monkeypatch, "find", "price", "--limit", "1")
    assert code == 0
    assert out.strip() == "shop/models.py:5-6  Base.price (METHOD)  def price(self):"
    assert "# 2 definitions, 1 shown" in err
    code, out, _ = rag(shop, monkeypatch, "find", "price", "--json")
    assert json.loads(out)["total"] == 2


def test_an_ambiguous_symbol_is_one_line_listing_candidates(
    shop: Graph, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = rag(shop, monkeypatch, "callers", "render")
    assert code == 1 and out == ""
    assert err.startswith("error: symbol 'render' is ambiguous: 2 definitions (util/format.py:render, "
                          "util/report.py:render); pass path:fqn")
    code, _, err = rag(shop, monkeypatch, "callers", "nope")
    assert code == 1 and "no such definition" in err


def test_status_counts_the_graph_with_unresolved_references(shop: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", shop.target.url)
    result = runner.invoke(app, ["status"], catch_exceptions=False)
    assert result.exit_code == 0
    counts = shop.rows("SELECT * FROM rag.graph_status()")[0]
    assert (f"code graph python: {counts['symbols']:,} definitions, {counts['refs']:,} references "
            f"({counts['resolved']:,} resolved, {counts['ambiguous']:,} ambiguous, "
            f"{counts['unresolved']:,} unresolved; {counts['dynamic']:,} calls through dynamic dispatch)"
            ) in result.stdout.splitlines()
    assert counts["unresolved"] > 0 and counts["dynamic"] > 0


def test_dynamic_adds_calls_on_receivers_of_unknown_type(shop: Graph, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = rag(shop, monkeypatch, "callees", "audit")
    assert code == 0 and out == "" and "nothing found" in err
    code, out, _ = rag(shop, monkeypatch, "callees", "audit", "--dynamic")
    assert code == 0 and out.splitlines() == [
        "util/report.py:10-11  Ledger.record (METHOD)  (ambiguous)",
        "util/report.py:15-16  Journal.record (METHOD)  (ambiguous)"]


def test_a_graph_a_crash_emptied_is_rebuilt_by_the_next_graph_call(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#56: after the database crashed under `rag mcp`, find_symbol and `rag graph find` found
    nothing until the next `rag index`, and nothing said why."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "ledger.py").write_text("def settle(amount):\n    return round(amount, 2)\n\n\n"
                                    "def close_day(amounts):\n    return settle(sum(amounts))\n")
    (root / "README.md").write_text("# Ledger\n\nSettles amounts.\n")
    assert runner.invoke(app, ["index", "--path", str(root), "--name", "p"]).exit_code == 0
    with psycopg.connect(rag_db.url, autocommit=True) as conn:  # what crash recovery does to unlogged tables
        conn.execute("TRUNCATE rag.symbols, rag.refs, rag.code_modules, rag.ref_resolution, rag.ref_candidates,"
                     " rag.graph_data_intact RESTART IDENTITY")
    status = runner.invoke(app, ["status"], catch_exceptions=False).stdout
    assert "being rebuilt after a database crash: 1 code files wait" in status
    found = runner.invoke(app, ["graph", "find", "settle", "--json"], catch_exceptions=False)
    assert found.exit_code == 0 and json.loads(found.stdout)["total"] == 1
    callers = runner.invoke(app, ["graph", "callers", "settle", "--json"], catch_exceptions=False)
    assert [r["fqn"] for r in json.loads(callers.stdout)["results"]] == ["close_day"]
    assert "being rebuilt" not in runner.invoke(app, ["status"], catch_exceptions=False).stdout

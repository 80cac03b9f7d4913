"""The MCP tools find_symbol and traverse_graph through the SDK's in-memory client, on the Python fixture."""

from collections.abc import Callable, Iterator

import pytest
from graphdb import Graph, mcp_harness
from plugins.mcp import Harness


@pytest.fixture(scope="module")
def shop(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("python")


@pytest.fixture
def harness(shop: Graph, monkeypatch: pytest.MonkeyPatch) -> Iterator[Harness]:
    with mcp_harness(shop, monkeypatch) as h:
        yield h


def test_find_symbol_gives_what_read_source_takes(harness: Harness) -> None:
    found = harness.ok("find_symbol", {"name": "price"})
    assert found["total"] == 2
    assert [(r["fqn"], r["kind"], r["source"], r["path"]) for r in found["results"]] == [
        ("Base.price", "METHOD", "python", "shop/models.py"), ("Item.price", "METHOD", "python", "shop/models.py")]
    row = found["results"][0]
    text = harness.ok("read_source", {"source": row["source"], "path": row["path"],
                                      "startLine": row["startLine"], "endLine": row["endLine"]})
    assert text["content"] == "    def price(self):\n        return 0"
    only = harness.ok("find_symbol", {"name": "Cart", "kind": "CLASS", "source": "python", "limit": 1})
    assert [r["fqn"] for r in only["results"]] == ["Cart"] and only["total"] == 1


def test_traverse_graph_callers_and_callees(harness: Harness) -> None:
    callers = harness.ok("traverse_graph", {"symbol": "Cart.total"})["results"]
    assert {(r["fqn"], r["path"], r["depth"], r["ambiguous"], r["source"]) for r in callers} == {
        ("checkout", "shop/checkout.py", 1, False, "python"), ("local_helper", "shop/checkout.py", 1, False, "python")}
    assert {r["relation"] for r in callers} == {"calls"}
    assert all(r["edgePath"][0] == "Cart.total" for r in callers)
    callees = harness.ok("traverse_graph", {"symbol": "Item.cost", "direction": "out", "depth": 2})["results"]
    assert [(r["fqn"], r["depth"]) for r in callees] == [("Item.price", 1), ("Base.price", 2)]
    assert callees[1]["edgePath"] == ["Item.cost", "Item.price", "Base.price"]


def test_traverse_graph_subclasses_and_superclasses(harness: Harness) -> None:
    subclasses = harness.ok("traverse_graph", {"symbol": "Base", "relation": "inherits"})["results"]
    assert {r["fqn"] for r in subclasses} == {"Item", "Cart"}
    supers = harness.ok("traverse_graph", {"symbol": "shop/models.py:Item", "relation": "inherits",
                                           "direction": "out"})["results"]
    assert [(r["fqn"], r["startLine"], r["endLine"]) for r in supers] == [("Base", 4, 9)]


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("traverse_graph", {"symbol": "render"}, "symbol 'render' is ambiguous: 2 definitions "
                                             "(util/format.py:render, util/report.py:render); pass path:fqn"),
    ("traverse_graph", {"symbol": "nope"}, "symbol 'nope': no such definition"),
    ("traverse_graph", {"symbol": "Cart", "relation": "friends"}, "invalid arguments: relation"),
    ("traverse_graph", {"symbol": "Cart", "depth": 11}, "invalid arguments: depth"),
    ("find_symbol", {"name": ""}, "invalid arguments: name"),
])
def test_graph_tool_errors_say_what_to_do(harness: Harness, tool: str, args: dict[str, object],
                                          message: str) -> None:
    assert harness.error(tool, args).startswith(message)


def test_status_counts_the_graph(harness: Harness, shop: Graph) -> None:
    (graph,) = harness.ok("status")["graph"]
    expected = shop.rows("SELECT * FROM rag.graph_status()")[0]
    assert graph == {"source": "python", "symbols": expected["symbols"], "refs": expected["refs"],
                     "resolved": expected["resolved"], "ambiguous": expected["ambiguous"],
                     "unresolved": expected["unresolved"], "pending": 0, "dynamic": expected["dynamic"],
                     "modules": 0, "awaitingRebuild": 0}
    assert graph["unresolved"] > 0 and graph["ambiguous"] > 0 and graph["resolved"] > 0
    assert graph["resolved"] + graph["ambiguous"] + graph["unresolved"] == graph["refs"]


def test_traverse_graph_lists_dynamic_dispatch_only_when_asked(harness: Harness) -> None:
    # audit(entry) calls entry.record(): entry's type is unknown, two classes define record
    assert harness.ok("traverse_graph", {"symbol": "Journal.record"})["results"] == []
    rows = harness.ok("traverse_graph", {"symbol": "Journal.record", "dynamic": True})["results"]
    assert [(r["fqn"], r["ambiguous"]) for r in rows] == [("audit", True)]

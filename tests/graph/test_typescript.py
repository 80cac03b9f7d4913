"""The code graph of a TypeScript/JSX fixture project: each reference kind resolved, ambiguity kept."""

from collections.abc import Callable

import pytest
from graphdb import Expected, Graph, expectations


@pytest.fixture(scope="module")
def app(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("typescript")


@pytest.mark.parametrize("expected", expectations("typescript"), ids=str)
def test_each_reference_kind_resolves(app: Graph, expected: Expected) -> None:
    """Each reference a fixture file promises in a comment on its line (graphdb.expectations)."""
    expected.check(app)


def test_the_same_use_twice_in_a_definition_is_one_reference(app: Graph) -> None:
    # other.total() and cart.total() in checkout() both mean Cart.total: the first line is kept
    rows = app.rows("SELECT line FROM rag.ref_status WHERE path = 'src/checkout.ts' AND name = 'total'")
    assert [r["line"] for r in rows] == [10]


def test_ambiguity_in_the_folder_keeps_both_candidates(app: Graph) -> None:
    ref = app.ref("src/lib/page.ts", "render")
    assert (ref["status"], ref["resolved_by"]) == ("ambiguous", "folder")
    assert ref["candidate_fqns"] == ["render@src/lib/format.ts", "render@src/lib/report.ts"]


def test_mutual_recursion_and_types(app: Graph) -> None:
    rows = app.rows("SELECT depth, fqn FROM rag.callees('isEven', 5) ORDER BY depth")
    assert [(r["depth"], r["fqn"]) for r in rows] == [(1, "isOdd"), (2, "isEven")]
    assert app.names("subtypes", "Base") == {("Item", False), ("Cart", False)}
    assert app.names("subtypes", "Priced") == {("Base", False)}
    # priced.price() names the interface's price; Base implements it, Item overrides Base's
    assert app.names("callers", "Priced.price") == {("charge", False)}
    assert ("charge", True) in app.names("callers", "Base.price")
    assert ("charge", True) in app.names("callers", "Item.price")
    assert app.names("supertypes", "Item", 2) == {("Base", False), ("Priced", False)}
    assert app.names("callers", "Cart") == {("checkout", False), ("makeCart", False)}


def test_unknown_bases_and_builtins(app: Graph) -> None:
    assert app.ref("src/widget.jsx", "Component")["status"] == "unresolved"
    assert not app.rows("SELECT 1 FROM rag.refs WHERE name IN ('require', 'String')")
    # the broken function at the end of widget.jsx does not lose the class above it
    assert app.rows("SELECT 1 FROM rag.symbols WHERE fqn = 'Widget.label'")


def test_overload_signatures_are_one_definition_with_their_implementation(app: Graph) -> None:
    rows = app.rows("SELECT start_line FROM rag.symbols WHERE fqn = 'pad'")
    assert [r["start_line"] for r in rows] == [10]  # the implementation, not the two signatures
    ref = app.ref("src/checkout.ts", "pad")
    assert (ref["status"], ref["resolved_by"], ref["target"]) == ("resolved", "import", "pad")
    assert app.names("callers", "pad") == {("receipt", False)}


def test_a_typed_field_and_a_generic_parameter_type_the_receiver(app: Graph) -> None:
    ref = app.ref("src/models/cart.ts", "total", 42)  # this.cart.total()
    assert (ref["status"], ref["resolved_by"], ref["target"]) == ("resolved", "file", "Cart.total")
    ref = app.ref("src/models/cart.ts", "hold")  # held: Holder<Cart>
    assert (ref["status"], ref["resolved_by"], ref["target"]) == ("resolved", "file", "Holder.hold")

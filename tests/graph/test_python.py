"""The code graph of a Python fixture project: each reference kind resolved,
ambiguity kept, traversals bounded, and changes re-resolving only what they affect."""

from collections.abc import Callable

import psycopg
import pytest
from graphdb import Expected, Graph, expectations


@pytest.fixture(scope="module")
def shop(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("python")


@pytest.mark.parametrize("expected", expectations("python"), ids=str)
def test_each_reference_kind_resolves(shop: Graph, expected: Expected) -> None:
    """Each reference a fixture file promises in a comment on its line (graphdb.expectations)."""
    expected.check(shop)


def test_ambiguity_in_the_folder_keeps_every_candidate(shop: Graph) -> None:
    ref = shop.ref("util/broken.py", "render")
    assert (ref["status"], ref["resolved_by"], ref["candidates"]) == ("ambiguous", "folder", 2)
    assert ref["candidate_fqns"] == ["render@util/format.py", "render@util/report.py"]
    # each candidate lists the call as an ambiguous caller
    assert shop.names("callers", "util/format.py:render") == {("fine", True)}
    assert shop.names("callers", "util/report.py:render") == {("fine", True), ("summary", False)}


def test_ambiguity_by_name_lists_every_definition_of_it(shop: Graph) -> None:
    ref = shop.ref("shop/orders.py", "record")
    assert (ref["status"], ref["resolved_by"], ref["candidates"]) == ("ambiguous", "name", 2)
    # entry.record() with entry of unknown type: dynamic dispatch, listed only when asked
    assert shop.names("callees", "audit") == set() and shop.names("callers", "Journal.record") == set()
    dynamic = "SELECT fqn, ambiguous FROM rag.traverse(%s, ARRAY['calls'], %s, 1, dynamic => true)"
    assert {(r["fqn"], r["ambiguous"]) for r in shop.rows(dynamic, "audit", "out")} == {
        ("Ledger.record", True), ("Journal.record", True)}
    assert {(r["fqn"], r["ambiguous"]) for r in shop.rows(dynamic, "Journal.record", "in")} == {("audit", True)}


def test_a_unique_method_name_on_an_unknown_receiver_is_still_dynamic(shop: Graph) -> None:
    ref = shop.ref("shop/orders.py", "submit")
    assert (ref["status"], ref["resolved_by"]) == ("resolved", "name")
    assert shop.names("callers", "Order.submit") == set()
    assert shop.rows("SELECT fqn FROM rag.traverse('Order.submit', ARRAY['calls'], 'in', 1, dynamic => true)") == [
        {"fqn": "place"}]


def test_calls_to_other_packages_and_builtins_stay_unresolved(shop: Graph) -> None:
    ref = shop.ref("shop/checkout.py", "helpers")  # an import of a module, not a definition
    assert ref["status"] == "unresolved"
    assert not shop.rows("SELECT 1 FROM rag.refs WHERE name IN ('super', 'len')")


def test_callers_and_callees_with_depth_and_paths(shop: Graph) -> None:
    assert shop.names("callers", "Cart.total") == {("checkout", False), ("local_helper", False)}
    assert shop.names("callees", "checkout") == {
        ("Cart", False), ("Item", False), ("Cart.total", False), ("save", False),
        ("tax", False), ("local_helper", False), ("money", False)}
    rows = shop.rows("SELECT depth, fqn, edge_path, path, start_line FROM rag.callers('Base.price', 3)"
                     " ORDER BY depth, fqn")
    assert [(r["depth"], r["fqn"], r["edge_path"]) for r in rows] == [
        (1, "Base.describe", ["Base.price", "Base.describe"]),
        (1, "Item.price", ["Base.price", "Item.price"]),
        (2, "Cart.total", ["Base.price", "Base.describe", "Cart.total"]),
        (2, "Item.cost", ["Base.price", "Item.price", "Item.cost"]),
        (3, "checkout", ["Base.price", "Base.describe", "Cart.total", "checkout"]),
        (3, "local_helper", ["Base.price", "Base.describe", "Cart.total", "local_helper"]),
    ]
    assert (rows[0]["path"], rows[0]["start_line"]) == ("shop/models.py", 8)


def test_calls_of_an_overridden_method_may_call_the_override(shop: Graph) -> None:
    # Base.describe's self.price() may run Item.price (ambiguous: or Base's own);
    # Item.price's super().price() names Base.price only, so it is no caller of itself
    assert shop.names("callers", "Item.price") == {("Item.cost", False), ("Base.describe", True)}
    assert shop.names("callers", "Base.price") == {("Base.describe", False), ("Item.price", False)}
    # callees are what a call names: Base.describe calls Base.price
    assert shop.names("callees", "Base.describe") == {("Base.price", False)}


def test_calls_through_a_subclass_are_callers_of_the_inherited_method(shop: Graph) -> None:
    assert shop.names("callers", "Named.label") == {
        ("tag", False), ("badge", False), ("default_label", False), ("Loud.label", False)}
    assert shop.names("callees", "badge") == {("Named.label", False)}
    # Loud overrides label: a Tagged receiver may be a Loud; Tagged.label(...), in
    # default_label and in Loud.label itself, names the class: it calls the base's
    assert shop.names("callers", "Loud.label") == {("tag", True), ("badge", True)}


def test_recursion_and_mutual_recursion_end(shop: Graph) -> None:
    assert shop.names("callers", "countdown", 10) == {("countdown", False)}
    assert shop.names("callees", "countdown", 10) == {("countdown", False)}
    rows = shop.rows("SELECT depth, fqn, edge_path FROM rag.callers('ping', 10) ORDER BY depth")
    assert [(r["depth"], r["fqn"], r["edge_path"]) for r in rows] == [
        (1, "pong", ["ping", "pong"]), (2, "ping", ["ping", "pong", "ping"])]


def test_subtypes_supertypes_and_containment(shop: Graph) -> None:
    assert shop.names("subtypes", "Base") == {("Item", False), ("Cart", False)}
    assert shop.names("supertypes", "Item") == {("Base", False)}
    members = shop.rows("SELECT fqn FROM rag.traverse('Cart', ARRAY['contains'], 'out', 1)")
    assert [r["fqn"] for r in members] == ["Cart.total"]


def test_find_symbols_by_name_fqn_and_path(shop: Graph) -> None:
    found = shop.rows("SELECT fqn, path, kind, signature, total FROM rag.find_symbols('price')")
    assert {(r["fqn"], r["kind"]) for r in found} == {("Base.price", "METHOD"), ("Item.price", "METHOD")}
    assert found[0]["total"] == 2 and found[0]["signature"] == "def price(self):"
    assert [r["fqn"] for r in shop.rows("SELECT fqn FROM rag.find_symbols('Item.price')")] == ["Item.price"]
    by_path = shop.rows("SELECT fqn FROM rag.find_symbols('util/report.py:render')")
    assert [r["fqn"] for r in by_path] == ["render"]
    classes = shop.rows("SELECT fqn FROM rag.find_symbols('Cart', NULL, ARRAY['CLASS'])")
    assert [r["fqn"] for r in classes] == ["Cart"]


def test_an_ambiguous_symbol_names_its_candidates(shop: Graph) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"'render' is ambiguous: 2 .*util/format.py:render"):
        shop.rows("SELECT * FROM rag.callers('render')")
    with pytest.raises(psycopg.errors.NoDataFound, match="no such definition"):
        shop.rows("SELECT * FROM rag.callers('nothing_here')")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="relations must be"):
        shop.rows("SELECT * FROM rag.traverse('ping', ARRAY['eats'])")


def test_a_syntax_error_keeps_what_was_found(shop: Graph) -> None:
    found = shop.rows("SELECT s.fqn FROM rag.symbols s JOIN rag.files f ON f.id = s.file_id"
                      " WHERE f.path = 'util/broken.py' ORDER BY s.start_line")
    assert found[0]["fqn"] == "fine"


def test_status_counts(shop: Graph) -> None:
    [status] = shop.rows("SELECT * FROM rag.graph_status()")
    assert status["pending"] == 0
    assert status["refs"] == status["resolved"] + status["ambiguous"] + status["unresolved"] + status["modules"]
    assert status["ambiguous"] == 2 and status["unresolved"] >= 1
    # dynamic dispatch: entry.record() (two methods record) and x.submit() (one, found by name only)
    assert status["dynamic"] == 2


def test_a_change_re_resolves_only_the_references_it_can_affect(shop: Graph) -> None:
    versions = ("SELECT r.path, r.line, r.name, x.xmin::text AS version, r.status FROM rag.ref_status r"
                " LEFT JOIN rag.ref_resolution x ON x.ref_id = r.id")
    before = {(r["path"], r["line"], r["name"]): r for r in shop.rows(versions)}
    helpers = shop.root / "shop" / "helpers.py"
    original = helpers.read_text()
    try:
        helpers.write_text("def local_helper():\n    return None\n")  # tax() is gone
        shop.index()
        after = {(r["path"], r["line"], r["name"]): r for r in shop.rows(versions)}
        assert after[("shop/orders.py", 3, "tax")]["status"] == "unresolved"
        assert after[("shop/checkout.py", 12, "tax")]["status"] == "unresolved"
        changed = {key for key, row in after.items() if key in before
                   and row["version"] != before[key]["version"]}
        assert changed == {("shop/orders.py", 3, "tax"), ("shop/checkout.py", 12, "tax"),
                           ("shop/checkout.py", 13, "local_helper")}
    finally:
        helpers.write_text(original)
        shop.index()
    assert shop.ref("shop/orders.py", "tax")["status"] == "resolved"


def test_a_batch_of_a_changed_and_a_new_file_replaces_one_graph_and_adds_the_other(
    graph_of: Callable[[str], Graph],
) -> None:
    """Only files stored before have graph rows to forget (rag._replace_graph's stored_ids)."""
    made = graph_of("python")
    helpers, fees = made.root / "shop" / "helpers.py", made.root / "shop" / "fees.py"
    helpers.write_text("def local_helper():\n    return rate()\n")  # tax() moves to fees.py
    fees.write_text("def tax(amount):\n    return amount\n\n\ndef rate():\n    return 1\n")
    made.index()
    symbols = made.rows("SELECT f.path, s.fqn, s.start_line FROM rag.symbols s JOIN rag.files f ON f.id = s.file_id"
                        " WHERE f.path IN ('shop/helpers.py', 'shop/fees.py') ORDER BY 1, 2")
    assert [tuple(r.values()) for r in symbols] == [
        ("shop/fees.py", "rate", 5), ("shop/fees.py", "tax", 1), ("shop/helpers.py", "local_helper", 1)]
    assert made.ref("shop/helpers.py", "rate")["target_path"] == "shop/fees.py"
    assert made.ref("shop/helpers.py", "rate")["from_id"] is not None
    assert made.ref("shop/orders.py", "tax")["target_path"] == "shop/fees.py"


def test_a_deleted_file_and_a_removed_source_take_their_graph_along(
    graph_of: Callable[[str], Graph],
) -> None:
    """No foreign keys do it (migration 0007): rag.delete_files and rag.remove_source do."""
    made = graph_of("python")
    counts = ("SELECT (SELECT count(*) FROM rag.symbols) AS symbols, (SELECT count(*) FROM rag.refs) AS refs,"
              " (SELECT count(*) FROM rag.code_modules) AS modules,"
              " (SELECT count(*) FROM rag.ref_resolution) AS resolutions,"
              " (SELECT count(*) FROM rag.refs r WHERE NOT EXISTS"
              "   (SELECT 1 FROM rag.files f WHERE f.id = r.file_id)) AS orphans")
    before = made.rows(counts)[0]
    assert before["symbols"] and before["refs"] and before["modules"] and before["resolutions"]
    (made.root / "shop" / "helpers.py").unlink()
    made.index()
    after = made.rows(counts)[0]
    assert after["orphans"] == 0 and after["symbols"] < before["symbols"] and after["modules"] < before["modules"]
    assert made.ref("shop/orders.py", "tax")["status"] == "unresolved"  # re-resolved: its target is gone
    made.rows("SELECT rag.remove_source(%s)", made.source)
    assert made.rows(counts)[0] == {"symbols": 0, "refs": 0, "modules": 0, "resolutions": 0, "orphans": 0}


def test_a_graph_emptied_as_by_a_crash_is_extracted_again_by_the_next_run(
    graph_of: Callable[[str], Graph], caplog: pytest.LogCaptureFixture
) -> None:
    """The graph's tables are unlogged (migration 0009): crash recovery empties them and restarts their ids."""
    made = graph_of("python")
    graph = ("SELECT f.path, r.name, r.line, x.resolved_by, t.fqn AS target FROM rag.refs r"
             " JOIN rag.files f ON f.id = r.file_id LEFT JOIN rag.ref_resolution x ON x.ref_id = r.id"
             " LEFT JOIN rag.symbols t ON t.id = x.target_id ORDER BY 1, 2, 3")
    before = made.rows(graph)
    assert before and made.rows("SELECT rag.ensure_graph_data() AS r") == [{"r": False}]  # intact
    with psycopg.connect(made.target.url, autocommit=True) as conn:
        conn.execute("TRUNCATE rag.symbols, rag.refs, rag.code_modules, rag.ref_resolution, rag.ref_candidates,"
                     " rag.graph_data_intact RESTART IDENTITY")
    made.index()
    assert "the code graph was emptied by a database crash" in caplog.text
    assert made.rows(graph) == before


@pytest.mark.parametrize(
    ("name", "target_path", "signature"),
    [
        ("area", "lib/shapes.py", "def area(side):"),  # the module, not its stub beside it
        ("fast", "lib/native.pyi", "def fast(x: int) -> int: ..."),  # a stub alone (a C extension's)
        ("convert", "lib/conv.py", "def convert(x):"),  # overloads and their implementation: one
    ],
)
def test_stubs_and_overloads_are_not_ambiguities(graph_of: Callable[[str], Graph], name: str,
                                                 target_path: str, signature: str) -> None:
    stubs = graph_of("stubs_py")
    ref = stubs.ref("app.py", name, 7)
    assert (ref["status"], ref["resolved_by"], ref["target_path"]) == ("resolved", "import", target_path)
    [target] = stubs.rows("SELECT signature FROM rag.symbols WHERE id = %s", ref["target_id"])
    assert target["signature"] == signature


def test_resolving_again_on_one_connection_plans_each_time(graph_of: Callable[[str], Graph]) -> None:
    """After five calls a connection's cached plans turn generic (made for ten
    pending references): Django's 134k then took 25 s instead of 3. Resolving
    the whole source seven times on one connection gives the same answer each time."""
    made = graph_of("python")
    made.index()
    assert "plan_cache_mode=force_custom_plan" in made.rows(
        "SELECT proconfig FROM pg_proc WHERE proname = 'resolve_refs'")[0]["proconfig"]
    answers = set()
    with psycopg.connect(made.target.url, autocommit=True) as conn:
        for _ in range(7):
            conn.execute("DELETE FROM rag.ref_resolution; DELETE FROM rag.ref_candidates;"
                         " UPDATE rag.graph_sources SET resolved_upto = 0")
            conn.execute("SELECT rag.resolve_refs(id) FROM rag.sources")
            answers.add(tuple(conn.execute("SELECT ref_id, resolved_by, target_id, candidates"
                                           " FROM rag.ref_resolution ORDER BY ref_id").fetchall()))
    assert len(answers) == 1 and len(next(iter(answers))) > 20

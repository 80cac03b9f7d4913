"""References resolved through re-exports: a package's __init__.py importing
what it offers (by name, alias or *), a TypeScript barrel (export * from,
export { X as Y } from, export * as ns from); cycles end, ambiguity is kept, a changed re-export
re-resolves the references that went through it."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from graphdb import Expected, Graph, expectations

# Graphs come through request.getfixturevalue, which the automatic db marker cannot see.
pytestmark = pytest.mark.db


@contextmanager
def edited(graph: Graph, path: str, change: Callable[[str], str | None]) -> Iterator[None]:
    """The project indexed with ``path``'s text changed (None: the file deleted); restored after."""
    file = graph.root / path
    original = file.read_text()
    try:
        changed = change(original)
        if changed is None:
            file.unlink()
        else:
            file.write_text(changed)
        graph.index()
        yield
    finally:
        file.write_text(original)
        graph.index()


@pytest.fixture(scope="module")
def python(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("reexport_py")


@pytest.fixture(scope="module")
def typescript(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("reexport_ts")


@pytest.mark.parametrize("expected", expectations("reexport_py") + expectations("reexport_ts"), ids=str)
def test_re_exports_resolve_to_the_definition(request: pytest.FixtureRequest, expected: Expected) -> None:
    """Each reference the fixture files promise in a comment on its line (graphdb.expectations)."""
    expected.check(request.getfixturevalue("python" if expected.project == "reexport_py" else "typescript"))


def test_two_star_re_exports_of_one_name_stay_ambiguous(python: Graph) -> None:
    ref = python.ref("app/views.py", "helper", 11)
    assert (ref["status"], ref["resolved_by"], ref["candidate_fqns"]) == (
        "ambiguous", "import", ["helper@pkg/mixed/one.py", "helper@pkg/mixed/two.py"])


def test_a_namespace_re_export_offers_only_the_namespace(typescript: Graph) -> None:
    """`export * as units` does not make the barrel offer `cents` itself."""
    assert typescript.ref("src/app.ts", "cents", 1)["status"] == "unresolved"


def test_a_re_export_cycle_ends_unresolved(python: Graph, typescript: Graph) -> None:
    assert python.ref("app/views.py", "Thing", 12)["status"] == "unresolved"
    assert typescript.ref("src/app.ts", "Loop", 6)["status"] == "unresolved"


def test_callers_reach_through_a_barrel(typescript: Graph) -> None:
    assert typescript.names("callers", "money") == {("checkout", False)}


def test_a_changed_re_export_re_resolves_the_references_through_it(python: Graph) -> None:
    def realias(text: str) -> str:
        return text.replace("from .query import QuerySet as Manager", "from .base import Model as Manager")

    with edited(python, "pkg/models/__init__.py", realias):
        ref = python.ref("app/views.py", "Manager", 10)
        assert (ref["status"], ref["target"], ref["target_path"]) == ("resolved", "Model", "pkg/models/base.py")
        # Manager.all(): Model has no all
        assert python.ref("app/views.py", "all", 13)["status"] == "unresolved"
        # what did not go through the change keeps its target
        assert python.ref("app/views.py", "CharField", 9)["target_path"] == "pkg/models/fields.py"
    assert python.ref("app/views.py", "Manager", 10)["target"] == "QuerySet"
    assert python.ref("app/views.py", "all", 13)["target"] == "QuerySet.all"


def test_an_edit_that_keeps_the_re_exports_re_resolves_nothing_through_them(python: Graph) -> None:
    versions = ("SELECT r.line, r.name, x.xmin::text AS version FROM rag.ref_status r"
                " JOIN rag.ref_resolution x ON x.ref_id = r.id WHERE r.path = 'app/views.py'")
    before = {(r["line"], r["name"]): r["version"] for r in python.rows(versions)}
    with edited(python, "pkg/models/__init__.py", lambda text: "# the models\n" + text):
        after = {(r["line"], r["name"]): r["version"] for r in python.rows(versions)}
        assert after == before


def test_a_deleted_barrel_takes_the_references_through_it_along(typescript: Graph) -> None:
    with edited(typescript, "src/lib/index.ts", lambda text: None):
        assert typescript.ref("src/app.ts", "Cart", 5)["status"] == "unresolved"
        assert typescript.ref("src/app.ts", "formatMoney", 7)["status"] == "unresolved"
    assert typescript.ref("src/app.ts", "Cart", 5)["target_path"] == "src/lib/cart.ts"


def test_a_removed_star_re_export_re_resolves_what_it_passed_on_from_further_hops(
    typescript: Graph,
) -> None:
    """The barrel stops `export * from "./shapes"`: Circle, which shapes.ts only
    passes on from circle.ts, is no longer offered by it."""
    with edited(typescript, "src/lib/index.ts", lambda text: text.replace('export * from "./shapes";\n', "")):
        assert typescript.ref("src/app.ts", "Circle", 15)["status"] == "unresolved"
        assert typescript.ref("src/app.ts", "Cart", 5)["target_path"] == "src/lib/cart.ts"
    assert typescript.ref("src/app.ts", "Circle", 15)["target_path"] == "src/lib/circle.ts"

"""References resolved through re-exports: a package's __init__.py importing
what it offers (by name, alias or *), a TypeScript barrel (export * from,
export { X as Y } from, export * as ns from), a CommonJS front (module.exports.x = require(),
exports.x = …, module.exports = { a: require(), b }, module.exports = require()); cycles end,
ambiguity is kept, a changed re-export re-resolves the references that went through it; a
package.json's entry files."""

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


@pytest.fixture(scope="module")
def commonjs(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("reexport_cjs")


_FIXTURES = {"reexport_py": "python", "reexport_ts": "typescript", "reexport_cjs": "commonjs"}


@pytest.mark.parametrize("expected", [e for project in _FIXTURES for e in expectations(project)], ids=str)
def test_re_exports_resolve_to_the_definition(request: pytest.FixtureRequest, expected: Expected) -> None:
    """Each reference the fixture files promise in a comment on its line (graphdb.expectations)."""
    expected.check(request.getfixturevalue(_FIXTURES[expected.project]))


def test_commonjs_module_exports_of_a_module_offers_all_of_it(commonjs: Graph) -> None:
    """``module.exports = require("./index")``: an import of the whole module, as ``export *``."""
    refs = commonjs.rows("SELECT s.status, r.target_stems FROM rag.ref_status s JOIN rag.refs r ON r.id = s.id"
                         " WHERE s.path = 'all.js'")
    assert [(r["status"], r["target_stems"]) for r in refs] == [("module", ["/index"])]


def test_commonjs_values_defined_in_the_module_are_no_imports(commonjs: Graph) -> None:
    imports = commonjs.rows("SELECT r.name FROM rag.refs r JOIN rag.files f ON f.id = r.file_id"
                            " WHERE f.path = 'index.js' AND r.kind = 'import' ORDER BY r.line")
    assert [r["name"] for r in imports] == ["pricing", "cart", "transport", "levels"]


def test_a_package_json_names_its_entry_files(commonjs: Graph) -> None:
    """main, types and the "." and "./cart" exports (conditions nested, a wildcard and
    ./package.json left out, ./esm/index.mjs not in the tree): whole-module imports of the
    package.json, which rag._entry_chunks reads."""
    refs = commonjs.rows("SELECT s.name, r.target_stems, s.status FROM rag.ref_status s JOIN rag.refs r ON r.id = s.id"
                         " WHERE s.path = 'package.json'")
    assert sorted(s for r in refs for s in r["target_stems"]) == [
        "/esm/index", "/index", "/index.d", "/lib/cart"]
    assert {(r["name"], r["status"]) for r in refs} == {("*", "module")}
    entries = commonjs.rows("SELECT f.path FROM rag._entry_chunks('{}', '{}', NULL, NULL, NULL, NULL) e"
                            " JOIN rag.chunks c ON c.id = e.chunk_id JOIN rag.files f ON f.id = c.file_id")
    assert sorted(r["path"] for r in entries) == ["index.d.ts", "index.js", "lib/cart.js"]


@pytest.mark.parametrize(("query", "expected"), [("index.transport", "lib/transport.js"),
                                               ("index.levels", "lib/levels.js")])
def test_a_symbol_query_through_a_front_finds_the_definition(commonjs: Graph, query: str, expected: str) -> None:
    """The module a query names does not define the name but re-exports it (index.js): the
    definition its re-export resolved to ranks first."""
    found = commonjs.rows("SELECT s.path FROM rag.search(%s, top_k => 3) s", query)
    assert found[0]["path"] == expected

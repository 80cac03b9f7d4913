"""The code graph of Rust, C, C++ and Ruby fixture projects: each reference kind resolved, ambiguity kept."""

from collections.abc import Callable

import pytest
from graphdb import Expected, Graph, expectations
from typer.testing import CliRunner

from rag.cli import app


@pytest.fixture(scope="module")
def project(graph_of: Callable[[str], Graph]) -> Callable[[str], Graph]:
    """``project("rust")``: the fixture project indexed once for the module."""
    made: dict[str, Graph] = {}

    def get(name: str) -> Graph:
        if name not in made:
            made[name] = graph_of(name)
        return made[name]

    return get


@pytest.mark.parametrize("expected", [e for language in ("rust", "c", "cpp", "ruby")
                                      for e in expectations(language)], ids=str)
def test_each_reference_kind_resolves(project: Callable[[str], Graph], expected: Expected) -> None:
    """Each reference a fixture file promises in a comment on its line (graphdb.expectations)."""
    expected.check(project(expected.project))


def test_rust_impls_and_ambiguity(project: Callable[[str], Graph]) -> None:
    rust = project("rust")
    # the impl of Priced for Cart is Priced's subtype (its self.total() is Cart's own: cart.rs says so)
    assert rust.rows("SELECT kind FROM rag.subtypes('Priced')") == [{"kind": "IMPL"}]
    # shared() is defined in two files of the folder: kept with both
    ref = rust.ref("src/main.rs", "shared")
    assert (ref["status"], ref["resolved_by"]) == ("ambiguous", "folder")
    assert ref["candidate_fqns"] == ["shared@src/other.rs", "shared@src/util.rs"]


def test_c_ambiguity_function_pointers_and_builtins(project: Callable[[str], Graph]) -> None:
    c = project("c")
    ref = c.ref("src/twice.c", "shared")  # no header included: two definitions in the folder
    assert (ref["status"], ref["resolved_by"]) == ("ambiguous", "folder")
    assert ref["candidate_fqns"] == ["shared@src/other.c", "shared@src/util.c"]
    assert c.ref("src/main.c", "run")["status"] == "unresolved"  # through a function pointer
    assert not c.rows("SELECT 1 FROM rag.refs WHERE name = 'printf'")


def test_includes_count_as_module_imports_not_unresolved(project: Callable[[str], Graph],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    c = project("c")
    # the seven #include "..." lines (not <stdio.h>): whole modules, no definition to resolve to
    statuses = c.rows("SELECT status, count(*) AS n FROM rag.ref_status WHERE kind = 'import' GROUP BY 1")
    assert statuses == [{"status": "module", "n": 7}]
    [counts] = c.rows("SELECT * FROM rag.graph_status()")
    assert counts["modules"] == 7
    assert counts["refs"] == counts["resolved"] + counts["ambiguous"] + counts["unresolved"] + 7
    monkeypatch.setenv("RAG_DATABASE_URL", c.target.url)
    status = CliRunner().invoke(app, ["status"], catch_exceptions=False).stdout
    assert f"{counts['unresolved']:,} unresolved, 7 whole-module imports;" in status


def test_cpp_typed_receivers_and_ambiguity(project: Callable[[str], Graph]) -> None:
    cpp = project("cpp")
    areas = cpp.rows("SELECT t.fqn FROM rag.ref_status r JOIN rag.symbols t ON t.id = r.target_id"
                     " WHERE r.path = 'src/main.cpp' AND r.name = 'area' ORDER BY 1")
    assert [r["fqn"] for r in areas] == ["geo.Circle.area", "geo.Shape.area"]
    ref = cpp.ref("src/main.cpp", "scale")
    assert (ref["status"], ref["resolved_by"]) == ("ambiguous", "folder")
    assert ref["candidate_fqns"] == ["scale@src/circle.cpp", "scale@src/other.cpp"]
    assert cpp.names("subtypes", "geo.Shape") == {("geo.Circle", False), ("Square", False), ("Round", False)}


def test_ruby_dynamic_dispatch_stays_ambiguous(project: Callable[[str], Graph]) -> None:
    ruby = project("ruby")
    ref = ruby.ref("lib/shop/cart.rb", "price")  # tag.price: any method price
    assert (ref["status"], ref["resolved_by"], ref["candidates"]) == ("ambiguous", "name", 2)
    assert ruby.names("supertypes", "Cart") == {("Base", False), ("Priced", False)}
    assert not ruby.rows("SELECT 1 FROM rag.refs WHERE name IN ('require_relative', 'include')")

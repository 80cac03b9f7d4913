"""The code graph of Rust, C, C++ and Ruby fixture projects: each reference kind resolved, ambiguity kept."""

from collections.abc import Callable

import pytest
from graphdb import Graph
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


def check(graph: Graph, path: str, name: str, line: int | None, resolved_by: str, target: str,
          target_path: str) -> None:
    ref = graph.ref(path, name, line)
    assert (ref["status"], ref["resolved_by"], ref["target"], ref["target_path"]) == (
        "resolved", resolved_by, target, target_path)


@pytest.mark.parametrize(
    ("language", "path", "name", "line", "resolved_by", "target", "target_path"),
    [
        # Rust: use a::b::{C, T}; use a::f as alias; a module path util::parse()
        ("rust", "src/main.rs", "Cart", 1, "import", "Cart", "src/models/cart.rs"),
        ("rust", "src/main.rs", "Priced", None, "import", "Priced", "src/models/cart.rs"),
        ("rust", "src/main.rs", "money", 8, "import", "format", "src/util.rs"),
        ("rust", "src/main.rs", "parse", None, "import", "parse", "src/util.rs"),
        # Type::f() through the import, a receiver typed by its parameter and by Type::new()
        ("rust", "src/main.rs", "new", None, "import", "Cart.new", "src/models/cart.rs"),
        ("rust", "src/main.rs", "total", None, "import", "Cart.total", "src/models/cart.rs"),
        ("rust", "src/main.rs", "price", None, "import", "Cart.price", "src/models/cart.rs"),
        # recursion
        ("rust", "src/main.rs", "checkout", None, "file", "checkout", "src/main.rs"),
        # self.f() and Self::f() in an impl; a struct literal constructs its type, not the impl
        ("rust", "src/models/cart.rs", "sum", None, "file", "Cart.sum", "src/models/cart.rs"),
        ("rust", "src/models/cart.rs", "fee", None, "file", "Cart.fee", "src/models/cart.rs"),
        ("rust", "src/models/cart.rs", "Cart", 14, "file", "Cart", "src/models/cart.rs"),
        # impl Trait for Type; self.f() in a trait's default method
        ("rust", "src/models/cart.rs", "Priced", None, "file", "Priced", "src/models/cart.rs"),
        ("rust", "src/models/cart.rs", "price", 4, "file", "Priced.price", "src/models/cart.rs"),
        # C: same file, recursion
        ("c", "src/main.c", "local", None, "file", "local", "src/main.c"),
        ("c", "src/main.c", "main", None, "file", "main", "src/main.c"),
        # declared in the included header, defined in the file of the header's stem,
        # from the folder or another one ("../util.h")
        ("c", "src/main.c", "helper", None, "include", "helper", "src/util.c"),
        ("c", "src/main.c", "shared", None, "include", "shared", "src/util.c"),
        ("c", "src/app/start.c", "shared", None, "include", "shared", "src/util.c"),
        ("c", "src/app/start.c", "helper", None, "include", "helper", "src/util.c"),
        # through an umbrella header (common.h includes util.h) ...
        ("c", "src/app/report.c", "shared", None, "include", "shared", "src/util.c"),
        # ... but not through common.c's own includes (secret.h): the folder's hidden()
        ("c", "src/app/report.c", "hidden", None, "folder", "hidden", "src/app/hidden.c"),
        # C++: a base class from the included header; this->f() on a method defined outside the class
        ("cpp", "src/circle.cpp", "Shape", None, "include", "geo.Shape", "src/shape.hpp"),
        ("cpp", "src/circle.cpp", "radius", None, "file", "geo.Circle.radius", "src/circle.cpp"),
        # a bare call in an out-of-line method: the namespace's function
        ("cpp", "src/circle.cpp", "helper", None, "file", "geo.helper", "src/circle.cpp"),
        ("cpp", "src/circle.cpp", "Circle", None, "file", "geo.Circle", "src/circle.cpp"),
        # a member called bare in its class
        ("cpp", "src/shape.hpp", "area", None, "file", "geo.Shape.area", "src/shape.hpp"),
        # ns::Type::f(), ns::f(), typed receivers (parameter, declaration, auto x = new T())
        ("cpp", "src/main.cpp", "make", None, "folder", "geo.Circle.make", "src/circle.cpp"),
        ("cpp", "src/main.cpp", "helper", 7, "folder", "geo.helper", "src/circle.cpp"),
        ("cpp", "src/main.cpp", "radius", None, "name", "geo.Circle.radius", "src/circle.cpp"),
        # `using namespace geo;`: a bare helper() may be geo::helper
        ("cpp", "src/main.cpp", "helper", 11, "folder", "geo.helper", "src/circle.cpp"),
        # `using geo::Shape;` in another folder, Shape from the included header
        ("cpp", "src/draw/canvas.cpp", "Shape", 4, "include", "geo.Shape", "src/shape.hpp"),
        # `namespace g = geo;`: g::Shape and g::helper() are geo's
        ("cpp", "src/draw/canvas.cpp", "Shape", 11, "include", "geo.Shape", "src/shape.hpp"),
        ("cpp", "src/draw/canvas.cpp", "helper", None, "name", "geo.helper", "src/circle.cpp"),
        # Ruby: superclass and an included module in another file of the folder
        ("ruby", "lib/shop/cart.rb", "Base", None, "folder", "Base", "lib/shop/base.rb"),
        ("ruby", "lib/shop/cart.rb", "Priced", None, "folder", "Priced", "lib/shop/base.rb"),
        # self.f() through the superclass, a method called bare in its class, X.new
        ("ruby", "lib/shop/cart.rb", "tax", None, "class", "Base.tax", "lib/shop/base.rb"),
        ("ruby", "lib/shop/cart.rb", "helper", None, "file", "Cart.helper", "lib/shop/cart.rb"),
        ("ruby", "lib/shop/cart.rb", "Item", None, "folder", "Item", "lib/shop/base.rb"),
        # Mod::Mod.f()
        ("ruby", "lib/shop/cart.rb", "money", None, "name", "Util.Format.money", "lib/util/format.rb"),
    ],
)
def test_each_reference_kind_resolves(project: Callable[[str], Graph], language: str, path: str, name: str,
                                      line: int | None, resolved_by: str, target: str, target_path: str) -> None:
    check(project(language), path, name, line, resolved_by, target, target_path)


def test_rust_impls_and_ambiguity(project: Callable[[str], Graph]) -> None:
    rust = project("rust")
    # the impl of Priced for Cart is Priced's subtype; its self.total() is Cart's own
    assert rust.rows("SELECT kind FROM rag.subtypes('Priced')") == [{"kind": "IMPL"}]
    check(rust, "src/models/cart.rs", "total", None, "file", "Cart.total", "src/models/cart.rs")
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

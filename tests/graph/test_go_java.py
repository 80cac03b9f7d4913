"""The code graph of Go and Java fixture projects: each reference kind resolved, ambiguity kept."""

from collections.abc import Callable

import pytest
from graphdb import Expected, Graph, expectations

JAVA = "src/main/java/com/"


@pytest.fixture(scope="module")
def go(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("go")


@pytest.fixture(scope="module")
def java(graph_of: Callable[[str], Graph]) -> Graph:
    return graph_of("java")


@pytest.mark.parametrize("expected", expectations("go"), ids=str)
def test_go_references(go: Graph, expected: Expected) -> None:
    """Each reference a fixture file promises in a comment on its line (graphdb.expectations)."""
    expected.check(go)


def test_go_calls_into_the_standard_library_stay_unresolved(go: Graph) -> None:
    assert go.ref("shop/cart.go", "Sprint")["status"] == "unresolved"
    assert not go.rows("SELECT 1 FROM rag.refs WHERE name = 'len'")
    assert go.names("callers", "helper") == {("Cart.Total", False), ("NewOrder", False)}


def test_go_embedding_is_a_base_whose_methods_are_promoted(graph_of: Callable[[str], Graph]) -> None:
    """Shop embeds Base (another file of the package): s.Describe() is Base's; an
    embedding Loud's own Describe overrides nothing (Go has no overriding)."""
    made = graph_of("go")
    shop = made.root / "shop"
    (shop / "base.go").write_text(
        'package shop\n\ntype Base struct{}\n\nfunc (b *Base) Describe() string {\n\treturn ""\n}\n')
    (shop / "shelf.go").write_text(
        "package shop\n\ntype Shop struct {\n\tBase\n\tname string\n}\n\n"
        "func (s *Shop) Open() string {\n\treturn s.Describe()\n}\n\n"
        "type Loud struct {\n\t*Base\n}\n\nfunc (l *Loud) Describe() string {\n\treturn \"!\"\n}\n\n"
        "type Namer interface {\n\tDescriber\n\tName() string\n}\n\ntype Describer interface {\n"
        "\tDescribe() string\n}\n"
    )
    made.index()
    ref = made.ref("shop/shelf.go", "Describe")
    assert (ref["status"], ref["resolved_by"], ref["target"], ref["target_path"]) == (
        "resolved", "inherited", "Base.Describe", "shop/base.go")
    assert made.names("subtypes", "Base") == {("Shop", False), ("Loud", False)}
    assert made.names("supertypes", "Namer") == {("Describer", False)}
    assert made.names("callers", "Loud.Describe") == set()


def test_go_files_at_the_root_are_one_package(graph_of: Callable[[str], Graph]) -> None:
    """A Go module's root package (most libraries' main one) is a folder too: its
    files see each other's functions, and an embedded type's methods, before
    same-named ones in other packages; other packages import it by go.mod's module path."""
    made = graph_of("go")
    (made.root / "main.go").write_text(
        "package app\n\ntype App struct {\n\tBase\n}\n\ntype Describer interface {\n\tDescribe() string\n}\n\n"
        "func run(a *App) string {\n\treturn helper() + a.Describe()\n}\n")
    (made.root / "helpers.go").write_text(
        "package app\n\nfunc helper() string {\n\treturn \"\"\n}\n\nfunc Run() {}\n\ntype Base struct{}\n\n"
        "func (b *Base) Describe() string {\n\treturn \"\"\n}\n")
    (made.root / "go.mod").write_text("module example.com/app\n\ngo 1.22\n")
    (made.root / "cmd" / "tool").mkdir(parents=True)
    (made.root / "cmd" / "tool" / "main.go").write_text(
        'package main\n\nimport "example.com/app"\n\nfunc main() {\n\tapp.Run()\n}\n\n'
        "func use(a *app.App) string {\n\treturn a.Describe()\n}\n")
    (made.root / "util" / "more.go").write_text(
        "package util\n\nfunc helper() string {\n\treturn \"\"\n}\n\ntype Other struct{}\n\n"
        "func (o *Other) Describe() string {\n\treturn \"\"\n}\n")
    made.index()
    found = [made.ref("main.go", name) for name in ("helper", "Describe")]
    assert [(ref["resolved_by"], ref["target"], ref["target_path"]) for ref in found] == [
        ("folder", "helper", "helpers.go"), ("inherited", "Base.Describe", "helpers.go")]
    # the root package imported by go.mod's module path
    ref = made.ref("cmd/tool/main.go", "Run")
    assert (ref["resolved_by"], ref["target"], ref["target_path"]) == ("import", "Run", "helpers.go")
    ref = made.ref("cmd/tool/main.go", "Describe")  # a parameter of an imported type
    assert (ref["resolved_by"], ref["target"], ref["target_path"]) == ("inherited", "Base.Describe", "helpers.go")
    # (App has Describe through Base; Other, of another package, has its own)
    assert made.names("subtypes", "Describer") == {("Base", False), ("App", False), ("Other", False)}


def test_go_types_satisfy_the_interfaces_whose_methods_they_have(graph_of: Callable[[str], Graph]) -> None:
    """Nothing declares that a Go type implements an interface: File has Read, so it
    is a Reader; Pipe (its methods in another file of the package) is a ReadCloser
    too, and so is Tee, which embeds Pipe. A call through the interface may run any
    of them: an ambiguous caller of each implementation."""
    made = graph_of("go")
    shop = made.root / "shop"
    (shop / "stream.go").write_text(
        "package shop\n\ntype Reader interface {\n\tRead() string\n}\n\n"
        "type ReadCloser interface {\n\tReader\n\tClose() error\n}\n\n"
        "type File struct{}\n\nfunc (f *File) Read() string {\n\treturn \"\"\n}\n\n"
        "type Pipe struct{}\n\ntype Tee struct {\n\t*Pipe\n}\n\n"
        "func drain(r Reader) string {\n\treturn r.Read()\n}\n")
    (shop / "pipe.go").write_text(
        "package shop\n\nfunc (p *Pipe) Read() string {\n\treturn \"\"\n}\n\n"
        "func (p *Pipe) Close() error {\n\treturn nil\n}\n")
    made.index()
    ref = made.ref("shop/stream.go", "Read")
    assert (ref["status"], ref["target"]) == ("resolved", "Reader.Read")
    assert made.names("subtypes", "Reader") == {
        ("File", False), ("Pipe", False), ("Tee", False), ("ReadCloser", False)}
    assert made.names("subtypes", "ReadCloser") == {("Pipe", False), ("Tee", False)}  # File has no Close
    assert made.names("supertypes", "File") == {("Reader", False)}
    assert made.names("supertypes", "Tee") == {("Pipe", False), ("Reader", False), ("ReadCloser", False)}
    assert made.names("callers", "File.Read") == {("drain", True)}
    assert made.names("callers", "Pipe.Read") == {("drain", True)}
    assert made.names("callers", "Pipe.Close") == set()
    assert made.names("callees", "drain") == {("Reader.Read", False)}


@pytest.mark.parametrize("expected", expectations("java"), ids=str)
def test_java_references(java: Graph, expected: Expected) -> None:
    """Each reference a fixture file promises in a comment on its line (graphdb.expectations)."""
    expected.check(java)


def test_java_implicit_this_and_types(java: Graph) -> None:
    # count() and this.count() both mean the class's own method
    rows = java.rows("SELECT r.status, t.fqn FROM rag.ref_status r JOIN rag.symbols t ON t.id = r.target_id"
                     " WHERE r.name = 'count'")
    assert {(r["status"], r["fqn"]) for r in rows} == {("resolved", "Cart.count")}
    assert java.names("subtypes", "Base") == {("Cart", False), ("Item", False)}
    assert java.names("supertypes", "Cart") == {("Base", False), ("Priced", False)}
    # Item.price -> Cart.total -> Item.price: a cycle, walked once (Cart.make().total(): the
    # receiver's type is a call's result, unknown, so that edge is dynamic dispatch)
    assert ("Cart.total", False) not in java.names("callees", "Item.price")
    rows = java.rows("SELECT depth, fqn FROM rag.traverse('Item.price', ARRAY['calls'], 'out', 5, dynamic => true)"
                     " ORDER BY depth, fqn")
    assert [(r["depth"], r["fqn"]) for r in rows] == [
        (1, "Cart.make"), (1, "Cart.total"), (2, "Cart"), (2, "Cart.count"), (2, "Item.price"),
        (3, "Base.price"), (3, "Format.money"), (3, "Format.width"), (3, "Format.width")]  # both overloads


def test_java_overloads_stay_candidates(java: Graph) -> None:
    """Format.width(String) and Format.width(char): which one only the argument's type says."""
    ref = java.ref(JAVA + "shop/Cart.java", "width")
    assert (ref["status"], ref["resolved_by"], ref["candidates"]) == ("ambiguous", "import", 2)


def test_java_a_typed_receivers_inherited_method_is_found_through_its_package(
    graph_of: Callable[[str], Graph],
) -> None:
    """s.price() with s a Sale: Sale, in another file of the package, inherits price from Base."""
    made = graph_of("java")
    shop = made.root / JAVA / "shop"
    (shop / "Sale.java").write_text("package com.shop;\n\npublic class Sale extends Base {\n}\n")
    (shop / "Shelf.java").write_text(
        "package com.shop;\n\npublic class Shelf {\n    int show(Sale s) {\n        return s.price();\n    }\n}\n"
    )
    made.index()
    ref = made.ref(JAVA + "shop/Shelf.java", "price")
    assert (ref["status"], ref["resolved_by"], ref["target"], ref["target_path"]) == (
        "resolved", "inherited", "Base.price", JAVA + "shop/Base.java")

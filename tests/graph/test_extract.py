"""Extraction alone (no database): definitions for every grammar, bad input, the stored payload."""

import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from graphdb import Graph

from rag import db
from rag.dispatcher import chunk_bytes, chunk_code_with_graph
from rag.graph import extract
from rag.graph.extract import MAX_REFS_PER_FILE
from rag.graph.model import CodeGraph


def graph(text: str, path: str, language: str) -> CodeGraph:
    chunks, found = chunk_code_with_graph(text, path, language, max_tokens=200, overlap=20)
    assert chunks and found is not None
    return found


@pytest.mark.parametrize(
    ("language", "path", "text", "fqns"),
    [
        ("csharp", "Cart.cs", "class Cart {\n  int Total() { return Helper(); }\n}\n", ["Cart", "Cart.Total"]),
        ("php", "cart.php", "<?php\nclass Cart {\n  function total() { return helper(); }\n}\n",
         ["Cart", "Cart.total"]),
        ("kotlin", "Cart.kt", "class Cart {\n  fun total(): Int { return helper() }\n}\n", ["Cart", "Cart.total"]),
    ],
)
def test_other_languages_give_definitions_only(language: str, path: str, text: str, fqns: list[str]) -> None:
    found = graph(text, path, language)
    assert [s.fqn for s in found.symbols] == fqns
    assert found.refs == []


def test_symbols_match_the_chunks_fqns() -> None:
    text = Path(__file__).parent.joinpath("fixtures/python/shop/models.py").read_text()
    chunks, found = chunk_code_with_graph(text, "shop/models.py", "python", max_tokens=30, overlap=0)
    assert found is not None
    chunk_fqns = {c.metadata["fqn"] for c in chunks if "fqn" in c.metadata}
    assert chunk_fqns <= {s.fqn for s in found.symbols}
    kinds = {s.fqn: s.kind for s in found.symbols}
    assert kinds["Item.cost"] == "METHOD" and kinds["save"] == "FUNCTION" and kinds["Cart"] == "CLASS"


def test_a_syntax_error_keeps_the_definitions_before_it() -> None:
    found = graph("def ok():\n    return helper()\n\ndef broken(:\n    pass\n", "a.py", "python")
    assert "ok" in [s.fqn for s in found.symbols]
    assert [r.name for r in found.refs if r.scope == "ok"] == ["helper"]


def test_a_generated_file_with_ten_thousand_calls_is_capped() -> None:
    body = "".join(f"    f{i}()\n" for i in range(MAX_REFS_PER_FILE + 5000))
    found = graph(f"def main():\n{body}", "gen.py", "python")
    assert len(found.refs) == MAX_REFS_PER_FILE and found.truncated
    again = graph("def main():\n" + "    f()\n" * 10_000, "gen.py", "python")
    assert len(again.refs) == 1  # the same call repeated is one reference


def test_the_dispatcher_carries_the_graph_and_documents_have_none() -> None:
    assert chunk_bytes(b"def f():\n    return g()\n", "a.py").graph is not None
    assert chunk_bytes(b"# Title\n\nText.\n", "a.md").graph is None
    payload = chunk_bytes(b"import os\n\ndef f():\n    return os.path.join()\n", "pkg/a.py").graph
    assert payload is not None
    assert payload.payload() == {
        "modules": ["pkg/a"],
        "symbols": [["f", "FUNCTION", 3, 4, "def f():", -1]],
        "refs": [{"kind": "call", "name": "join", "line": 4, "scope": 0, "stems": ["os/path", "os"],
                  "fqns": ["join", "path.join"], "imported": True}],
    }


def test_a_name_defined_500_times_is_listed_with_a_cap_and_the_count(
    rag_dbs: Callable[[], db.DatabaseTarget], tmp_path: Path
) -> None:
    many = tmp_path / "many"
    many.mkdir()
    (many / "classes.py").write_text("".join(
        f"class C{i}:\n    def __init__(self):\n        pass\n\n" for i in range(500)))
    made = Graph(rag_dbs(), many, "many")
    made.index()
    rows = made.rows("SELECT fqn, total FROM rag.find_symbols('__init__')")
    assert len(rows) == 50 and rows[0]["total"] == 500
    assert len(made.rows("SELECT 1 FROM rag.find_symbols('__init__', max_rows => 600)")) == 500


def test_a_file_without_definitions_keeps_its_references() -> None:
    found = graph("import os\nos.makedirs('x')\n", "ok.py", "python")
    assert found.symbols == [] and [r.name for r in found.refs] == ["makedirs"]


def test_a_call_naming_its_class_is_told_from_one_on_a_typed_receiver() -> None:
    """Base.greet(self) runs Base's greet; x.greet() with x: Base may run an override."""
    text = ("from app import Shared\n\n\nclass Base:\n    def greet(self):\n        return 1\n\n\n"
            "def use(x: Base, y: Shared):\n    return Base.greet(x) + x.greet() + Shared.greet(y) + y.greet()\n")
    found = graph(text, "app/base.py", "python")
    calls = [(r.owner, r.imported, r.explicit_class) for r in found.refs if r.name == "greet"]
    assert calls == [("Base", False, True), ("Base", False, False), ("Shared", True, True), ("Shared", True, False)]


@pytest.mark.parametrize(
    ("path", "include", "stems"),
    [
        ("src/main.c", '"util.h"', ["/src/util", "util"]),  # next to the file, or an include folder's
        ("src/app/start.c", '"../lib/util.h"', ["/src/lib/util", "lib/util"]),
        ("main.c", '"../outside.h"', ["outside"]),  # above the source: an include folder's only
        ("main.c", "<stdio.h>", None),  # the system's: no reference
    ],
)
def test_a_c_include_imports_everything_of_the_headers_stem(path: str, include: str,
                                                            stems: list[str] | None) -> None:
    found = graph(f"#include {include}\nint f(void) {{ return g(); }}\n", path, "c")
    imports = [r for r in found.refs if r.kind == "import"]
    if stems is None:
        assert imports == []
        return
    assert [(r.name, r.imported, [stem for stem, _ in r.targets]) for r in imports] == [("*", True, stems)]
    call = next(r for r in found.refs if r.kind == "call")
    assert (call.name, call.imported, call.keys) == ("g", False, ("f.<locals>.g", "g"))


def test_extraction_pauses_the_garbage_collector_and_leaves_it_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = extract.walk_definitions

    def watched(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(extract, "walk_definitions", watched)
    graph("def f():\n    return g()\n", "a.py", "python")
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        graph("def f():\n    return g()\n", "a.py", "python")
        assert not gc.isenabled()  # (not turned on by extraction either)
    finally:
        gc.enable()

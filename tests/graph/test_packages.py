"""A package.json's entry files (rag/languages/javascript/packages.py), no database: each field
npm documents, ``exports`` as a string, conditions or subpaths, and odd or broken manifests,
which give what could be read and never fail the file."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.dispatcher import chunk_bytes
from rag.languages.javascript.packages import MAX_ENTRIES, entry_stems, package_graph


@pytest.mark.parametrize(
    ("manifest", "path", "expected"),
    [
        ({"main": "lib/index.js"}, "package.json", ["/lib/index"]),
        ({"main": "./pino.js", "types": "pino.d.ts", "browser": "./browser.js"}, "package.json",
         ["/pino", "/pino.d", "/browser"]),
        ({"source": "src/mobx.ts", "main": "dist/index.js", "module": "dist/mobx.esm.js"}, "package.json",
         ["/src/mobx", "/dist/index", "/dist/mobx.esm"]),
        ({"main": "lib"}, "packages/a/package.json", ["/packages/a/lib"]),
        ({"exports": "./index.mjs"}, "package.json", ["/index"]),
        ({"exports": {"import": "./esm/index.js", "require": "./cjs/index.cjs"}}, "package.json",
         ["/esm/index", "/cjs/index"]),
        ({"exports": {".": {"node": {"types": "./d.ts/x.d.ts", "default": "./x.js"}}, "./sub": "./sub.js",
                      "./lib/*": "./lib/*.js", "./package.json": "./package.json", "./styles": "./a.css"}},
         "package.json", ["/d.ts/x.d", "/x", "/sub"]),
        ({"exports": {".": ["./a.js", {"default": "./b.js"}]}}, "package.json", ["/a", "/b"]),
        ({"main": "index.js", "module": "index.js"}, "package.json", ["/index"]),
        # outside the package, absolute, not a module, not a string: none
        ({"main": "../other/index.js", "module": "/abs/x.js", "exports": "https://cdn.example/x.js", "types": "data.json", "source": 3,
          "browser": {"fs": False}, "typings": None}, "package.json", []),
    ],
)
def test_entry_stems(manifest: object, path: str, expected: list[str]) -> None:
    assert entry_stems(json.dumps(manifest), path) == expected


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[1, 2]", '"main"', "null", '{"main": ', "{" * 5000 + "}" * 5000, "[" * 100_000,
     '{"exports": ' + '{"a": ' * 50 + '"./deep.js"' + "}" * 51, '{"main": "\\ud800.js"}', '{"main": "a\\u0000.js"}', '{"main": "\\n"}'],
)
def test_odd_manifests_name_nothing(text: str) -> None:
    assert entry_stems(text, "package.json") == []
    assert package_graph(text, "package.json") is None


def test_entries_are_bounded() -> None:
    manifest = {"exports": {f"./f{n}": f"./f{n}.js" for n in range(200)}}
    assert len(entry_stems(json.dumps(manifest), "package.json")) == MAX_ENTRIES


def test_a_package_graph_imports_its_entries_whole() -> None:
    graph = package_graph('{"main": "index.js", "types": "index.d.ts"}', "package.json")
    assert graph is not None and not graph.symbols and not graph.modules
    assert [(r.kind, r.name, r.line, r.scope, r.targets) for r in graph.refs] == [
        ("import", "*", 1, None, (("/index", "*"),)), ("import", "*", 1, None, (("/index.d", "*"),))]
    assert graph.payload()["refs"][0] == {"kind": "import", "name": "*", "line": 1, "stems": ["/index"],
                                          "fqns": ["*"], "imported": True}


def test_the_dispatcher_gives_a_package_json_its_entries_and_nothing_else() -> None:
    manifest = json.dumps({"name": "shop", "main": "lib/index.js"}, indent=2).encode()
    found = chunk_bytes(manifest, "package.json")
    assert found.chunks and found.error is None and found.graph is not None
    assert [r.targets for r in found.graph.refs] == [(("/lib/index", "*"),)]
    assert chunk_bytes(manifest, "other.json").graph is None
    broken = chunk_bytes(b'{"main": "lib/index.js",', "package.json")
    assert broken.chunks and broken.error is None and (broken.graph is None or not broken.graph.refs)


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                max_size=4),
                    max_leaves=30))
def test_any_json_is_read_without_failing(value: object) -> None:
    for manifest in (value, {"exports": value}, {"main": value}):
        stems = entry_stems(json.dumps(manifest), "pkg/package.json")
        assert all(s.startswith("/pkg/") for s in stems) and len(stems) <= MAX_ENTRIES

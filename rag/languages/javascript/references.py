"""JavaScript's and TypeScript's (JSX, TSX) references: ES imports, re-exports
(``export * from``, ``export { X as Y } from``), ``const m = require("m")``,
builtins, and ``this``."""

import posixpath
import re
from collections.abc import Iterator, Mapping

from tree_sitter import Node

from rag.graph.model import Reference
from rag.graph.references import Captures, Language, References, query_text

_BUILTINS = frozenset({
    "require", "String", "Number", "Boolean", "Array", "Object", "Symbol", "Promise", "Error",
    "Date", "RegExp", "Map", "Set", "parseInt", "parseFloat", "setTimeout", "setInterval",
    "clearTimeout", "clearInterval", "isNaN", "encodeURIComponent", "decodeURIComponent",
})


def read_import(refs: References, captures: Captures) -> Iterator[Reference]:
    if "require.var" in captures:
        _require(refs, captures)
        return
    node = captures["import"][0]
    source = node.child_by_field_name("source")
    if source is None:
        return
    stem = _module_stem(refs.path, refs.text(source))
    if node.type == "export_statement":
        yield from _reexport(refs, node, stem)
        return
    clause = next((c for c in node.named_children if c.type == "import_clause"), None)
    if clause is None:
        return
    for part in clause.named_children:
        if part.type == "identifier":  # import D from "m": the default export
            yield refs.import_ref(part, refs.text(part), stem, refs.text(part))
        elif part.type == "namespace_import":
            namespace = next((c for c in part.named_children if c.type == "identifier"), None)
            if namespace is not None:
                refs.imports[refs.text(namespace)] = (stem, None)
        elif part.type == "named_imports":
            for spec in part.named_children:
                if spec.type != "import_specifier":
                    continue
                name = refs.field(spec, "name")
                alias = refs.field(spec, "alias") or name
                if name and alias:
                    yield refs.import_ref(spec, name, stem, alias)


def _reexport(refs: References, node: Node, stem: str) -> Iterator[Reference]:
    """``export * from "m"``, ``export { X as Y } from "m"``, ``export * as ns from "m"``:
    imports that bind no local name (the last one "*" kept under the name ns)."""
    if any(c.type == "*" for c in node.children):
        yield refs.import_ref(node, "*", stem, "*", binds=False)
    for namespace in (c for c in node.named_children if c.type == "namespace_export"):
        alias = next((c for c in namespace.named_children if c.type == "identifier"), None)
        if alias is not None:
            yield refs.import_ref(namespace, "*", stem, refs.text(alias), binds=False)
    clause = next((c for c in node.named_children if c.type == "export_clause"), None)
    for spec in clause.named_children if clause is not None else ():
        name = refs.field(spec, "name")
        if spec.type == "export_specifier" and name:
            yield refs.import_ref(spec, name, stem, refs.field(spec, "alias") or name, binds=False)


def _require(refs: References, captures: Captures) -> None:
    """``const m = require("m")``: m is the module (no reference of its own)."""
    if refs.text(captures["require.fn"][0]) != "require":
        return
    stem = _module_stem(refs.path, refs.text(captures["require.module"][0]))
    refs.imports[refs.text(captures["require.var"][0])] = (stem, None)


def _module_stem(path: str, spec: str) -> str:
    spec = spec.strip("'\"`")
    if spec.startswith("."):
        folder = posixpath.dirname(path)
        joined = posixpath.normpath(posixpath.join(folder, spec))
        stem = "/" + joined.lstrip("/") if not joined.startswith("..") else joined
        return re.sub(r"\.(m|c)?[jt]sx?$", "", stem)
    return re.sub(r"^[@~]/", "", re.sub(r"\.(m|c)?[jt]sx?$", "", spec))


JAVASCRIPT = Language(query_text("rag.languages.javascript", "ecmascript", "javascript"),
                      self_names=frozenset({"this"}),
                      implicit_members=False, read_import=read_import, builtins=_BUILTINS,
                      index_module="index")
TYPESCRIPT = Language(query_text("rag.languages.javascript", "ecmascript", "typescript"),
                      self_names=frozenset({"this"}),
                      implicit_members=False, read_import=read_import, builtins=_BUILTINS,
                      index_module="index")


LANGUAGES: Mapping[str, Language] = {"javascript": JAVASCRIPT, "typescript": TYPESCRIPT, "tsx": TYPESCRIPT}

"""JavaScript's and TypeScript's (JSX, TSX) references: ES imports, re-exports
(``export * from``, ``export { X as Y } from``), ``const m = require("m")``, CommonJS
re-exports (``module.exports.x = require("m")``, ``exports.x = …``, ``module.exports = { a:
require("m"), b }``, ``module.exports = require("m")``), a required module called or constructed (its default
export), builtins, and ``this``."""

import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace

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
    if "cjs.target" in captures:
        yield from _commonjs(refs, captures)
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


# What a CommonJS module assigns to: module.exports itself, or one of its names.
_EXPORTS = re.compile(r"(?:module\.)?exports(?:\.([A-Za-z_$][\w$]*))?")
# A CommonJS module's default export when it is a function or class without a name
# (``module.exports = function () {}``: rag.languages.javascript.definitions names it so).
DEFAULT_EXPORT = "module.exports"


def _commonjs(refs: References, captures: Captures) -> Iterator[Reference]:
    """CommonJS re-exports, as ``export … from`` (imports that bind no local name):
    ``module.exports = require("m")`` and ``module.exports = m`` (m required) offer
    all of m ("*"); ``module.exports.x = require("m")`` / ``exports.x = …`` and each
    ``x: require("m")``, ``x: m``, ``x`` of ``module.exports = { … }`` offer m's default
    export as x. That export has no name of its own: it is looked for as the name it is
    offered under (the variable it is required into), then as an unnamed one
    (``DEFAULT_EXPORT``). A value defined here is this module's own: no reference."""
    target = _EXPORTS.fullmatch(refs.text(captures["cjs.target"][0]))
    if target is None or (target.group(0).startswith("exports") and target.group(1) is None):
        return  # (exports = …: rebinding the local name exports exports nothing)
    value = captures["cjs.value"][0]
    name = target.group(1)
    if name is not None:
        yield from _offered(refs, value, name)
    elif value.type == "object":
        for part in value.named_children:
            if part.type == "shorthand_property_identifier":
                yield from _offered(refs, part, refs.text(part))
            elif part.type == "pair":
                key, offered = part.child_by_field_name("key"), part.child_by_field_name("value")
                if key is not None and offered is not None and key.type in ("property_identifier", "string"):
                    yield from _offered(refs, offered, refs.text(key).strip("'\"`"))
    else:
        stem = _required(refs, value)
        if stem is not None:
            yield refs.import_ref(value, "*", stem, "*", binds=False)


def _offered(refs: References, value: Node, name: str) -> Iterator[Reference]:
    """``name`` offered as ``value``: a required module's default export, or a name imported."""
    stem = _required(refs, value)
    if stem is not None:
        local = name if value.type == "call_expression" else refs.text(value)
        ref = refs.import_ref(value, local, stem, name, binds=False)
        targets = dict.fromkeys(((stem, local), (stem, name), (stem, DEFAULT_EXPORT)))
        yield replace(ref, targets=tuple(targets))
        return
    if value.type in _NAMES:
        binding = refs.imports.get(refs.text(value))
        if binding is not None and binding[1] is not None:  # import { a } from "m"; module.exports = { a }
            yield refs.import_ref(value, binding[1], binding[0], name, binds=False)


_NAMES = frozenset({"identifier", "shorthand_property_identifier"})


def _required(refs: References, value: Node) -> str | None:
    """The module stem of ``require("m")``, or of a name ``const m = require("m")`` bound."""
    if value.type == "call_expression":
        function, arguments = value.child_by_field_name("function"), value.child_by_field_name("arguments")
        if function is None or refs.text(function) != "require" or arguments is None:
            return None
        spec = next((c for c in arguments.named_children if c.type == "string"), None)
        return _module_stem(refs.path, refs.text(spec)) if spec is not None else None
    if value.type in _NAMES:
        binding = refs.imports.get(refs.text(value))
        if binding is not None and binding[1] is None:
            return binding[0]
    return None


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
                      index_module="index", default_export=DEFAULT_EXPORT)
TYPESCRIPT = Language(query_text("rag.languages.javascript", "ecmascript", "typescript"),
                      self_names=frozenset({"this"}),
                      implicit_members=False, read_import=read_import, builtins=_BUILTINS,
                      index_module="index", default_export=DEFAULT_EXPORT)


LANGUAGES: Mapping[str, Language] = {"javascript": JAVASCRIPT, "typescript": TYPESCRIPT, "tsx": TYPESCRIPT}

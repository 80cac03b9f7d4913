"""Definitions and references of a source file, from the syntax tree the code chunker parsed.

Owns ``extract_graph``: the symbols a file defines (fqn as chunks name them,
kind, lines, signature line) and, for the languages in ``_SPECS`` (Python,
JavaScript/JSX, TypeScript/TSX, Go, Java, Rust, C, C++, Ruby), what its
code refers to: calls (plain, on ``self``/``this``/``super``, on a receiver
whose type is known from a parameter annotation or a constructor
assignment, through a module alias, through a path such as ``Type::f`` or
``ns::f``, constructor calls), imports (with aliases; Rust's ``use``) and
inheritance/implementation (Rust's ``impl Trait for Type``, Ruby's
``include``). A C/C++ ``#include "x.h"`` is stored like Python's ``from m
import *``: an import of everything a module offers (x.h, and x.c by the
same stem), where the SQL looks for a bare call's definition before the
folder; C++ ``using namespace ns;`` and ``using ns::f;`` add the fqns a bare
name may mean. Ruby's ``require`` makes no reference. Containment is the fqn
nesting of the symbols. Other languages get definitions only.

Each reference carries what the SQL resolver (``sql/052_graph_resolve.sql``) needs
to find its target without reading the file again: the file's import map is
applied here, so a reference says which module stems and fqns the import
points to (``targets``), which fqns to look for in its own file and folder
(``keys``), which class ``self`` means (``self_class``) and what kind of
owner a whole-source name lookup must have (``owner``). Partial trees
(syntax errors) give whatever was found.
"""

import gc
import posixpath
import re
import threading
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import tree_sitter_language_pack
from tree_sitter import Node, Query, QueryCursor

from rag.chunking.languages import CONTAINER_KINDS, find_definition, may_define

# Kinds whose members a self/this call or an implicit member call looks in.
_CLASS_KINDS = frozenset({"CLASS", "INTERFACE", "STRUCT", "TRAIT", "IMPL", "ENUM"})
# Deeper nesting of definitions than this is not followed.
_MAX_DEPTH = 40
_SIGNATURE_CHARS = 200
# More references than this in one file (generated code) are dropped beyond it.
MAX_REFS_PER_FILE = 20_000


@dataclass(frozen=True)
class Symbol:
    fqn: str
    kind: str
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str  # the line the name is on, stripped
    parent: int  # position of the enclosing definition in the list, -1 at top level


@dataclass(slots=True)  # not frozen: Django makes 190k of them, and frozen init is slower
class Reference:
    """A use of a name, with where the resolver may find what it names.

    ``kind``: call | import | inherits | implements. ``owner``: for a
    whole-source lookup, None wants a top-level definition, "" any member
    (a method called on a receiver of unknown type), else the simple name of
    the class the definition must be in (for an imported reference, the
    receiver's class, whose bases may define it). ``targets``: (module stem, fqn)
    pairs from the file's imports; a stem starting with "/" is a path from
    the source root, any other matches a file whose path ends with it.
    """

    kind: str
    name: str
    line: int
    scope: str | None  # fqn of the enclosing definition, None at module level
    scope_index: int  # its position in ``CodeGraph.symbols``, -1 at module level
    owner: str | None = None
    keys: tuple[str, ...] = ()  # fqns to look for in the same file, then folder; an import's alias
    targets: tuple[tuple[str, str], ...] = ()
    self_class: str | None = None  # the class self/this/super means; its bases are searched
    inherited_only: bool = False  # super.f(): the class's own members are skipped
    imported: bool = False  # the name is bound by an import: only ``targets`` may resolve it
    explicit_class: bool = False  # Cls.f(): the call names its class, so runs no override of f


@dataclass(frozen=True)
class CodeGraph:
    symbols: list[Symbol] = field(default_factory=list)
    refs: list[Reference] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)  # stems the file is imported by, longest first
    truncated: bool = False  # more than MAX_REFS_PER_FILE references

    def payload(self) -> dict[str, list[Any]]:
        """The JSON ``rag.replace_files`` stores (``graph`` of a file): symbols as rows,
        references as objects without their default fields (most are: the SQL
        side reads them with one jsonb_to_recordset, lists straight into arrays)."""
        return {
            "modules": self.modules,
            "symbols": [[s.fqn, s.kind, s.start_line, s.end_line, s.signature, s.parent]
                        for s in self.symbols],
            "refs": [_ref_payload(r) for r in self.refs],
        }


def _ref_payload(ref: Reference) -> dict[str, Any]:
    """One reference for ``CodeGraph.payload``: a field left out is null, empty or false."""
    row: dict[str, Any] = {"kind": ref.kind, "name": ref.name, "line": ref.line}
    if ref.scope_index >= 0:
        row["scope"] = ref.scope_index
    if ref.owner is not None:
        row["owner"] = ref.owner
    if ref.keys:
        row["keys"] = ref.keys
    if ref.targets:
        row["stems"] = [stem for stem, _ in ref.targets]
        row["fqns"] = [fqn for _, fqn in ref.targets]
    if ref.self_class is not None:
        row["self"] = ref.self_class
    if ref.inherited_only:
        row["super"] = True
    if ref.imported:
        row["imported"] = True
    if ref.explicit_class:
        row["explicit"] = True
    return row


def extract_graph(root: Node, text: str, path: str, language: str) -> CodeGraph:
    """The symbols and references of one parsed file."""
    with _no_collection():
        return _extract(root, text, path, language)


@contextmanager
def _no_collection() -> Iterator[None]:
    """Extraction holds every query match (dicts and lists of nodes) while it
    works and makes no reference cycles: the garbage collector's passes over
    them cost 8% of it (Django: 0.16 s of 2.05 s) and would free nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _extract(root: Node, text: str, path: str, language: str) -> CodeGraph:
    definitions = _definitions(root, language)
    symbols = [
        Symbol(d.fqn, d.kind, d.node_start_row + 1, d.node_end_row + 1, signature, d.parent)
        for d, signature in zip(definitions, _signatures(definitions, text), strict=True)
    ]
    spec = _SPECS.get(language)
    modules = _module_stems(path, language)
    if spec is None:
        return CodeGraph(symbols, [], modules)
    refs = _References(spec, definitions, path, language, text).collect(root)
    truncated = len(refs) > MAX_REFS_PER_FILE
    return CodeGraph(symbols, refs[:MAX_REFS_PER_FILE], modules, truncated)


def _signatures(definitions: list["_Found"], text: str) -> list[str]:
    """The line each definition's name is on, stripped: in ASCII text found from
    its offset, without splitting the whole file into lines."""
    if text.isascii():  # byte offsets are character offsets
        signatures = []
        for d in definitions:
            end = text.find("\n", d.name_line_start)
            line = text[d.name_line_start:end] if end >= 0 else text[d.name_line_start:]
            signatures.append(line.strip()[:_SIGNATURE_CHARS])
        return signatures
    lines = text.split("\n")
    return [lines[d.name_row].strip()[:_SIGNATURE_CHARS] if d.name_row < len(lines) else ""
            for d in definitions]


# --- definitions -------------------------------------------------------------------


@dataclass(slots=True)  # not frozen: _with_parents sets ``parent`` in place
class _Found:
    fqn: str
    kind: str
    start: int  # bytes
    end: int
    parent: int  # index of the enclosing definition, -1 at module level
    node_start_row: int
    node_end_row: int
    name_row: int
    name_line_start: int  # byte offset of that line
    bodiless: bool  # a declaration only: an overload signature, a prototype


# Plain code at module or class level that may hold definitions (if/try/with blocks).
_COMPOUND = re.compile(r"(_statement|_clause|block|_declaration_list|declaration_list)$")


# What a node's type says it may be, for the walk below (bit flags).
_MAY_DEFINE, _MAY_HOLD = 1, 2
_node_roles: dict[str, dict[str, int]] = {}  # language -> node type -> flags


def _node_role(language: str, node_type: str) -> int:
    return (_MAY_DEFINE if may_define(node_type, language) else 0) | (
        _MAY_HOLD if _COMPOUND.search(node_type) else 0
    )


def _definitions(root: Node, language: str) -> list[_Found]:
    found: list[_Found] = []
    roles = _node_roles.setdefault(language, {})
    stack: list[tuple[Sequence[Node], str | None, bool, int]] = [
        (root.named_children, None, False, 0)
    ]
    while stack:
        nodes, prefix, methods, depth = stack.pop()
        for node in nodes:
            # Most statements are neither: their type tells without looking further.
            node_type = node.type
            role = roles.get(node_type)
            if role is None:
                role = roles[node_type] = _node_role(language, node_type)
            if not role:
                continue
            definition = find_definition(node, language) if role & _MAY_DEFINE else None
            if definition is None:
                if depth < _MAX_DEPTH and role & _MAY_HOLD and node.named_child_count:
                    stack.append((node.named_children, prefix, methods, depth + 1))
                continue
            if not definition.name:
                continue
            kind = "METHOD" if definition.kind == "FUNCTION" and methods else definition.kind
            fqn = f"{prefix}.{definition.name}" if prefix else definition.name
            name_node = definition.node.child_by_field_name("name") or definition.node
            name_point = name_node.start_point
            found.append(_Found(
                fqn, kind, node.start_byte, node.end_byte, -1, node.start_point.row, _last_row(node),
                name_point.row, name_node.start_byte - name_point.column, definition.body is None,
            ))
            # Members of classes and modules; what a function defines inside is
            # part of it (its calls are the function's), and not looking costs
            # half the time of finding definitions.
            if definition.body is not None and depth < _MAX_DEPTH and kind in CONTAINER_KINDS:
                stack.append((definition.body.named_children, fqn, kind != "MODULE", depth + 1))
    return _with_parents(_without_overloads(sorted(found, key=lambda d: (d.start, -d.end))))


def _without_overloads(found: list[_Found]) -> list[_Found]:
    """TypeScript's overload signatures (and a C prototype right above its
    body) are one definition with what follows: a bodiless declaration is
    dropped when the next definition has its fqn, else a call of ``map``
    would be ambiguous among the three ``map`` of its file."""
    return [d for i, d in enumerate(found)
            if not (d.bodiless and i + 1 < len(found) and found[i + 1].fqn == d.fqn)]


def _with_parents(found: list[_Found]) -> list[_Found]:
    """Definitions in file order, each with the index of the innermost one containing it."""
    open_defs: list[int] = []
    for index, d in enumerate(found):
        while open_defs and found[open_defs[-1]].end <= d.start:
            open_defs.pop()
        d.parent = open_defs[-1] if open_defs else -1
        open_defs.append(index)
    return found


def _last_row(node: Node) -> int:
    end = node.end_point
    return end.row - 1 if end.column == 0 and end.row > node.start_point.row else end.row


# --- module stems ----------------------------------------------------------------

_INDEX_NAMES = {"python": "__init__", "javascript": "index", "typescript": "index", "tsx": "index",
                "rust": "mod"}


_GO_ROOT = "(root)"


def _module_stems(path: str, language: str) -> list[str]:
    """The stems an import of this file may name, longest first: ``a/b/c`` for
    ``a/b/c.py``, and ``a/b`` too for ``a/b/__init__.py`` or ``a/b/index.ts``;
    a Go file is its folder (its package); at the root, a stem no import can
    name (a module's root package): its files still find each other by folder."""
    if language == "go":
        return [posixpath.dirname(path) or _GO_ROOT]
    stem = posixpath.splitext(path)[0]
    stems = [stem] if stem else []
    index = _INDEX_NAMES.get(language)
    if index and posixpath.basename(stem) == index and posixpath.dirname(stem):
        stems.append(posixpath.dirname(stem))
    return stems


# --- references -----------------------------------------------------------------


@dataclass(frozen=True)
class _Spec:
    query: str
    self_names: frozenset[str]  # receivers meaning the current object
    implicit_members: bool  # an unqualified call inside a class may be a member's
    imports: str  # how import nodes are read: python | js | go | java | rust | c | ""
    builtins: frozenset[str] = frozenset()  # plain calls not worth a reference
    # What a lowercase head of a ``a::b::f`` path is: "module" (Rust: a file
    # module, resolved through its path) or "scope" (C++: a namespace in the fqn).
    paths: str = "scope"
    constructor: str | None = None  # Ruby's ``X.new``: a method call that constructs X


_PY_QUERY = """
(call function: (identifier) @call.name)
(call function: (attribute object: (_) @call.recv attribute: (identifier) @call.name))
(import_statement) @import
(import_from_statement) @import
(class_definition superclasses: (argument_list [(identifier) (attribute)] @inherits))
(typed_parameter (identifier) @typed.var type: (type [(identifier) (attribute)] @typed.type))
(typed_default_parameter name: (identifier) @typed.var type: (type [(identifier) (attribute)] @typed.type))
(assignment left: (identifier) @typed.var type: (type [(identifier) (attribute)] @typed.type))
(assignment left: (identifier) @made.var right: (call function: [(identifier) (attribute)] @made.type))
"""
_JS_QUERY = """
(call_expression function: (identifier) @call.name)
(call_expression function: (member_expression object: (_) @call.recv
                                               property: (property_identifier) @call.name))
(new_expression constructor: [(identifier) (member_expression)] @new)
(import_statement) @import
(export_statement source: (string)) @import
(variable_declarator name: (identifier) @require.var
                     value: (call_expression function: (identifier) @require.fn
                                             arguments: (arguments (string) @require.module)))
(class_heritage (identifier) @inherits)
(class_heritage (member_expression) @inherits)
(variable_declarator name: (identifier) @made.var
                     value: (new_expression constructor: [(identifier) (member_expression)] @made.type))
"""
_TS_QUERY = _JS_QUERY.replace(
    "(class_heritage (identifier) @inherits)\n(class_heritage (member_expression) @inherits)",
    "(extends_clause value: [(identifier) (member_expression)] @inherits)\n"
    "(implements_clause [(type_identifier) (nested_type_identifier)] @implements)\n"
    "(extends_type_clause type: [(type_identifier) (nested_type_identifier)] @inherits)",
) + """
([(required_parameter pattern: (identifier) @typed.var type: (type_annotation _ @typed.type))
  (optional_parameter pattern: (identifier) @typed.var type: (type_annotation _ @typed.type))
  (variable_declarator name: (identifier) @typed.var type: (type_annotation _ @typed.type))
  (public_field_definition name: (property_identifier) @typed.var type: (type_annotation _ @typed.type))])
"""

_GO_QUERY = """
(call_expression function: (identifier) @call.name)
(call_expression function: (selector_expression operand: (_) @call.recv
                                                 field: (field_identifier) @call.name))
(import_spec) @import
(parameter_declaration name: (identifier) @typed.var
                       type: [(type_identifier) @typed.type (qualified_type) @typed.type
                              (pointer_type [(type_identifier) (qualified_type)] @typed.type)])
(var_spec name: (identifier) @typed.var type: [(type_identifier) (qualified_type)] @typed.type)
(composite_literal type: (type_identifier) @new)
(short_var_declaration left: (expression_list (identifier) @typed.var)
                       right: (expression_list (composite_literal type: (type_identifier) @typed.type)))
(field_declaration !name type: [(type_identifier) (qualified_type)] @inherits)
(interface_type (type_elem . [(type_identifier) (qualified_type)] @inherits .))
"""
_JAVA_QUERY = """
(method_invocation object: (_) @call.recv name: (identifier) @call.name)
(method_invocation !object name: (identifier) @call.name)
(object_creation_expression type: [(type_identifier) (scoped_type_identifier)] @new)
(import_declaration) @import
(superclass (type_identifier) @inherits)
(super_interfaces (type_list (type_identifier) @implements))
(extends_interfaces (type_list (type_identifier) @inherits))
(formal_parameter type: (type_identifier) @typed.type name: (identifier) @typed.var)
(local_variable_declaration type: (type_identifier) @typed.type
                            declarator: (variable_declarator name: (identifier) @typed.var))
(field_declaration type: (type_identifier) @typed.type
                   declarator: (variable_declarator name: (identifier) @typed.var))
"""
_RUST_QUERY = """
(call_expression function: (identifier) @call.name)
(call_expression function: (field_expression value: (_) @call.recv
                                              field: (field_identifier) @call.name))
(call_expression function: (scoped_identifier) @call.path)
(struct_expression name: [(type_identifier) (scoped_type_identifier)] @new)
(use_declaration) @import
(impl_item trait: [(type_identifier) (scoped_type_identifier)] @implements)
(impl_item trait: (generic_type type: [(type_identifier) (scoped_type_identifier)] @implements))
(trait_item bounds: (trait_bounds [(type_identifier) (scoped_type_identifier)] @inherits))
(parameter pattern: (identifier) @typed.var
           type: [(type_identifier) @typed.type (reference_type type: (type_identifier) @typed.type)])
(let_declaration pattern: (identifier) @typed.var type: (type_identifier) @typed.type)
(let_declaration pattern: (identifier) @made.var
                 value: (call_expression function: (scoped_identifier path: (identifier) @made.type)))
"""
_C_QUERY = """
(preproc_include path: (string_literal)) @import
(call_expression function: (identifier) @call.name)
(call_expression function: (field_expression argument: (_) @call.recv
                                              field: (field_identifier) @call.name))
"""
_CPP_QUERY = _C_QUERY + """
(using_declaration) @import
(namespace_alias_definition) @import
(call_expression function: (qualified_identifier) @call.path)
(new_expression type: [(type_identifier) (qualified_identifier)] @new)
(base_class_clause [(type_identifier) (qualified_identifier)] @inherits)
(base_class_clause (template_type name: [(type_identifier) (qualified_identifier)] @inherits))
(parameter_declaration type: (type_identifier) @typed.type
                       declarator: [(identifier) @typed.var
                                    (reference_declarator (identifier) @typed.var)
                                    (pointer_declarator declarator: (identifier) @typed.var)])
(declaration type: (type_identifier) @typed.type
             declarator: [(identifier) @typed.var (init_declarator declarator: (identifier) @typed.var)])
(init_declarator declarator: (identifier) @made.var
                 value: (new_expression type: (type_identifier) @made.type))
"""
_RUBY_QUERY = """
(call receiver: (_) @call.recv method: (identifier) @call.name)
(call !receiver method: (identifier) @call.name)
(class superclass: (superclass [(constant) (scope_resolution)] @inherits))
((call !receiver method: (identifier) @mixin
       arguments: (argument_list [(constant) (scope_resolution)] @implements))
 (#any-of? @mixin "include" "extend" "prepend"))
"""
_RUBY_BUILTINS = frozenset({
    "require", "require_relative", "include", "extend", "prepend", "attr_accessor", "attr_reader",
    "attr_writer", "puts", "print", "p", "raise", "private", "protected", "public", "lambda",
    "proc", "loop", "format", "sprintf", "block_given?", "module_function", "define_method",
})
_C_BUILTINS = frozenset({
    "printf", "fprintf", "sprintf", "snprintf", "malloc", "calloc", "realloc", "free", "memcpy",
    "memset", "memmove", "strlen", "strcmp", "strncmp", "strcpy", "strncpy", "sizeof", "assert",
    "exit", "abort",
})

_GO_BUILTINS = frozenset({
    "len", "cap", "make", "new", "append", "copy", "delete", "panic", "recover", "print",
    "println", "close", "string", "int", "int64", "float64", "byte", "rune", "error", "min", "max",
})

_JS_BUILTINS = frozenset({
    "require", "String", "Number", "Boolean", "Array", "Object", "Symbol", "Promise", "Error",
    "Date", "RegExp", "Map", "Set", "parseInt", "parseFloat", "setTimeout", "setInterval",
    "clearTimeout", "clearInterval", "isNaN", "encodeURIComponent", "decodeURIComponent",
})

_SPECS: Mapping[str, _Spec] = {
    "python": _Spec(_PY_QUERY, frozenset({"self", "cls"}), False, "python",
                    frozenset({"super", "print", "len", "isinstance", "str", "int", "list",
                               "dict", "set", "tuple", "range", "getattr", "setattr",
                               "hasattr", "type", "bool", "repr", "iter", "next", "sorted",
                               "enumerate", "zip", "min", "max", "any", "all", "callable",
                               "issubclass", "id", "hash", "map", "filter", "sum", "abs",
                               "open", "format", "vars", "object", "frozenset", "bytes",
                               "float", "round", "divmod", "chr", "ord", "reversed"})),
    "javascript": _Spec(_JS_QUERY, frozenset({"this"}), False, "js", _JS_BUILTINS),
    "typescript": _Spec(_TS_QUERY, frozenset({"this"}), False, "js", _JS_BUILTINS),
    "tsx": _Spec(_TS_QUERY, frozenset({"this"}), False, "js", _JS_BUILTINS),
    # Go: a method's receiver is typed by its parameter, so s.f() is Server.f.
    "go": _Spec(_GO_QUERY, frozenset(), False, "go", _GO_BUILTINS),
    "java": _Spec(_JAVA_QUERY, frozenset({"this"}), True, "java"),
    # Rust: methods are in the impl named after the type; Self::f() is the impl's.
    "rust": _Spec(_RUST_QUERY, frozenset({"self", "Self"}), False, "rust", paths="module"),
    "c": _Spec(_C_QUERY, frozenset(), False, "c", _C_BUILTINS),
    "cpp": _Spec(_CPP_QUERY, frozenset({"this"}), True, "c", _C_BUILTINS),
    "ruby": _Spec(_RUBY_QUERY, frozenset({"self"}), True, "", _RUBY_BUILTINS, constructor="new"),
}

_queries = threading.local()


def _query(language: str, spec: _Spec) -> Query:
    cache: dict[str, Query] = _queries.__dict__.setdefault("by_language", {})
    query = cache.get(language)
    if query is None:
        grammar = tree_sitter_language_pack.get_language(language)  # type: ignore[arg-type]
        query = cache[language] = Query(grammar, spec.query)
    return query


_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*")


# Nodes of a ``a::b`` path (C++, Rust, Ruby).
_SCOPE_PATHS = frozenset({"qualified_identifier", "scoped_identifier", "scoped_type_identifier",
                          "scope_resolution"})
_NAME_CHAIN_TYPES = frozenset({
    "identifier", "attribute", "member_expression", "type_identifier", "nested_type_identifier",
    "dotted_name", "this", "property_identifier", "field_access", "scoped_identifier",
    "scoped_type_identifier", "selector_expression", "qualified_type", "package_identifier",
    "constant", "scope_resolution", "qualified_identifier", "namespace_identifier", "self",
    "nested_namespace_specifier",
})


def _role(captures: Mapping[str, object]) -> str:
    """What a pattern's matches are, by their captures: an import, a JavaScript
    require, a variable's type ("typed", "made"), a call of a name on a receiver
    ("recv_call") or alone ("call"), or another use of a name."""
    for capture, role in (("import", "import"), ("require.var", "require"), ("typed.var", "typed"),
                          ("made.var", "made"), ("call.recv", "recv_call"), ("call.name", "call")):
        if capture in captures:
            return role
    return "use"


_USE_ROLES = frozenset({"call", "recv_call", "use"})


# A binding of a local name by an import: the module stem and, for a name
# imported from it, that name (None: the name is the module itself).
_Binding = tuple[str, str | None]
# Where a use is: its scope's index in the definitions (-1: module level) and its line.
_Place = tuple[int, int]


class _References:
    def __init__(self, spec: _Spec, defs: list[_Found], path: str, language: str, text: str) -> None:
        self.spec = spec
        self.defs = defs
        self.starts = [d.start for d in defs]
        self.ends = [d.end for d in defs]
        self.parents = [d.parent for d in defs]
        # By definition index, with index -1 (module level) reading the None at the end.
        self.fqns: list[str | None] = [*(d.fqn for d in defs), None]
        self.classes = self._classes()
        self.prefixes: dict[int, tuple[str, ...]] = {}  # _lexical_keys' scopes by index
        self.path = path
        self.language = language
        # Node texts are slices of the source: of ``text`` itself when it is ASCII,
        # else of its bytes (as the chunker parsed them).
        self.ascii_text = text if text.isascii() else None
        self.data = text.encode("utf-8", "surrogatepass") if self.ascii_text is None else b""
        self.imports: dict[str, _Binding] = {}
        self.types: dict[tuple[int, str], str] = {}  # (scope index, variable) -> type text
        # _import_targets by (qualifier, name): uses repeat them across definitions;
        # and what of each qualifier an import binds.
        self.through_imports: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
        self.bound_prefixes: dict[str, tuple[_Binding, list[str]] | None] = {}
        self.typed_names: set[str] = set()  # variables with a type in ``types``
        # C++: `using namespace ns;` (ns), `using ns::f;` (f -> ns.f) and
        # `namespace g = ns;` (g -> ns)
        self.used_namespaces: list[str] = []
        self.used_names: dict[str, str] = {}
        self.namespace_aliases: dict[str, str] = {}

    # --- text of nodes ---

    def _text(self, node: Node) -> str:
        if self.ascii_text is not None:  # byte offsets are character offsets
            return self.ascii_text[node.start_byte:node.end_byte]
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def _field(self, node: Node, name: str) -> str | None:
        child = node.child_by_field_name(name)
        return self._text(child) if child is not None else None

    def _dotted(self, node: Node, text: str | None = None) -> str | None:
        """``a.b.c`` for a chain of plain names, else None (a call, an index, ...);
        ``text``: the node's, if known."""
        if node.type not in _NAME_CHAIN_TYPES:
            return None
        if text is None:
            text = self._text(node)
        if _DOTTED.fullmatch(text):  # most are: nothing to normalize
            return text
        text = "".join(text.split()).replace("::", ".")  # Rust, C++, Ruby paths
        return text if _DOTTED.fullmatch(text) else None

    def _constructed_type(self, node: Node) -> str | None:
        """``Cart`` for a receiver ``Cart()`` (Python) or ``new Cart()`` (JavaScript)."""
        if node.type == "parenthesized_expression" and node.named_child_count == 1:
            node = node.named_children[0]
        if node.type == "call":
            target = node.child_by_field_name("function")
        elif node.type == "new_expression":
            target = node.child_by_field_name("constructor")
        else:
            return None
        dotted = self._dotted(target) if target is not None else None
        return dotted if dotted and dotted.rsplit(".", 1)[-1][:1].isupper() else None

    def collect(self, root: Node) -> list[Reference]:
        matches = QueryCursor(_query(self.language, self.spec)).matches(root)
        refs: list[Reference] = []
        uses: list[tuple[int, dict[str, list[Node]]]] = []
        roles: dict[int, str] = {}  # pattern -> what its matches are
        for pattern, captures in matches:
            role = roles.get(pattern)
            if role is None:
                role = roles[pattern] = _role(captures)
            if role in _USE_ROLES:
                uses.append((pattern, captures))
            elif role == "import":
                refs.extend(self._import(captures["import"][0]))
            elif role == "require":
                refs.extend(self._require(captures))
            else:
                self._typed(role, captures)
        # One reference per use of a name in a definition (its first line):
        # the graph needs who uses what, and Django's repeats are a quarter.
        # A use whose nodes read as an earlier one's in the same definition makes
        # the same reference: it is dropped before its reference is worked out.
        seen_uses: set[tuple[object, ...]] = set()
        seen: set[tuple[object, ...]] = set()
        text = self.ascii_text
        starts, ends, parents = self.starts, self.ends, self.parents
        builtins = self.spec.builtins
        for pattern, captures in uses:
            role = roles[pattern]
            if role == "use":
                nodes = [found[0] for found in captures.values()]
                use: tuple[object, ...] = (self._scope_index(nodes[0].start_byte), pattern,
                                           *[(n.type, self._text(n)) for n in nodes])
                if use in seen_uses:
                    continue
                seen_uses.add(use)
                ref = self._use(captures)
            else:
                # Calls are most uses: _text and _scope_index are inlined.
                name_node = captures["call.name"][0]
                start = name_node.start_byte
                name = text[start:name_node.end_byte] if text is not None else self._text(name_node)
                if role == "call":
                    if name in builtins:
                        continue
                    receiver, receiver_type, receiver_text = None, "", ""
                else:
                    receiver = captures["call.recv"][0]
                    receiver_type = receiver.type
                    receiver_text = (text[receiver.start_byte:receiver.end_byte] if text is not None
                                     else self._text(receiver))
                index = bisect_right(starts, start) - 1
                while index >= 0 and ends[index] <= start:
                    index = parents[index]
                use = (index, pattern, name, receiver_text, receiver_type)
                if use in seen_uses:
                    continue
                seen_uses.add(use)
                ref = self._call(name_node, name, index, receiver, receiver_type, receiver_text)
            if ref is None:
                continue
            key = (ref.scope_index, ref.kind, ref.name, ref.owner, ref.keys, ref.targets,
                   ref.self_class, ref.inherited_only, ref.explicit_class)
            if key not in seen:
                seen.add(key)
                refs.append(ref)
        refs.sort(key=attrgetter("line"))
        return refs

    def _typed(self, role: str, captures: dict[str, list[Node]]) -> None:
        """A declared type (role "typed"), or what a constructor-like call (Capitalized) made."""
        var, type_node = captures[f"{role}.var"][0], captures[f"{role}.type"][0]
        if type_node.type == "generic_type":  # Subscriber<T>: a Subscriber
            type_node = type_node.child_by_field_name("name") or type_node
        text = self._text(type_node)
        last = text.rpartition(".")[2].rpartition(":")[2]  # a.B, a::B: B
        if role == "made" and not last.lstrip()[:1].isupper():
            return  # x = f(): most calls make no Capitalized type
        type_name = self._dotted(type_node, text)
        if type_name and (role == "typed" or type_name.rsplit(".", 1)[-1][:1].isupper()):
            variable = self._text(var)
            self.types[(self._scope_index(var.start_byte), variable)] = type_name
            self.typed_names.add(variable)

    # --- scopes ---

    def _scope_index(self, position: int) -> int:
        index = bisect_right(self.starts, position) - 1
        while index >= 0 and self.defs[index].end <= position:
            index = self.defs[index].parent
        return index

    def _classes(self) -> list[str | None]:
        """The class each definition is in (or is), by index, then None for module level."""
        classes: list[str | None] = [None] * (len(self.defs) + 1)
        for index, definition in enumerate(self.defs):  # parents come first
            if definition.kind in _CLASS_KINDS:
                classes[index] = definition.fqn
            elif definition.kind == "METHOD" and (
                definition.parent < 0 or self.defs[definition.parent].kind not in _CLASS_KINDS
            ):
                classes[index] = definition.fqn.rpartition(".")[0] or None  # C++'s int Box::size()
            else:
                classes[index] = classes[definition.parent]
        return classes

    def _class_of(self, index: int) -> str | None:
        return self.classes[index]

    def _lexical_keys(self, index: int, name: str) -> tuple[str, ...]:
        """fqns a plain name may mean, innermost scope first: nested functions,
        the class's members where the language lets a method call them bare,
        then the file's top level."""
        prefixes = self.prefixes.get(index)
        if prefixes is None:
            prefixes = self.prefixes[index] = self._scopes_of(index)
        keys = [f"{prefix}.{name}" for prefix in prefixes]
        if name in self.used_names:
            keys.append(self.used_names[name])
        keys.extend(f"{namespace}.{name}" for namespace in self.used_namespaces)
        return (*keys, name)

    def _scopes_of(self, index: int) -> tuple[str, ...]:
        scopes: list[str] = []
        cls = self._class_of(index) if self.spec.implicit_members else None
        while index >= 0:
            definition = self.defs[index]
            if definition.kind not in _CLASS_KINDS or self.spec.implicit_members:
                scopes.append(definition.fqn)
            index = definition.parent
        if cls is not None and cls not in scopes:  # a C++ method defined outside its class
            scopes.insert(1, cls)
        return tuple(scopes)

    def _field_type(self, index: int, field: str) -> str | None:
        """The declared type of a field of the class around ``index``."""
        while index >= 0 and self.defs[index].kind not in _CLASS_KINDS:
            index = self.defs[index].parent
        return self.types.get((index, field)) if index >= 0 else None

    def _type_of(self, index: int, variable: str) -> str | None:
        if variable not in self.typed_names:
            return None
        while True:
            found = self.types.get((index, variable))
            if found is not None or index < 0:
                return found
            index = self.defs[index].parent

    # --- uses: calls, constructor calls, bases ---

    def _use(self, captures: dict[str, list[Node]]) -> Reference | None:
        """A constructor call, a base, or a call through a path."""
        for capture, kind in (("new", "call"), ("inherits", "inherits"), ("implements", "implements")):
            if capture in captures:
                return self._type_use(kind, captures[capture][0])
        return self._path_call(captures["call.path"][0])

    def _type_use(self, kind: str, target: Node) -> Reference | None:
        """``new a.B()`` or a base ``a::B``: B, of what the qualifier names."""
        dotted = self._dotted(target)
        if dotted is None:
            return None
        qualifier, _, name = self._unaliased(dotted).rpartition(".")
        # (a ``::`` path names a namespace or type, never a variable: geo::Shape is no
        # member Shape of an unknown receiver geo)
        return self._named(kind, name, qualifier or None, self._at(target),
                           path=target.type in _SCOPE_PATHS)

    def _call(
        self, name_node: Node, name: str, index: int, receiver: Node | None, receiver_type: str,
        receiver_text: str,
    ) -> Reference | None:
        """``f()``, ``self.f()``, ``x.f()``: ``name`` and ``receiver_text`` are the nodes'
        texts, ``index`` the scope of ``name_node``."""
        place = (index, name_node.start_point.row + 1)
        if receiver is None:  # a builtin's call was left out before
            return self._named("call", name, None, place)
        if receiver_type in _NAME_CHAIN_TYPES:
            if receiver_text in self.spec.self_names:
                return self._member("call", name, place, inherited_only=False)
            dotted = self._dotted(receiver, receiver_text)
        else:  # a call, a subscript, a literal, ...: no plain name
            if receiver_type == "super" or (
                receiver_type == "call" and receiver_text.replace(" ", "").startswith("super(")
            ):
                return self._member("call", name, place, inherited_only=True)
            constructed = self._constructed_type(receiver)
            if constructed is not None:  # Cart().total(): a method of what was constructed
                return self._named("call", name, constructed, place)
            dotted = None
        if dotted in self.spec.self_names:
            return self._member("call", name, place, inherited_only=False)
        if dotted is None:
            return Reference("call", name, place[1], self.fqns[index], index, owner="")
        if name == self.spec.constructor and dotted.rsplit(".", 1)[-1][:1].isupper():
            qualifier, _, cls = dotted.rpartition(".")  # Item.new: constructs Item
            return self._named("call", cls, qualifier or None, self._at(receiver))
        return self._named("call", name, dotted, place)

    def _path_call(self, node: Node) -> Reference | None:
        """``Type::f()``, ``ns::f()``, ``module::f()``: the path is no variable."""
        dotted = self._dotted(node)
        if dotted is None or "." not in dotted:
            return None
        qualifier, _, name = self._unaliased(dotted).rpartition(".")
        place = self._at(node)
        if qualifier in self.spec.self_names:
            return self._member("call", name, place, inherited_only=False)
        parts = [p for p in qualifier.split(".") if p not in ("crate", "self", "super")]
        if not parts:
            return self._named("call", name, None, place)
        if self.spec.paths == "module" and parts[0] not in self.imports and parts[0][:1].islower():
            modules = [p for p in parts if p[:1].islower()]
            fqn = ".".join([*parts[len(modules):], name])
            index, line = place
            return Reference("call", name, line, self._scope_fqn(index), index,
                             targets=(("/".join(modules), fqn),), imported=True)
        return self._named("call", name, ".".join(parts), place, path=True)

    def _at(self, node: Node) -> _Place:
        return self._scope_index(node.start_byte), node.start_point.row + 1

    def _scope_fqn(self, index: int) -> str | None:
        return self.fqns[index]

    def _member(self, kind: str, name: str, place: _Place, inherited_only: bool) -> Reference:
        index, line = place
        scope = self._scope_fqn(index)
        cls = self._class_of(index)
        if cls is None:
            return Reference(kind, name, line, scope, index, owner="")
        keys = () if inherited_only else (f"{cls}.{name}",)
        return Reference(kind, name, line, scope, index, owner="", keys=keys, self_class=cls,
                         inherited_only=inherited_only)

    def _named(
        self, kind: str, name: str, qualifier: str | None, place: _Place, path: bool = False
    ) -> Reference | None:
        index, line = place
        scope = self._scope_fqn(index)
        if qualifier is None:
            binding = self.imports.get(name)
            if binding is not None:
                stem, imported = binding
                targets = ((stem, imported),) if imported else ()
                return Reference(kind, name, line, scope, index, targets=targets, imported=True)
            cls = self._class_of(index) if self.spec.implicit_members else None
            return Reference(kind, name, line, scope, index, owner=None,
                             keys=self._lexical_keys(index, name), self_class=cls)
        head, _, rest = qualifier.partition(".")
        if head in self.spec.self_names and rest and "." not in rest:
            typed = self._field_type(index, rest)  # this.field.f()
        else:
            typed = self._type_of(index, head) if not rest else None
        if typed is not None:
            qualifier = typed
            head, _, rest = qualifier.partition(".")
        through_import = self._import_targets(qualifier, name)
        owner = qualifier.rsplit(".", 1)[-1]
        # Cls.f() (not a::f(): a Rust trait's path runs the implementation's f)
        explicit = typed is None and not path and owner[:1].isupper()
        if through_import is not None:
            # (Cls.f(), or x.f() with x typed: the receiver's class, whose bases
            # may define f; a lowercase qualifier is a module)
            receiver = owner if typed is not None or owner[:1].isupper() else None
            return Reference(kind, name, line, scope, index, owner=receiver, targets=through_import,
                             imported=True, explicit_class=explicit)
        if not owner[:1].isupper() and typed is None and not path:
            # A variable of unknown type: dynamic dispatch, any member of that name.
            return Reference(kind, name, line, scope, index, owner="")
        return Reference(kind, name, line, scope, index, owner=owner, keys=(f"{qualifier}.{name}",),
                         explicit_class=explicit)

    def _import_targets(self, qualifier: str, name: str) -> tuple[tuple[str, str], ...] | None:
        """(stem, fqn) pairs for ``qualifier.name`` when the qualifier starts with an
        imported name (longest first), else None. Imports are all read by then."""
        if qualifier in self.bound_prefixes:
            bound = self.bound_prefixes[qualifier]
        else:
            bound = self.bound_prefixes[qualifier] = self._bound_prefix(qualifier)
        if bound is None:  # most qualifiers are local variables
            return None
        key = (qualifier, name)
        found = self.through_imports.get(key)
        if found is None:
            found = self.through_imports[key] = _through_import(*bound, name)
        return found

    def _bound_prefix(self, qualifier: str) -> tuple[_Binding, list[str]] | None:
        """The binding of the qualifier's longest imported head, and the rest of it."""
        parts = qualifier.split(".")
        for cut in range(len(parts), 0, -1):
            binding = self.imports.get(".".join(parts[:cut]))
            if binding is not None:
                return binding, parts[cut:]
        return None

    # --- imports ---

    def _import(self, node: Node) -> Iterator[Reference]:
        if self.spec.imports == "python":
            yield from self._python_import(node)
        elif self.spec.imports == "js":
            yield from self._js_import(node)
        elif self.spec.imports == "go":
            self._go_import(node)
        elif self.spec.imports == "java":
            yield from self._java_import(node)
        elif self.spec.imports == "rust":
            yield from self._rust_use(node.child_by_field_name("argument"), [])
        elif self.spec.imports == "c":
            if node.type == "preproc_include":
                yield from self._c_include(node)
            elif node.type == "namespace_alias_definition":
                self._cpp_namespace_alias(node)
            else:
                self._cpp_using(node)

    def _c_include(self, node: Node) -> Iterator[Reference]:
        """``#include "a/x.h"``: everything of the module ``a/x`` (x.h, x.c), found
        next to the including file first, then anywhere under an include folder."""
        path = node.child_by_field_name("path")
        included = self._text(path).strip('"') if path is not None else ""
        stem = posixpath.splitext(posixpath.normpath(included))[0]
        if not included or stem in (".", ""):
            return
        here = posixpath.normpath(posixpath.join(posixpath.dirname(self.path), stem))
        tail = "/".join(part for part in stem.split("/") if part not in (".", ".."))
        stems = ([] if here.startswith("..") else ["/" + here]) + [tail]
        index, line = self._at(node)
        yield Reference("import", "*", line, self._scope_fqn(index), index,
                        targets=tuple((s, "*") for s in dict.fromkeys(stems)), imported=True)

    def _cpp_using(self, node: Node) -> None:
        """``using namespace ns;`` and ``using ns::f;`` (file-wide here, wherever they are)."""
        named = node.named_children
        dotted = self._dotted(named[-1]) if named else None
        if dotted is None:
            return
        dotted = self._unaliased(dotted)
        if any(child.type == "namespace" for child in node.children):
            self.used_namespaces.append(dotted)
        elif "." in dotted:
            self.used_names[dotted.rpartition(".")[2]] = dotted

    def _cpp_namespace_alias(self, node: Node) -> None:
        """``namespace g = geo::shapes;``: a path starting with g means geo.shapes."""
        alias = node.child_by_field_name("name")
        named = node.named_children
        target = self._dotted(named[-1]) if len(named) > 1 else None
        if alias is not None and target is not None:
            self.namespace_aliases[self._text(alias)] = self._unaliased(target)

    def _unaliased(self, dotted: str) -> str:
        """``dotted`` with a C++ namespace alias at its head replaced by what it names."""
        if not self.namespace_aliases:
            return dotted
        head, dot, rest = dotted.partition(".")
        target = self.namespace_aliases.get(head)
        return f"{target}{dot}{rest}" if target is not None else dotted

    def _rust_use(self, node: Node | None, prefix: list[str]) -> Iterator[Reference]:
        """``use crate::a::b::{C, d as e};``: C and e are bound to items of the module
        file a/b (crate/self/super left out: a path's tail finds its file)."""
        if node is None:
            return
        if node.type == "scoped_use_list":
            path = node.child_by_field_name("path")
            inner = [*prefix, *(self._text(path).split("::") if path is not None else [])]
            items = node.child_by_field_name("list")
            for item in items.named_children if items is not None else ():
                yield from self._rust_use(item, inner)
        elif node.type == "use_list":
            for item in node.named_children:
                yield from self._rust_use(item, prefix)
        elif node.type in ("use_as_clause", "scoped_identifier", "identifier"):
            path_node = node.child_by_field_name("path") if node.type == "use_as_clause" else node
            alias_node = node.child_by_field_name("alias") if node.type == "use_as_clause" else None
            parts = [p for p in [*prefix, *self._text(path_node or node).split("::")]
                     if p not in ("crate", "self", "super", "")]
            if not parts:
                return
            alias = self._text(alias_node) if alias_node is not None else parts[-1]
            yield self._import_ref(node, parts[-1], "/".join(parts[:-1]), alias)

    def _go_import(self, node: Node) -> None:
        """``import u "example.com/app/util"``: u is the package in a folder named util."""
        path = (self._field(node, "path") or "").strip('"`')
        alias = self._field(node, "name") or path.rsplit("/", 1)[-1]
        if path and alias not in ("_", "."):
            self.imports[alias] = (path.rsplit("/", 1)[-1], None)

    def _java_import(self, node: Node) -> Iterator[Reference]:
        """``import a.b.Cart;`` binds Cart; ``import static a.b.Util.go;`` binds go."""
        target = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")),
                      None)
        if target is None or any(c.type == "asterisk" for c in node.named_children):
            return
        parts = self._text(target).split(".")
        static = any(c.type == "static" for c in node.children)
        if static and len(parts) >= 3:
            stem, fqn = "/".join(parts[:-1]), ".".join(parts[-2:])
        else:
            stem, fqn = "/".join(parts), parts[-1]
        self.imports[parts[-1]] = (stem, fqn)
        index = self._scope_index(node.start_byte)
        yield Reference("import", parts[-1], node.start_point.row + 1, None, index,
                        targets=((stem, fqn),), imported=True)

    def _import_ref(self, node: Node, name: str, stem: str, alias: str, binds: bool = True) -> Reference:
        """An import of name from stem as alias (kept in ``keys`` when it differs: a
        module re-exports what it imports under that name); ``binds``: in scope here."""
        if binds:
            self.imports[alias] = (stem, name)
        index, line = self._at(node)
        return Reference("import", name, line, self._scope_fqn(index), index, targets=((stem, name),),
                         imported=True, keys=(alias,) if alias != name else ())

    def _python_import(self, node: Node) -> Iterator[Reference]:
        if node.type == "import_statement":
            for child in node.named_children:
                if child.type == "aliased_import":
                    module = self._field(child, "name")
                    alias = self._field(child, "alias")
                    if module and alias:
                        self.imports[alias] = (module.replace(".", "/"), None)
                elif child.type == "dotted_name":
                    module = self._text(child)
                    parts = module.split(".")
                    for cut in range(1, len(parts) + 1):
                        self.imports[".".join(parts[:cut])] = ("/".join(parts[:cut]), None)
            return
        module_node = node.child_by_field_name("module_name")
        if module_node is None:
            return
        stem = self._python_module_stem(self._text(module_node))
        if any(c.type == "wildcard_import" for c in node.named_children):  # re-exports all of stem
            yield self._import_ref(node, "*", stem, "*", binds=False)
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                name, alias = self._field(child, "name"), self._field(child, "alias")
            else:
                name = alias = self._text(child)
            if name and alias and "." not in name:
                yield self._import_ref(child, name, stem, alias)

    def _python_module_stem(self, module: str) -> str:
        """``a.b`` -> ``a/b``; relative ``..b`` -> ``/<parent folder>/b`` (anchored)."""
        dots = len(module) - len(module.lstrip("."))
        parts = [p for p in module[dots:].split(".") if p]
        if not dots:
            return "/".join(parts)
        folder = posixpath.dirname(self.path)
        for _ in range(dots - 1):
            folder = posixpath.dirname(folder)
        return "/" + "/".join([p for p in folder.split("/") if p] + parts)

    def _js_module_stem(self, spec: str) -> str:
        spec = spec.strip("'\"`")
        if spec.startswith("."):
            folder = posixpath.dirname(self.path)
            joined = posixpath.normpath(posixpath.join(folder, spec))
            stem = "/" + joined.lstrip("/") if not joined.startswith("..") else joined
            return re.sub(r"\.(m|c)?[jt]sx?$", "", stem)
        return re.sub(r"^[@~]/", "", re.sub(r"\.(m|c)?[jt]sx?$", "", spec))

    def _js_import(self, node: Node) -> Iterator[Reference]:
        source = node.child_by_field_name("source")
        if source is None:
            return
        stem = self._js_module_stem(self._text(source))
        if node.type == "export_statement":
            yield from self._js_reexport(node, stem)
            return
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            return
        for part in clause.named_children:
            if part.type == "identifier":  # import D from "m": the default export
                yield self._import_ref(part, self._text(part), stem, self._text(part))
            elif part.type == "namespace_import":
                namespace = next((c for c in part.named_children if c.type == "identifier"), None)
                if namespace is not None:
                    self.imports[self._text(namespace)] = (stem, None)
            elif part.type == "named_imports":
                for spec in part.named_children:
                    if spec.type != "import_specifier":
                        continue
                    name = self._field(spec, "name")
                    alias = self._field(spec, "alias") or name
                    if name and alias:
                        yield self._import_ref(spec, name, stem, alias)

    def _js_reexport(self, node: Node, stem: str) -> Iterator[Reference]:
        """``export * from "m"``, ``export { X as Y } from "m"``, ``export * as ns from "m"``:
        imports that bind no local name (the last one "*" kept under the name ns)."""
        if any(c.type == "*" for c in node.children):
            yield self._import_ref(node, "*", stem, "*", binds=False)
        for namespace in (c for c in node.named_children if c.type == "namespace_export"):
            alias = next((c for c in namespace.named_children if c.type == "identifier"), None)
            if alias is not None:
                yield self._import_ref(namespace, "*", stem, self._text(alias), binds=False)
        clause = next((c for c in node.named_children if c.type == "export_clause"), None)
        for spec in clause.named_children if clause is not None else ():
            name = self._field(spec, "name")
            if spec.type == "export_specifier" and name:
                yield self._import_ref(spec, name, stem, self._field(spec, "alias") or name, binds=False)

    def _require(self, captures: dict[str, list[Node]]) -> Iterator[Reference]:
        if self._text(captures["require.fn"][0]) != "require":
            return
        stem = self._js_module_stem(self._text(captures["require.module"][0]))
        self.imports[self._text(captures["require.var"][0])] = (stem, None)
        yield from ()


def _through_import(binding: _Binding, rest: list[str], name: str) -> tuple[tuple[str, str], ...]:
    """(stem, fqn) pairs for ``name`` reached through an import's binding and ``rest``."""
    stem, imported = binding
    found: list[tuple[str, str]] = []
    if imported is None:  # a module: m.f(), m.sub.f() or m.Class.f()
        if rest:
            found.append((_join_stem(stem, rest), name))
        found.append((stem, ".".join([*rest, name])))
    else:
        found.append((stem, ".".join([imported, *rest, name])))
        found.append((_join_stem(stem, [imported, *rest]), name))
        if rest:  # `from pkg import models`: models.Model.check() is Model.check in pkg/models
            found.append((_join_stem(stem, [imported]), ".".join([*rest, name])))
    return tuple(found)


def _join_stem(stem: str, parts: Sequence[str]) -> str:
    return "/".join([stem.rstrip("/"), *parts]) if stem else "/".join(parts)

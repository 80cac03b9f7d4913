"""What language a source file is written in, and what its grammar calls a definition.

Owns two things the code chunker builds on:

* ``detect_language``: a tree-sitter-language-pack grammar name for a code file
  (by file name, then shebang or content), or None for prose and data files.
* ``find_definition``: whether a syntax node declares something worth its own
  chunk (class, function, method, ...), with its kind, name and body. The
  languages in ``_RULES`` are described node type by node type; every other
  grammar is read generically from its node type names.
"""

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePath

from tree_sitter import Node

# --- language detection -------------------------------------------------------

_EXTENSIONS: Mapping[str, str] = {
    # the JavaScript family (the javascript grammar parses JSX)
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    # Python, JVM, .NET
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".sc": "scala",
    ".groovy": "groovy", ".gradle": "groovy", ".clj": "clojure", ".cljs": "clojure",
    ".cljc": "clojure", ".edn": "clojure", ".cs": "csharp", ".fs": "fsharp",
    ".fsx": "fsharp", ".fsi": "fsharp_signature",
    # systems languages
    ".go": "go", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".h++": "cpp",
    ".ipp": "cpp", ".inl": "cpp", ".cu": "cuda", ".cuh": "cuda", ".m": "objc", ".mm": "objc",
    ".swift": "swift", ".zig": "zig", ".d": "d", ".odin": "odin", ".v": "verilog",
    ".sv": "verilog", ".vhd": "vhdl", ".vhdl": "vhdl", ".nim": "nim", ".ha": "hare",
    ".f": "fortran", ".f90": "fortran", ".f95": "fortran", ".f03": "fortran", ".for": "fortran",
    ".ada": "ada", ".adb": "ada", ".ads": "ada", ".pas": "pascal", ".pp": "pascal",
    ".asm": "asm", ".s": "asm", ".ll": "llvm", ".wat": "wat", ".wast": "wast",
    ".glsl": "glsl", ".vert": "glsl", ".frag": "glsl", ".hlsl": "hlsl", ".wgsl": "wgsl",
    ".ispc": "ispc", ".cairo": "cairo", ".sol": "solidity", ".cob": "cobol", ".cbl": "cobol",
    # scripting languages
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".php": "php", ".pl": "perl",
    ".pm": "perl", ".t": "perl", ".lua": "lua", ".luau": "luau", ".r": "r", ".jl": "julia",
    ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hrl": "erlang", ".gleam": "gleam",
    ".hs": "haskell", ".elm": "elm", ".ml": "ocaml", ".mli": "ocaml_interface",
    ".purs": "purescript", ".rkt": "racket", ".scm": "scheme", ".ss": "scheme",
    ".lisp": "commonlisp", ".cl": "commonlisp", ".el": "elisp", ".fnl": "fennel",
    ".janet": "janet", ".dart": "dart", ".hx": "haxe", ".hack": "hack", ".tcl": "tcl",
    ".gd": "gdscript", ".nut": "squirrel", ".pony": "pony", ".as": "actionscript",
    ".matlab": "matlab", ".vim": "vim", ".ps1": "powershell", ".psm1": "powershell",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ksh": "bash", ".fish": "fish",
    ".star": "starlark", ".bzl": "starlark", ".bazel": "starlark", ".nix": "nix",
    ".apex": "apex", ".cls": "apex", ".bsl": "bsl", ".smali": "smali", ".magik": "magik",
    # web, query and schema languages
    ".html": "html", ".htm": "html", ".vue": "vue", ".svelte": "svelte", ".astro": "astro",
    ".css": "css", ".scss": "scss", ".sql": "sql", ".graphql": "graphql", ".gql": "graphql",
    ".proto": "proto", ".thrift": "thrift", ".capnp": "capnp", ".prisma": "prisma",
    ".smithy": "smithy", ".rego": "rego", ".sparql": "sparql", ".twig": "twig",
    ".erb": "embeddedtemplate", ".ejs": "embeddedtemplate", ".heex": "heex",
    # build and configuration files
    ".json": "json", ".jsonc": "json", ".json5": "json", ".yaml": "yaml", ".yml": "yaml",
    ".toml": "toml", ".xml": "xml", ".xsd": "xml", ".ini": "ini", ".cfg": "ini",
    ".properties": "properties", ".hcl": "hcl", ".tf": "terraform", ".tfvars": "terraform",
    ".bicep": "bicep", ".cmake": "cmake", ".mk": "make", ".mak": "make", ".ninja": "ninja",
    ".gn": "gn", ".gni": "gn", ".jsonnet": "jsonnet", ".libsonnet": "jsonnet", ".kdl": "kdl",
    ".ron": "ron", ".dockerfile": "dockerfile", ".bb": "bitbake", ".bbappend": "bitbake",
}

_FILE_NAMES: Mapping[str, str] = {
    "dockerfile": "dockerfile", "containerfile": "dockerfile", "makefile": "make",
    "gnumakefile": "make", "cmakelists.txt": "cmake", "rakefile": "ruby", "gemfile": "ruby",
    "vagrantfile": "ruby", "podfile": "ruby", "jenkinsfile": "groovy", "build": "starlark",
    "workspace": "starlark", "tiltfile": "starlark", "go.mod": "gomod", "meson.build": "meson",
    ".bashrc": "bash", ".bash_profile": "bash", ".profile": "bash", ".zshrc": "bash",
    ".vimrc": "vim", "kconfig": "kconfig",
}

# Variants named after the file they vary (Dockerfile.dev, Makefile.am): their extension is no language.
_FILE_NAME_PREFIXES: Mapping[str, str] = {
    "dockerfile.": "dockerfile", "containerfile.": "dockerfile", "makefile.": "make",
}

# Interpreters named on a shebang line; versions are stripped first (python3.11 -> python).
_INTERPRETERS: Mapping[str, str] = {
    "python": "python", "pypy": "python", "sh": "bash", "bash": "bash", "dash": "bash",
    "ksh": "bash", "zsh": "bash", "ash": "bash", "fish": "fish", "node": "javascript",
    "nodejs": "javascript", "deno": "typescript", "bun": "typescript", "ts-node": "typescript",
    "tsx": "typescript", "ruby": "ruby", "perl": "perl", "php": "php", "lua": "lua",
    "luajit": "lua", "rscript": "r", "julia": "julia", "elixir": "elixir", "escript": "erlang",
    "racket": "racket", "guile": "scheme", "sbcl": "commonlisp", "tclsh": "tcl",
    "wish": "tcl", "pwsh": "powershell", "groovy": "groovy", "make": "make",
}

_SHEBANG = re.compile(r"#!\s*(\S+)(.*)")
_CPP_MARKERS = re.compile(r"^\s*(class|namespace|template\s*<|using\s|public:|private:)|::", re.M)
_OBJC_MARKERS = re.compile(r"^\s*(@interface|@implementation|@protocol|#import)\b", re.M)


def detect_language(path: str, text: str | None = None) -> str | None:
    """Grammar name for a code file, or None when it is prose, data or unknown."""
    name = PurePath(path).name.lower()
    by_name = _FILE_NAMES.get(name)
    if by_name is not None:
        return by_name
    suffix = PurePath(name).suffix
    language = _EXTENSIONS.get(suffix)
    if language is not None:
        return _refine_ambiguous(suffix, language, text)
    by_prefix = next((lang for prefix, lang in _FILE_NAME_PREFIXES.items() if name.startswith(prefix)), None)
    if by_prefix is not None:
        return by_prefix
    if suffix and not suffix[1:].isdigit():
        return None  # an extension we don't treat as code (.md, .txt, .csv, .pdf, ...)
    # Extension-less (or "script.1"): scripts announce themselves on the first line.
    return _sniff_content(text) if text else None


def _refine_ambiguous(suffix: str, language: str, text: str | None) -> str:
    """Pick between grammars sharing an extension (.h: C or C++, .m: Objective-C or MATLAB)."""
    if text is None:
        return language
    head = text[:20_000]
    if suffix == ".h" and _CPP_MARKERS.search(head):
        return "cpp"
    if suffix == ".m" and not _OBJC_MARKERS.search(head):
        return "matlab"
    return language


def _sniff_content(text: str) -> str | None:
    first_line = text[:300].split("\n", 1)[0]
    match = _SHEBANG.match(first_line)
    if match:
        program, rest = match.groups()
        interpreter = PurePath(program).name
        if interpreter == "env":
            # "/usr/bin/env -S node --flag": the first word that isn't an option
            words = [word for word in rest.split() if not word.startswith("-") and "=" not in word]
            interpreter = words[0] if words else ""
        return _INTERPRETERS.get(re.sub(r"[\d.]+$", "", interpreter.lower()))
    if first_line.lstrip().startswith("<?php"):
        return "php"
    return None


# --- definitions ---------------------------------------------------------------

# Definitions whose body holds members that become chunks of their own when
# the whole does not fit: methods of a class, functions of a module.
CONTAINER_KINDS = frozenset({"CLASS", "INTERFACE", "STRUCT", "TRAIT", "IMPL", "ENUM", "MODULE"})


@dataclass(frozen=True)
class Definition:
    """A declaration found at a syntax node: ``kind`` is the chunk's fragmentType."""

    kind: str
    name: str | None  # None for anonymous definitions
    node: Node  # the declaration itself, without export/decorator/template wrappers
    body: Node | None  # where its members or statements are, if it has any


def is_attachment(node: Node) -> bool:
    """Comments and decorators that belong to the definition right below them."""
    return "comment" in node.type or node.type in _ATTACHMENT_TYPES


_ATTACHMENT_TYPES = frozenset(
    {"decorator", "attribute_item", "attribute_list", "annotation", "marker_annotation"}
)


def find_definition(node: Node, language: str) -> Definition | None:
    """The definition ``node`` declares, or None when it is plain code."""
    rules = _RULES.get(language)
    if rules is None:
        return _generic_definition(node)
    exported = False
    fields = rules.wrappers.get(node.type)
    while fields is not None:
        inner = _wrapped_node(node, fields)
        if inner is None:
            return None
        exported = exported or node.type == "export_statement"
        node = inner
        fields = rules.wrappers.get(node.type)
    special = rules.special.get(node.type)
    if special is not None:
        return special(node, exported)
    kind = rules.kinds.get(node.type)
    if kind is None:
        return None
    name = _field_text(node, "name")
    if name is None and exported:
        name = "default"  # export default function () {}
    return Definition(kind, name, node, node.child_by_field_name("body"))


def may_define(node_type: str, language: str) -> bool:
    """Whether ``find_definition`` may find a definition at a node of this type
    (False: it finds none at any node of it), for walks that skip most nodes."""
    rules = _RULES.get(language)
    if rules is None:
        return _generic_kind(node_type) is not None
    return node_type in rules.wrappers or node_type in rules.special or node_type in rules.kinds


@dataclass(frozen=True)
class _Rules:
    kinds: Mapping[str, str]  # node type -> fragmentType, name taken from the "name" field
    # node types that wrap a declaration -> fields that may hold it ("" = last named child)
    wrappers: Mapping[str, tuple[str, ...]]
    # node types that need more than a name field: -> (node, exported) -> Definition | None
    special: Mapping[str, Callable[[Node, bool], Definition | None]]


def _node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _field_text(node: Node, field: str) -> str | None:
    child = node.child_by_field_name(field)
    return _clean_name(_node_text(child)) if child is not None else None


def _clean_name(raw: str) -> str | None:
    """One-line name with "." as the only separator (Ruby/C++ "A::B" -> "A.B")."""
    name = " ".join(raw.split()).replace("::", ".")
    return name if 0 < len(name) <= 200 else None


def _wrapped_node(wrapper: Node, fields: tuple[str, ...]) -> Node | None:
    for field in fields:
        inner = wrapper.child_by_field_name(field) if field else _last_named_child(wrapper)
        if inner is not None:
            return inner
    return None


def _last_named_child(node: Node) -> Node | None:
    count = node.named_child_count
    return node.named_child(count - 1) if count else None


# JavaScript / TypeScript ----------------------------------------------------

_JS_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_JS_CLASS_VALUES = frozenset({"class"})


def _js_variable(node: Node, exported: bool) -> Definition | None:
    """``const f = () => ...`` is a function, ``export const X = 1`` a constant."""
    declarator = next((c for c in node.named_children if c.type == "variable_declarator"), None)
    if declarator is None:
        return None
    name_node = declarator.child_by_field_name("name")
    if name_node is None or name_node.type != "identifier":
        return None  # destructuring: plain code
    value = declarator.child_by_field_name("value")
    value_type = value.type if value is not None else ""
    if value_type in _JS_FUNCTION_VALUES:
        kind = "FUNCTION"
    elif value_type in _JS_CLASS_VALUES:
        kind = "CLASS"
    elif exported and node.children and node.children[0].type == "const":
        kind = "CONST"
    else:
        return None
    body = value.child_by_field_name("body") if value is not None else None
    return Definition(kind, _clean_name(_node_text(name_node)), node, body)


def _js_expression(node: Node, exported: bool) -> Definition | None:
    """``namespace N {}`` and ``module.exports.f = function () {}``."""
    expression = node.named_children[0] if node.named_child_count else None
    if expression is None:
        return None
    if expression.type == "internal_module":
        name = _field_text(expression, "name")
        return Definition("MODULE", name, expression, expression.child_by_field_name("body"))
    if expression.type != "assignment_expression":
        return None
    target, value = expression.child_by_field_name("left"), expression.child_by_field_name("right")
    if target is None or value is None or target.type != "member_expression":
        return None
    if value.type in _JS_FUNCTION_VALUES:
        kind = "FUNCTION"
    elif value.type in _JS_CLASS_VALUES:
        kind = "CLASS"
    else:
        return None
    name = re.sub(r"^(module\.)?exports\.|\.prototype\b", "", _node_text(target))
    return Definition(kind, _clean_name(name), node, value.child_by_field_name("body"))


def _js_field(node: Node, exported: bool) -> Definition | None:
    """A class field holding a function (``handle = () => {}``) is a method."""
    value = node.child_by_field_name("value")
    if value is None or value.type not in _JS_FUNCTION_VALUES:
        return None
    name = _field_text(node, "name") or _field_text(node, "property")
    return Definition("METHOD", name, node, value.child_by_field_name("body"))


_JS_KINDS: Mapping[str, str] = {
    "class_declaration": "CLASS", "class": "CLASS", "function_declaration": "FUNCTION",
    "generator_function_declaration": "FUNCTION", "function_expression": "FUNCTION",
    "arrow_function": "FUNCTION", "method_definition": "METHOD",
}
_TS_KINDS: Mapping[str, str] = {
    **_JS_KINDS, "abstract_class_declaration": "CLASS", "interface_declaration": "INTERFACE",
    "type_alias_declaration": "TYPE", "enum_declaration": "ENUM", "module": "MODULE",
    "internal_module": "MODULE", "function_signature": "FUNCTION", "method_signature": "METHOD",
    "abstract_method_signature": "METHOD",
}
_JS_SPECIAL: Mapping[str, Callable[[Node, bool], Definition | None]] = {
    "lexical_declaration": _js_variable, "variable_declaration": _js_variable,
    "expression_statement": _js_expression, "field_definition": _js_field,
    "public_field_definition": _js_field,
}
# ``export default <expression>`` keeps what it exports in the "value" field.
_JS_WRAPPERS: Mapping[str, tuple[str, ...]] = {"export_statement": ("declaration", "value")}
_TS_WRAPPERS: Mapping[str, tuple[str, ...]] = {**_JS_WRAPPERS, "ambient_declaration": ("",)}


# Go ---------------------------------------------------------------------------


def _go_method(node: Node, exported: bool) -> Definition | None:
    """``func (s *Server[T]) Start()`` -> ``Server.Start``."""
    receiver = node.child_by_field_name("receiver")
    receiver_type = None
    if receiver is not None:
        declaration = next(
            (c for c in receiver.named_children if c.type == "parameter_declaration"), None
        )
        receiver_type = _field_text(declaration, "type") if declaration is not None else None
    name = _field_text(node, "name")
    if receiver_type and name:
        name = receiver_type.lstrip("*").split("[", 1)[0].strip() + "." + name
    return Definition("METHOD", name, node, node.child_by_field_name("body"))


_GO_TYPE_KINDS: Mapping[str, str] = {"struct_type": "STRUCT", "interface_type": "INTERFACE"}


def _go_type(node: Node, exported: bool) -> Definition | None:
    """``type X struct {...}``; a grouped ``type (...)`` is named after its first type."""
    spec = next((c for c in node.named_children if c.type in ("type_spec", "type_alias")), None)
    if spec is None:
        return None
    type_node = spec.child_by_field_name("type")
    kind = _GO_TYPE_KINDS.get(type_node.type, "TYPE") if type_node is not None else "TYPE"
    body = type_node if kind != "TYPE" and node.named_child_count == 1 else None
    return Definition(kind, _field_text(spec, "name"), node, body)


def _go_const(node: Node, exported: bool) -> Definition | None:
    spec = next((c for c in node.named_children if c.type == "const_spec"), None)
    name = _field_text(spec, "name") if spec is not None else None
    return Definition("CONST", name, node, None)


# Make ---------------------------------------------------------------------------


def _make_rule(node: Node, exported: bool) -> Definition | None:
    """``build test: deps`` and its recipe lines: the target ``build test``."""
    targets = next((c for c in node.named_children if c.type == "targets"), None)
    name = _clean_name(_node_text(targets)) if targets is not None else None
    recipe = next((c for c in node.named_children if c.type == "recipe"), None)
    return Definition("TARGET", name, node, recipe)


# Rust ---------------------------------------------------------------------------


def _rust_impl(node: Node, exported: bool) -> Definition | None:
    """``impl<T> fmt::Display for a::Foo<T>`` is named after the type: ``Foo``."""
    type_text = _field_text(node, "type") or ""
    name = type_text.split("<", 1)[0].rsplit(".", 1)[-1].strip()
    return Definition("IMPL", name or None, node, node.child_by_field_name("body"))


# C / C++ ------------------------------------------------------------------------


def _declarator_name(node: Node) -> str | None:
    """Follow ``declarator`` fields down to the declared identifier."""
    declarator = node.child_by_field_name("declarator")
    for _ in range(16):  # declarators nest a few levels at most
        if declarator is None or not declarator.type.endswith("declarator"):
            break
        declarator = declarator.child_by_field_name("declarator") or _last_named_child(declarator)
    return _clean_name(_node_text(declarator)) if declarator is not None else None


def _c_function(node: Node, exported: bool) -> Definition | None:
    """``int Box::size()`` defines the method ``Box.size``."""
    name = _declarator_name(node)
    kind = "METHOD" if name is not None and "." in name else "FUNCTION"
    return Definition(kind, name, node, node.child_by_field_name("body"))


_C_TYPE_KINDS: Mapping[str, str] = {
    "struct_specifier": "STRUCT", "union_specifier": "STRUCT", "enum_specifier": "ENUM",
    "class_specifier": "CLASS",
}


def _c_typedef(node: Node, exported: bool) -> Definition | None:
    """``typedef struct {...} point_t;`` is the struct ``point_t``."""
    aliased = node.child_by_field_name("type")
    body = aliased.child_by_field_name("body") if aliased is not None else None
    kind = _C_TYPE_KINDS.get(aliased.type, "TYPE") if aliased is not None and body else "TYPE"
    return Definition(kind, _declarator_name(node), node, body)


def _c_type(node: Node, exported: bool) -> Definition | None:
    """Only a struct/enum with a body defines it (not ``struct point *p``)."""
    body = node.child_by_field_name("body")
    if body is None:
        return None
    return Definition(_C_TYPE_KINDS[node.type], _field_text(node, "name"), node, body)


_C_SPECIAL: Mapping[str, Callable[[Node, bool], Definition | None]] = {
    "function_definition": _c_function, "type_definition": _c_typedef,
    **dict.fromkeys(_C_TYPE_KINDS, _c_type),
}
_C_RULES = _Rules({"preproc_function_def": "MACRO"}, {}, _C_SPECIAL)
_CPP_RULES = _Rules(
    {"namespace_definition": "MODULE", "alias_declaration": "TYPE",
     "concept_definition": "TYPE", "preproc_function_def": "MACRO"},
    {"template_declaration": ("",)},
    _C_SPECIAL,
)

_RULES: Mapping[str, _Rules] = {
    "python": _Rules(
        {"class_definition": "CLASS", "function_definition": "FUNCTION"},
        {"decorated_definition": ("definition",)},
        {},
    ),
    "javascript": _Rules(_JS_KINDS, _JS_WRAPPERS, _JS_SPECIAL),
    "typescript": _Rules(_TS_KINDS, _TS_WRAPPERS, _JS_SPECIAL),
    "tsx": _Rules(_TS_KINDS, _TS_WRAPPERS, _JS_SPECIAL),
    "go": _Rules(
        # (an interface's method elements: its methods, as a Rust trait's signatures)
        {"function_declaration": "FUNCTION", "method_elem": "FUNCTION"},
        {},
        {"method_declaration": _go_method, "type_declaration": _go_type,
         "const_declaration": _go_const},
    ),
    "rust": _Rules(
        {"function_item": "FUNCTION", "function_signature_item": "FUNCTION",
         "struct_item": "STRUCT", "union_item": "STRUCT", "enum_item": "ENUM",
         "trait_item": "TRAIT", "mod_item": "MODULE", "const_item": "CONST",
         "static_item": "CONST", "type_item": "TYPE", "macro_definition": "MACRO"},
        {},
        {"impl_item": _rust_impl},
    ),
    "java": _Rules(
        {"class_declaration": "CLASS", "interface_declaration": "INTERFACE",
         "enum_declaration": "ENUM", "record_declaration": "CLASS",
         "annotation_type_declaration": "INTERFACE", "method_declaration": "METHOD",
         "constructor_declaration": "METHOD", "compact_constructor_declaration": "METHOD"},
        {},
        {},
    ),
    # Grammars built on the C or C++ grammar share its node types.
    **dict.fromkeys(("c", "objc", "glsl", "ispc"), _C_RULES),
    **dict.fromkeys(("cpp", "cuda", "arduino", "hlsl"), _CPP_RULES),
    "make": _Rules({}, {}, {"rule": _make_rule}),
    "ruby": _Rules(
        {"class": "CLASS", "module": "MODULE", "method": "FUNCTION",
         "singleton_method": "METHOD"},
        {},
        {},
    ),
}


# Every other grammar: a named node whose type says what it declares ---------------

# First match wins: "enum_class_declaration" is an ENUM, "class_method" a METHOD.
_GENERIC_KIND_WORDS: tuple[tuple[str, str], ...] = (
    ("interface", "INTERFACE"), ("protocol", "INTERFACE"), ("trait", "TRAIT"),
    ("impl", "IMPL"), ("enum", "ENUM"), ("struct", "STRUCT"), ("union", "STRUCT"),
    ("method", "METHOD"), ("constructor", "METHOD"), ("record", "CLASS"), ("class", "CLASS"),
    ("object", "CLASS"), ("contract", "CLASS"), ("module", "MODULE"),
    ("namespace", "MODULE"), ("function", "FUNCTION"), ("func", "FUNCTION"),
    ("fn", "FUNCTION"), ("procedure", "FUNCTION"), ("subroutine", "FUNCTION"),
    ("macro", "MACRO"),
)
# Words that mark a use or a part of something rather than its declaration.
_GENERIC_NOT_DEFINITION = frozenset(
    {"call", "invocation", "parameter", "parameters", "argument", "arguments", "field",
     "variant", "member", "import", "reference", "expression", "body", "list", "identifier",
     "name", "type", "literal", "modifier", "modifiers", "specifier", "clause"}
)
_GENERIC_NAME_TYPES = frozenset({"name", "constant", "word", "identifier"})


@lru_cache(maxsize=4096)
def _generic_kind(node_type: str) -> str | None:
    words = node_type.split("_")
    if _GENERIC_NOT_DEFINITION.intersection(words):
        return None
    for word, kind in _GENERIC_KIND_WORDS:
        if word in words:
            return kind
    return None


def _generic_definition(node: Node) -> Definition | None:
    kind = _generic_kind(node.type)
    if kind is None:
        return None
    name_node = node.child_by_field_name("name") or next(
        (c for c in node.named_children[:4] if c.type in _GENERIC_NAME_TYPES
         or c.type.endswith("identifier")),
        None,
    )
    if name_node is None:
        return None
    name = _clean_name(_node_text(name_node))
    body = node.child_by_field_name("body") or next(
        (c for c in reversed(node.named_children)
         if "body" in c.type or "block" in c.type or c.type.endswith("declaration_list")),
        None,
    )
    return Definition(kind, name, node, body)


# --- language names a user may type (rag search --lang, the MCP search tool) -------------

# Languages of chunks no grammar names: prose, documents and plain-text data.
_PROSE_LANGUAGES = ("markdown", "text", "pdf", "docx", "csv", "log", "rst")
# Common names that are neither a language nor one of its file extensions.
_ALIASES: Mapping[str, str] = {
    "golang": "go", "md": "markdown", "txt": "text", "shell": "bash", "sh": "bash", "c#": "csharp",
    "cs": "csharp", "f#": "fsharp", "objective-c": "objc", "node": "javascript", "yml": "yaml",
}


@lru_cache(maxsize=1)
def language_names() -> frozenset[str]:
    """Every language a chunk can carry."""
    return frozenset([*_EXTENSIONS.values(), *_FILE_NAMES.values(), *_INTERPRETERS.values(),
                      *_PROSE_LANGUAGES])


def language_name(given: str) -> str | None:
    """The language ``given`` names, case-insensitive: a language (``typescript``), an alias
    (``golang``) or a file extension (``ts``, ``py``, ``c++``); None for none of them."""
    key = given.strip().lower()
    if key in language_names():
        return key
    return _ALIASES.get(key) or _EXTENSIONS.get("." + key.removeprefix("."))

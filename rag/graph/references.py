"""What a file's code refers to, for every language alike: the walk over the
matches of its tree-sitter queries (``rag/languages/<lang>/*.scm``) that makes ``Reference``s.

Owns ``Language`` (what one language family contributes: its queries, the
names meaning the current object, its builtins, how it reads imports) and
``References``, which reads calls (plain, on ``self``/``this``/``super``, on a
receiver whose type is known from a parameter annotation or a constructor
assignment (a module-level variable's declared type, ``v: T`` or ``cast(T, ...)``,
also in the modules that import it: an import of T bound as v), through a
module alias, through a path such as ``Type::f`` or ``ns::f``, constructor
calls) and bases. Imports are read by each language's module (``rag/languages/python/references.py``,
``rag/languages/javascript/references.py``, ...) through the helpers here:
``import_ref`` and the ``imports`` map they fill. Capture names the queries
use: ``@import`` (handed whole to the language's ``read_import``),
``@call.name``/``@call.recv``/``@call.path``, ``@new``, ``@inherits``,
``@implements``, ``@typed.var``/``@typed.type`` (a declared type) and
``@made.var``/``@made.type`` (a Capitalized constructor's result).

Each reference carries what the SQL resolver (``sql/05x_graph_*.sql``) needs
to find its target without reading the file again: the file's import map is
applied here, so a reference says which module stems and fqns the import
points to (``targets``), which fqns to look for in its own file and folder
(``keys``), which class ``self`` means (``self_class``) and what kind of
owner a whole-source name lookup must have (``owner``).
"""

import re
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from operator import attrgetter

import tree_sitter_language_pack
from tree_sitter import Node, Query, QueryCursor

from rag.graph.definitions import LOCALS, Found
from rag.graph.model import Reference
from rag.languages.syntax import CONTAINER_KINDS

# Kinds whose members a self/this call or an implicit member call looks in.
_CLASS_KINDS = frozenset({"CLASS", "INTERFACE", "STRUCT", "TRAIT", "IMPL", "ENUM"})

# A query match's nodes by capture name.
Captures = dict[str, list[Node]]


def query_text(package: str, *names: str) -> str:
    """The queries of ``<name>.scm`` in a language's folder (``package``), one after
    the other (a family's shared patterns, then a language's own)."""
    folder = resources.files(package)
    return "".join((folder / f"{name}.scm").read_text(encoding="utf-8") for name in names)


@dataclass(frozen=True)
class Language:
    """How one language's references are read: a strategy ``References`` consults."""

    query: str  # tree-sitter query text (``query_text``)
    self_names: frozenset[str]  # receivers meaning the current object
    implicit_members: bool  # an unqualified call inside a class may be a member's
    # Reads an ``@import`` match: yields import references, binds names in ``imports``.
    read_import: "Callable[[References, Captures], Iterable[Reference]] | None" = None
    builtins: frozenset[str] = frozenset()  # plain calls not worth a reference
    # What a lowercase head of a ``a::b::f`` path is: "module" (Rust: a file
    # module, resolved through its path) or "scope" (C++: a namespace in the fqn).
    paths: str = "scope"
    constructor: str | None = None  # Ruby's ``X.new``: a method call that constructs X
    index_module: str | None = None  # a folder's module file: Python's __init__, JS's index
    package_is_folder: bool = False  # Go: a file is imported as its folder
    # A module bound whole and called or constructed (CommonJS: m = require("m"); m()) is its
    # default export: looked for as the name it is bound to, then as this fqn.
    default_export: str | None = None


_queries = threading.local()


def _query(language: str, spec: Language) -> Query:
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
    "nested_namespace_specifier", "string_content",  # (a type written as a string: "Flask")
})


def _role(captures: Mapping[str, object]) -> str:
    """What a pattern's matches are, by their captures: an import, a variable's
    type ("typed", "made"), a call of a name on a receiver ("recv_call") or
    alone ("call"), or another use of a name."""
    for capture, role in (("import", "import"), ("typed.var", "typed"), ("made.var", "made"),
                          ("call.recv", "recv_call"), ("call.name", "call")):
        if capture in captures:
            return role
    return "use"


_USE_ROLES = frozenset({"call", "recv_call", "use"})


# A binding of a local name by an import: the module stem and, for a name
# imported from it, that name (None: the name is the module itself).
_Binding = tuple[str, str | None]
# Where a use is: its scope's index in the definitions (-1: module level) and its line.
_Place = tuple[int, int]


class References:
    """The references of one file: ``collect`` walks its query matches, imports
    first (they bind names), then every use, deduplicated by definition."""

    def __init__(self, spec: Language, defs: list[Found], path: str, language: str, text: str) -> None:
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
        self.declared: list[tuple[Node, str]] = []  # module-level variables with a declared type
        # What a scope brings in, filled by C++'s `using namespace ns;` (ns),
        # `using ns::f;` (f -> ns.f) and `namespace g = ns;` (g -> ns)
        self.used_namespaces: list[str] = []
        self.used_names: dict[str, str] = {}
        self.namespace_aliases: dict[str, str] = {}

    # --- text of nodes ---

    def text(self, node: Node) -> str:
        if self.ascii_text is not None:  # byte offsets are character offsets
            return self.ascii_text[node.start_byte:node.end_byte]
        return self.data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def field(self, node: Node, name: str) -> str | None:
        child = node.child_by_field_name(name)
        return self.text(child) if child is not None else None

    def dotted(self, node: Node, text: str | None = None) -> str | None:
        """``a.b.c`` for a chain of plain names, else None (a call, an index, ...);
        ``text``: the node's, if known."""
        if node.type not in _NAME_CHAIN_TYPES:
            return None
        if text is None:
            text = self.text(node)
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
        dotted = self.dotted(target) if target is not None else None
        return dotted if dotted and dotted.rsplit(".", 1)[-1][:1].isupper() else None

    def collect(self, root: Node) -> list[Reference]:
        matches = QueryCursor(_query(self.language, self.spec)).matches(root)
        refs: list[Reference] = []
        uses: list[tuple[int, Captures]] = []
        roles: dict[int, str] = {}  # pattern -> what its matches are
        for pattern, captures in matches:
            role = roles.get(pattern)
            if role is None:
                role = roles[pattern] = _role(captures)
            if role in _USE_ROLES:
                uses.append((pattern, captures))
            elif role == "import":
                read_import = self.spec.read_import
                if read_import is not None:
                    refs.extend(read_import(self, captures))
            else:
                self._typed(role, captures)
        refs.extend(ref for var, type_name in self.declared if (ref := self._declared(var, type_name)))
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
                use: tuple[object, ...] = (self.scope_index(nodes[0].start_byte), pattern,
                                           *[(n.type, self.text(n)) for n in nodes])
                if use in seen_uses:
                    continue
                seen_uses.add(use)
                ref = self._use(captures)
            else:
                # Calls are most uses: _text and _scope_index are inlined.
                name_node = captures["call.name"][0]
                start = name_node.start_byte
                name = text[start:name_node.end_byte] if text is not None else self.text(name_node)
                if role == "call":
                    if name in builtins:
                        continue
                    receiver, receiver_type, receiver_text = None, "", ""
                else:
                    receiver = captures["call.recv"][0]
                    receiver_type = receiver.type
                    receiver_text = (text[receiver.start_byte:receiver.end_byte] if text is not None
                                     else self.text(receiver))
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

    def _typed(self, role: str, captures: Captures) -> None:
        """A declared type (role "typed"), or what a constructor-like call (Capitalized) made."""
        var, type_node = captures[f"{role}.var"][0], captures[f"{role}.type"][0]
        if type_node.type == "generic_type":  # Subscriber<T>: a Subscriber
            type_node = type_node.child_by_field_name("name") or type_node
        text = self.text(type_node)
        last = text.rpartition(".")[2].rpartition(":")[2]  # a.B, a::B: B
        if role == "made" and not last.lstrip()[:1].isupper():
            return  # x = f(): most calls make no Capitalized type
        type_name = self.dotted(type_node, text)
        if type_name and (role == "typed" or type_name.rsplit(".", 1)[-1][:1].isupper()):
            variable = self.text(var)
            scope = self.scope_index(var.start_byte)
            self.types[(scope, variable)] = type_name
            self.typed_names.add(variable)
            if role == "typed" and scope < 0:
                self.declared.append((var, type_name))

    def _declared(self, var: Node, type_name: str) -> Reference | None:
        """``v: T`` at module level, T imported: an import of T bound as v, so that another
        module's ``v.f()`` (``from m import v``) resolves to ``T.f`` as through a re-export."""
        qualifier, _, name = type_name.rpartition(".")
        if qualifier:
            targets = self._import_targets(qualifier, name)
        else:
            binding = self.imports.get(name)
            targets = ((binding[0], binding[1]),) if binding is not None and binding[1] else None
        if not targets:
            return None
        index, line = self.at(var)
        return Reference("import", name, line, None, index, keys=(self.text(var),), targets=targets,
                         imported=True)

    # --- scopes ---

    def scope_index(self, position: int) -> int:
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
                # (a function holds only its classes, as definitions: f.<locals>.Inner)
                local = definition.kind not in CONTAINER_KINDS
                scopes.append(f"{definition.fqn}.{LOCALS}" if local else definition.fqn)
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

    def _use(self, captures: Captures) -> Reference | None:
        """A constructor call, a base, or a call through a path."""
        for capture, kind in (("new", "call"), ("inherits", "inherits"), ("implements", "implements")):
            if capture in captures:
                return self._type_use(kind, captures[capture][0])
        return self._path_call(captures["call.path"][0])

    def _type_use(self, kind: str, target: Node) -> Reference | None:
        """``new a.B()`` or a base ``a::B``: B, of what the qualifier names."""
        dotted = self.dotted(target)
        if dotted is None:
            return None
        qualifier, _, name = self.unaliased(dotted).rpartition(".")
        # (a ``::`` path names a namespace or type, never a variable: geo::Shape is no
        # member Shape of an unknown receiver geo)
        return self._named(kind, name, qualifier or None, self.at(target),
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
            dotted = self.dotted(receiver, receiver_text)
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
            return self._named("call", cls, qualifier or None, self.at(receiver))
        return self._named("call", name, dotted, place)

    def _path_call(self, node: Node) -> Reference | None:
        """``Type::f()``, ``ns::f()``, ``module::f()``: the path is no variable."""
        dotted = self.dotted(node)
        if dotted is None or "." not in dotted:
            return None
        qualifier, _, name = self.unaliased(dotted).rpartition(".")
        place = self.at(node)
        if qualifier in self.spec.self_names:
            return self._member("call", name, place, inherited_only=False)
        parts = [p for p in qualifier.split(".") if p not in ("crate", "self", "super")]
        if not parts:
            return self._named("call", name, None, place)
        if self.spec.paths == "module" and parts[0] not in self.imports and parts[0][:1].islower():
            modules = [p for p in parts if p[:1].islower()]
            fqn = ".".join([*parts[len(modules):], name])
            index, line = place
            return Reference("call", name, line, self.scope_fqn(index), index,
                             targets=(("/".join(modules), fqn),), imported=True)
        return self._named("call", name, ".".join(parts), place, path=True)

    def at(self, node: Node) -> _Place:
        return self.scope_index(node.start_byte), node.start_point.row + 1

    def scope_fqn(self, index: int) -> str | None:
        return self.fqns[index]

    def _member(self, kind: str, name: str, place: _Place, inherited_only: bool) -> Reference:
        index, line = place
        scope = self.scope_fqn(index)
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
        scope = self.scope_fqn(index)
        if qualifier is None:
            binding = self.imports.get(name)
            if binding is not None:
                stem, imported = binding
                if imported:
                    targets: tuple[tuple[str, str], ...] = ((stem, imported),)
                elif self.spec.default_export:  # m(), m = require("m"): what m exports
                    targets = ((stem, name), (stem, self.spec.default_export))
                else:
                    targets = ()
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

    # --- what the language modules read imports with ---

    def import_ref(self, node: Node, name: str, stem: str, alias: str, binds: bool = True) -> Reference:
        """An import of name from stem as alias (kept in ``keys`` when it differs: a
        module re-exports what it imports under that name); ``binds``: in scope here."""
        if binds:
            self.imports[alias] = (stem, name)
        index, line = self.at(node)
        return Reference("import", name, line, self.scope_fqn(index), index, targets=((stem, name),),
                         imported=True, keys=(alias,) if alias != name else ())

    def unaliased(self, dotted: str) -> str:
        """``dotted`` with a C++ namespace alias at its head replaced by what it names."""
        if not self.namespace_aliases:
            return dotted
        head, dot, rest = dotted.partition(".")
        target = self.namespace_aliases.get(head)
        return f"{target}{dot}{rest}" if target is not None else dotted


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

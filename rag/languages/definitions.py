"""What a syntax node declares, for the chunker (a chunk per definition) and the code graph
(its symbols): ``find_definition`` and ``may_define``, by grammar name.

The languages with a folder here (``rag/languages/<lang>/definitions.py``) are described node
type by node type in their ``RULES``; every other grammar is read generically from its node
type names. A new language's rules are one more entry in ``_RULES``.
"""

from collections.abc import Mapping
from functools import lru_cache

from tree_sitter import Node

from rag.languages.c_family import definitions as c_family
from rag.languages.go import definitions as go
from rag.languages.java import definitions as java
from rag.languages.javascript import definitions as javascript
from rag.languages.make import definitions as make
from rag.languages.python import definitions as python
from rag.languages.ruby import definitions as ruby
from rag.languages.rust import definitions as rust
from rag.languages.syntax import Definition, Rules, clean_name, field_text, node_text, wrapped_node

_RULES: Mapping[str, Rules] = {
    **python.RULES, **javascript.RULES, **go.RULES, **rust.RULES, **java.RULES, **c_family.RULES,
    **make.RULES, **ruby.RULES,
}


def find_definition(node: Node, language: str) -> Definition | None:
    """The definition ``node`` declares, or None when it is plain code."""
    rules = _RULES.get(language)
    if rules is None:
        return _generic_definition(node)
    exported = False
    fields = rules.wrappers.get(node.type)
    while fields is not None:
        inner = wrapped_node(node, fields)
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
    name = field_text(node, "name")
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
    name = clean_name(node_text(name_node))
    body = node.child_by_field_name("body") or next(
        (c for c in reversed(node.named_children)
         if "body" in c.type or "block" in c.type or c.type.endswith("declaration_list")),
        None,
    )
    return Definition(kind, name, node, body)


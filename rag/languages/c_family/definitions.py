"""What C and C++ declare (and the grammars built on theirs: Objective-C, GLSL, ISPC; CUDA,
Arduino, HLSL): functions (``int Box::size()`` is the method ``Box.size``), structs, unions,
enums and classes with a body, typedefs, function-like macros; C++'s namespaces, aliases,
concepts, inside ``template`` declarations."""

from collections.abc import Callable, Mapping

from tree_sitter import Node

from rag.languages.syntax import Definition, Rules, clean_name, field_text, last_named_child, node_text


def _declarator_name(node: Node) -> str | None:
    """Follow ``declarator`` fields down to the declared identifier."""
    declarator = node.child_by_field_name("declarator")
    for _ in range(16):  # declarators nest a few levels at most
        if declarator is None or not declarator.type.endswith("declarator"):
            break
        declarator = declarator.child_by_field_name("declarator") or last_named_child(declarator)
    return clean_name(node_text(declarator)) if declarator is not None else None


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
    return Definition(_C_TYPE_KINDS[node.type], field_text(node, "name"), node, body)


_C_SPECIAL: Mapping[str, Callable[[Node, bool], Definition | None]] = {
    "function_definition": _c_function, "type_definition": _c_typedef,
    **dict.fromkeys(_C_TYPE_KINDS, _c_type),
}
_C_RULES = Rules({"preproc_function_def": "MACRO"}, {}, _C_SPECIAL)
_CPP_RULES = Rules(
    {"namespace_definition": "MODULE", "alias_declaration": "TYPE",
     "concept_definition": "TYPE", "preproc_function_def": "MACRO"},
    {"template_declaration": ("",)},
    _C_SPECIAL,
)

# Grammars built on the C or C++ grammar share its node types.
RULES: Mapping[str, Rules] = {
    **dict.fromkeys(("c", "objc", "glsl", "ispc"), _C_RULES),
    **dict.fromkeys(("cpp", "cuda", "arduino", "hlsl"), _CPP_RULES),
}

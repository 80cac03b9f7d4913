"""What Rust declares: functions, structs, unions, enums, traits, modules, constants, statics,
type aliases, macros, and impl blocks (named after their type)."""

from collections.abc import Mapping

from tree_sitter import Node

from rag.languages.syntax import Definition, Rules, field_text


def _rust_impl(node: Node, exported: bool) -> Definition | None:
    """``impl<T> fmt::Display for a::Foo<T>`` is named after the type: ``Foo``."""
    type_text = field_text(node, "type") or ""
    name = type_text.split("<", 1)[0].rsplit(".", 1)[-1].strip()
    return Definition("IMPL", name or None, node, node.child_by_field_name("body"))


RULES: Mapping[str, Rules] = {
    "rust": Rules(
        {"function_item": "FUNCTION", "function_signature_item": "FUNCTION",
         "struct_item": "STRUCT", "union_item": "STRUCT", "enum_item": "ENUM",
         "trait_item": "TRAIT", "mod_item": "MODULE", "const_item": "CONST",
         "static_item": "CONST", "type_item": "TYPE", "macro_definition": "MACRO"},
        {},
        {"impl_item": _rust_impl},
    ),
}

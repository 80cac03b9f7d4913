"""What JavaScript and TypeScript (JSX, TSX) declare: classes, functions (also ``const f = () =>``
and ``module.exports.f = function``), methods and fields holding functions, exported constants,
and TypeScript's interfaces, types, enums and namespaces, inside ``export`` or ``declare``."""

import re
from collections.abc import Callable, Mapping

from tree_sitter import Node

from rag.languages.syntax import Definition, Rules, clean_name, field_text, node_text

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
    return Definition(kind, clean_name(node_text(name_node)), node, body)


def _js_expression(node: Node, exported: bool) -> Definition | None:
    """``namespace N {}`` and ``module.exports.f = function () {}``."""
    expression = node.named_children[0] if node.named_child_count else None
    if expression is None:
        return None
    if expression.type == "internal_module":
        name = field_text(expression, "name")
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
    name = re.sub(r"^(module\.)?exports\.|\.prototype\b", "", node_text(target))
    return Definition(kind, clean_name(name), node, value.child_by_field_name("body"))


def _js_field(node: Node, exported: bool) -> Definition | None:
    """A class field holding a function (``handle = () => {}``) is a method."""
    value = node.child_by_field_name("value")
    if value is None or value.type not in _JS_FUNCTION_VALUES:
        return None
    name = field_text(node, "name") or field_text(node, "property")
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


_JS_RULES = Rules(_JS_KINDS, _JS_WRAPPERS, _JS_SPECIAL)
_TS_RULES = Rules(_TS_KINDS, _TS_WRAPPERS, _JS_SPECIAL)
RULES: Mapping[str, Rules] = {"javascript": _JS_RULES, "typescript": _TS_RULES, "tsx": _TS_RULES}

"""What Go declares: functions, methods (``Type.method``, after their receiver), types (structs and
interfaces, whose method elements are functions) and constants."""

from collections.abc import Mapping

from tree_sitter import Node

from rag.languages.syntax import Definition, Rules, field_text


def _go_method(node: Node, exported: bool) -> Definition | None:
    """``func (s *Server[T]) Start()`` -> ``Server.Start``."""
    receiver = node.child_by_field_name("receiver")
    receiver_type = None
    if receiver is not None:
        declaration = next(
            (c for c in receiver.named_children if c.type == "parameter_declaration"), None
        )
        receiver_type = field_text(declaration, "type") if declaration is not None else None
    name = field_text(node, "name")
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
    return Definition(kind, field_text(spec, "name"), node, body)


def _go_const(node: Node, exported: bool) -> Definition | None:
    spec = next((c for c in node.named_children if c.type == "const_spec"), None)
    name = field_text(spec, "name") if spec is not None else None
    return Definition("CONST", name, node, None)


RULES: Mapping[str, Rules] = {
    "go": Rules(
        # (an interface's method elements: its methods, as a Rust trait's signatures)
        {"function_declaration": "FUNCTION", "method_elem": "FUNCTION"},
        {},
        {"method_declaration": _go_method, "type_declaration": _go_type,
         "const_declaration": _go_const},
    ),
}

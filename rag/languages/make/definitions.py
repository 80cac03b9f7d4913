"""What a Makefile declares: its rules, named after their targets."""

from collections.abc import Mapping

from tree_sitter import Node

from rag.languages.syntax import Definition, Rules, clean_name, node_text


def _make_rule(node: Node, exported: bool) -> Definition | None:
    """``build test: deps`` and its recipe lines: the target ``build test``."""
    targets = next((c for c in node.named_children if c.type == "targets"), None)
    name = clean_name(node_text(targets)) if targets is not None else None
    recipe = next((c for c in node.named_children if c.type == "recipe"), None)
    return Definition("TARGET", name, node, recipe)


RULES: Mapping[str, Rules] = {"make": Rules({}, {}, {"rule": _make_rule})}

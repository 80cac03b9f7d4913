"""A config file's YAML, read safely: a key given twice in one mapping, an alias that refers to
itself, and aliases that expand past ``MAX_YAML_VALUES`` values are refused before anything is
constructed."""

from typing import Any

import yaml

# A config is a few hundred values; aliases that expand past this are a YAML bomb ("billion laughs").
MAX_YAML_VALUES = 10_000


class _ConfigLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (YAML says keys are unique;
    PyYAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[str, yaml.Node] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if key_node.value in first:
                    line = first[key_node.value].start_mark.line + 1
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r} (first at line {line})",
                        key_node.start_mark)
                first[key_node.value] = key_node
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """``text`` as YAML, refusing duplicate keys, aliases that refer to themselves, and aliases
    that expand to more than ``MAX_YAML_VALUES`` values, before anything is constructed."""
    loader = _ConfigLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, set(), {}, set())
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(node: yaml.Node, open_nodes: set[int], sizes: dict[int, int], aliased: set[int]) -> int:
    """How many values ``node`` stands for once its aliases are expanded (each shared node counted
    at every use, computed once; ``aliased``: the nodes met again, through an alias)."""
    if id(node) in sizes:
        aliased.add(id(node))
        return sizes[id(node)]
    if id(node) in open_nodes:
        raise yaml.composer.ComposerError(None, None, "an alias refers to a node that holds it",
                                          node.start_mark)
    open_nodes.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        children: list[yaml.Node] = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    else:
        children = []
    size = 1 + sum(_expanded_size(child, open_nodes, sizes, aliased) for child in children)
    open_nodes.discard(id(node))
    if size > MAX_YAML_VALUES:
        what = "aliases expand to" if aliased else "the file holds"
        raise yaml.composer.ComposerError(None, None, f"{what} more than {MAX_YAML_VALUES:,} "
                                          "values; a config needs far fewer", node.start_mark)
    sizes[id(node)] = size
    return size

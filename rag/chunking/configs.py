"""Configuration files (YAML, TOML, JSON) cut by their top-level keys.

Owns ``config_sections``: each top-level key of a YAML mapping (of every
document of the stream), each key, ``[table]`` and ``[[array of tables]]`` of
a TOML file and each key of a JSON object is a section named by its key, of
kind KEY (TABLE for TOML's tables). The comment lines right above a key are
its own. The keys are read from tree-sitter's tree of the file, and a file
with a syntax error, or whose top level is no mapping (a JSON array, a YAML
list), has none: the caller cuts it into plain windows.

Configs stay sourceType "code": their keys and values are identifiers,
paths and versions that keyword search must match exactly, not stems.
"""

from tree_sitter import Node

from rag.chunking.sections import Section, joined, start_with_comments
from rag.languages.syntax import parse_tree

_TOML_TABLES = frozenset({"table", "table_array_element"})


def config_sections(text: str, language: str) -> list[Section] | None:
    """The file's top-level keys as sections, or None when there are none to be had."""
    root = parse_tree(text, language)
    if root is None or root.has_error:
        return None
    if language == "yaml":
        entries = [pair for document in _children(root, "document") for pair in _yaml_pairs(document)]
        markers: tuple[str, ...] = ("#",)
    elif language == "toml":
        entries = [child for child in root.named_children if child.type in ("pair", *_TOML_TABLES)]
        markers = ("#",)
    else:
        objects = [child for child in root.named_children if child.type != "comment"]
        is_object = len(objects) == 1 and objects[0].type == "object"
        entries = _children(objects[0], "pair") if is_object else []
        markers = ("//", "/*", "*")
    if not entries:
        return None
    lines = text.split("\n")
    sections: list[Section] = []
    floor = 0
    for entry in entries:
        head = entry.start_point.row
        kind = "TABLE" if entry.type in _TOML_TABLES else "KEY"
        section = Section(start_with_comments(lines, head, floor, markers), head, kind, _key_name(entry))
        if sections and head <= sections[-1].head:  # minified JSON
            sections[-1] = joined(sections[-1], section)
        else:
            sections.append(section)
        floor = head + 1
    return sections


def _children(node: Node, node_type: str) -> list[Node]:
    return [child for child in node.named_children if child.type == node_type]


def _yaml_pairs(document: Node) -> list[Node]:
    """The pairs of a YAML document's top-level block mapping (none for a list or a scalar)."""
    node: Node | None = document
    for node_type in ("block_node", "block_mapping"):
        node = next(iter(_children(node, node_type)), None) if node is not None else None
    return _children(node, "block_mapping_pair") if node is not None else []


def _key_name(entry: Node) -> str | None:
    """``name`` of ``name: ...``, ``"name": ...``, ``name = ...`` or ``[tool.name]``."""
    key = entry.child_by_field_name("key") or next(
        (child for child in entry.named_children if child.type.endswith("key")), None
    )
    if key is None:
        return None
    name = (key.text or b"").decode("utf-8", "replace").strip().strip("\"'")
    name = " ".join(name.split())
    return name if 0 < len(name) <= 200 else None

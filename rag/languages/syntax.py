"""What every language's rules are written with: the parsed syntax tree and the definition it holds.

Owns ``parse_tree`` (a file's tree-sitter tree, one parser per grammar and thread: the chunker
and the code graph read the same tree), ``Definition`` (what a node declares, as the chunker and
the graph name it), ``Rules`` (how one grammar's nodes declare things: the form of each
language's ``definitions.py``) and the small node helpers those rules share.
"""

import threading
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import tree_sitter_language_pack
from tree_sitter import Node, Parser

from rag.languages.c_family.attribute_macros import blank_attribute_macros
from rag.languages.c_family.preprocessor import first_branches

_GRAMMARS = frozenset(typing.get_args(tree_sitter_language_pack.SupportedLanguage))

# --- parsing --------------------------------------------------------------------

_parsers = threading.local()  # tree-sitter parsers are not safe to share across threads

# Text the grammar misreads, made readable with the same lines and offsets.
_PREPARE: Mapping[str, Callable[[str], str]] = dict.fromkeys(
    ("c", "cpp", "objc", "cuda", "arduino"), lambda text: blank_attribute_macros(first_branches(text)))


def parse_tree(text: str, language: str) -> Node | None:
    """The syntax tree's root, or None when there is no grammar for ``language``. Some languages'
    text is first prepared for their grammar, keeping every line and offset (``_PREPARE``)."""
    if language not in _GRAMMARS:
        return None
    cache: dict[str, Parser] = _parsers.__dict__.setdefault("by_language", {})
    parser = cache.get(language)
    if parser is None:
        try:
            parser = tree_sitter_language_pack.get_parser(
                typing.cast(tree_sitter_language_pack.SupportedLanguage, language)
            )
        except LookupError:
            return None
        cache[language] = parser
    prepare = _PREPARE.get(language)
    if prepare is not None:
        text = prepare(text)
    # Rows are counted at "\n" bytes, the same lines the chunker splits at.
    tree = parser.parse(text.encode("utf-8", "surrogatepass"))
    return tree.root_node if tree is not None else None


def last_row(node: Node) -> int:
    """The node's last line (some nodes, e.g. Rust's ``///``, end at column 0 of the next)."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row - 1
    return end.row


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


@dataclass(frozen=True)
class Rules:
    """One grammar's definitions, read by ``rag.languages.definitions.find_definition``."""

    kinds: Mapping[str, str]  # node type -> fragmentType, name taken from the "name" field
    # node types that wrap a declaration -> fields that may hold it ("" = last named child)
    wrappers: Mapping[str, tuple[str, ...]]
    # node types that need more than a name field: -> (node, exported) -> Definition | None
    special: Mapping[str, Callable[[Node, bool], Definition | None]]


def node_text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def field_text(node: Node, field: str) -> str | None:
    child = node.child_by_field_name(field)
    return clean_name(node_text(child)) if child is not None else None


def clean_name(raw: str) -> str | None:
    """One-line name with "." as the only separator (Ruby/C++ "A::B" -> "A.B")."""
    name = " ".join(raw.split()).replace("::", ".")
    return name if 0 < len(name) <= 200 else None


def wrapped_node(wrapper: Node, fields: tuple[str, ...]) -> Node | None:
    for field in fields:
        inner = wrapper.child_by_field_name(field) if field else last_named_child(wrapper)
        if inner is not None:
            return inner
    return None


def last_named_child(node: Node) -> Node | None:
    count = node.named_child_count
    return node.named_child(count - 1) if count else None

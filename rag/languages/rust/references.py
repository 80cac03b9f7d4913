"""Rust's references: ``use`` trees (with ``as`` aliases), paths through file
modules (``util::parse()``), ``self``/``Self`` (methods are in the impl named
after the type; ``Self::f()`` is the impl's), and ``mod.rs`` as a folder's module."""

from collections.abc import Iterator, Mapping

from tree_sitter import Node

from rag.graph.model import Reference
from rag.graph.references import Captures, Language, References, query_text


def read_import(refs: References, captures: Captures) -> Iterator[Reference]:
    yield from _use(refs, captures["import"][0].child_by_field_name("argument"), [])


def _use(refs: References, node: Node | None, prefix: list[str]) -> Iterator[Reference]:
    """``use crate::a::b::{C, d as e};``: C and e are bound to items of the module
    file a/b (crate/self/super left out: a path's tail finds its file)."""
    if node is None:
        return
    if node.type == "scoped_use_list":
        path = node.child_by_field_name("path")
        inner = [*prefix, *(refs.text(path).split("::") if path is not None else [])]
        items = node.child_by_field_name("list")
        for item in items.named_children if items is not None else ():
            yield from _use(refs, item, inner)
    elif node.type == "use_list":
        for item in node.named_children:
            yield from _use(refs, item, prefix)
    elif node.type in ("use_as_clause", "scoped_identifier", "identifier"):
        path_node = node.child_by_field_name("path") if node.type == "use_as_clause" else node
        alias_node = node.child_by_field_name("alias") if node.type == "use_as_clause" else None
        parts = [p for p in [*prefix, *refs.text(path_node or node).split("::")]
                 if p not in ("crate", "self", "super", "")]
        if not parts:
            return
        alias = refs.text(alias_node) if alias_node is not None else parts[-1]
        yield refs.import_ref(node, parts[-1], "/".join(parts[:-1]), alias)


RUST = Language(query_text("rag.languages.rust", "rust"),
                self_names=frozenset({"self", "Self"}), implicit_members=False,
                read_import=read_import, paths="module", index_module="mod")


LANGUAGES: Mapping[str, Language] = {"rust": RUST}

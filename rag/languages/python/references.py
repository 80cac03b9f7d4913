"""Python's references: its imports (``import a.b``, ``import a as b``, ``from .m
import X as Y``, ``from m import *``), builtins, and ``self``/``cls``."""

import posixpath
from collections.abc import Iterator, Mapping

from rag.graph.model import Reference
from rag.graph.references import Captures, Language, References, query_text

_BUILTINS = frozenset({
    "super", "print", "len", "isinstance", "str", "int", "list", "dict", "set", "tuple", "range",
    "getattr", "setattr", "hasattr", "type", "bool", "repr", "iter", "next", "sorted", "enumerate",
    "zip", "min", "max", "any", "all", "callable", "issubclass", "id", "hash", "map", "filter", "sum",
    "abs", "open", "format", "vars", "object", "frozenset", "bytes", "float", "round", "divmod", "chr",
    "ord", "reversed",
})


def read_import(refs: References, captures: Captures) -> Iterator[Reference]:
    node = captures["import"][0]
    if node.type == "import_statement":
        for child in node.named_children:
            if child.type == "aliased_import":
                module = refs.field(child, "name")
                alias = refs.field(child, "alias")
                if module and alias:
                    refs.imports[alias] = (module.replace(".", "/"), None)
            elif child.type == "dotted_name":
                module = refs.text(child)
                parts = module.split(".")
                for cut in range(1, len(parts) + 1):
                    refs.imports[".".join(parts[:cut])] = ("/".join(parts[:cut]), None)
        return
    module_node = node.child_by_field_name("module_name")
    if module_node is None:
        return
    stem = _module_stem(refs.path, refs.text(module_node))
    if any(c.type == "wildcard_import" for c in node.named_children):  # re-exports all of stem
        yield refs.import_ref(node, "*", stem, "*", binds=False)
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name, alias = refs.field(child, "name"), refs.field(child, "alias")
        else:
            name = alias = refs.text(child)
        if name and alias and "." not in name:
            yield refs.import_ref(child, name, stem, alias)


def _module_stem(path: str, module: str) -> str:
    """``a.b`` -> ``a/b``; relative ``..b`` -> ``/<parent folder>/b`` (anchored)."""
    dots = len(module) - len(module.lstrip("."))
    parts = [p for p in module[dots:].split(".") if p]
    if not dots:
        return "/".join(parts)
    folder = posixpath.dirname(path)
    for _ in range(dots - 1):
        folder = posixpath.dirname(folder)
    return "/" + "/".join([p for p in folder.split("/") if p] + parts)


PYTHON = Language(query_text("rag.languages.python", "python"),
                  self_names=frozenset({"self", "cls"}), implicit_members=False,
                  read_import=read_import, builtins=_BUILTINS, index_module="__init__")


LANGUAGES: Mapping[str, Language] = {"python": PYTHON}

"""C's and C++'s references. ``#include "x.h"`` is stored like Python's ``from m
import *``: an import of everything a module offers (x.h, and x.c by the same
stem), where the SQL looks for a bare call's definition before the folder.
C++'s ``using namespace ns;``, ``using ns::f;`` and ``namespace g = ns;`` add
the fqns a bare name or a path may mean (file-wide, wherever they are)."""

import posixpath
from collections.abc import Iterator, Mapping

from tree_sitter import Node

from rag.graph.model import Reference
from rag.graph.references import Captures, Language, References, query_text

_BUILTINS = frozenset({
    "printf", "fprintf", "sprintf", "snprintf", "malloc", "calloc", "realloc", "free", "memcpy",
    "memset", "memmove", "strlen", "strcmp", "strncmp", "strcpy", "strncpy", "sizeof", "assert",
    "exit", "abort",
})


def read_import(refs: References, captures: Captures) -> Iterator[Reference]:
    node = captures["import"][0]
    if node.type == "preproc_include":
        yield from _include(refs, node)
    elif node.type == "namespace_alias_definition":
        _namespace_alias(refs, node)
    else:
        _using(refs, node)


def _include(refs: References, node: Node) -> Iterator[Reference]:
    """``#include "a/x.h"``: everything of the module ``a/x`` (x.h, x.c), found
    next to the including file first, then anywhere under an include folder."""
    path = node.child_by_field_name("path")
    included = refs.text(path).strip('"') if path is not None else ""
    stem = posixpath.splitext(posixpath.normpath(included))[0]
    if not included or stem in (".", ""):
        return
    here = posixpath.normpath(posixpath.join(posixpath.dirname(refs.path), stem))
    tail = "/".join(part for part in stem.split("/") if part not in (".", ".."))
    stems = ([] if here.startswith("..") else ["/" + here]) + [tail]
    index, line = refs.at(node)
    yield Reference("import", "*", line, refs.scope_fqn(index), index,
                    targets=tuple((s, "*") for s in dict.fromkeys(stems)), imported=True)


def _using(refs: References, node: Node) -> None:
    """``using namespace ns;`` and ``using ns::f;``."""
    named = node.named_children
    dotted = refs.dotted(named[-1]) if named else None
    if dotted is None:
        return
    dotted = refs.unaliased(dotted)
    if any(child.type == "namespace" for child in node.children):
        refs.used_namespaces.append(dotted)
    elif "." in dotted:
        refs.used_names[dotted.rpartition(".")[2]] = dotted


def _namespace_alias(refs: References, node: Node) -> None:
    """``namespace g = geo::shapes;``: a path starting with g means geo.shapes."""
    alias = node.child_by_field_name("name")
    named = node.named_children
    target = refs.dotted(named[-1]) if len(named) > 1 else None
    if alias is not None and target is not None:
        refs.namespace_aliases[refs.text(alias)] = refs.unaliased(target)


C = Language(query_text("rag.languages.c_family", "c"),
             self_names=frozenset(), implicit_members=False, read_import=read_import,
             builtins=_BUILTINS)
CPP = Language(query_text("rag.languages.c_family", "c", "cpp"),
               self_names=frozenset({"this"}), implicit_members=True,
               read_import=read_import, builtins=_BUILTINS)


LANGUAGES: Mapping[str, Language] = {"c": C, "cpp": CPP}

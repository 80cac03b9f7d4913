"""Definitions and references of a source file, from the syntax tree the code
chunker parsed: ``extract_graph``, the one entry point (``rag.dispatcher``
calls it with the tree it chunked).

A file gets the symbols it defines (fqn as chunks name them, kind, lines,
signature line; ``definitions``), the module stems an import of it may name,
and, for the languages in ``rag.languages.references.LANGUAGES`` (Python,
JavaScript/JSX, TypeScript/TSX, Go, Java, Rust, C, C++, Ruby), what its code
refers to (``references``, with each family's imports read in its folder,
``rag/languages/<lang>/references.py``). Containment is the fqn nesting of
the symbols. Other languages get definitions only.
Partial trees (syntax errors) give whatever was found.
"""

import gc
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager

from tree_sitter import Node

from rag.graph.definitions import signature_lines, walk_definitions
from rag.graph.model import CodeGraph, Symbol
from rag.graph.references import Language, References
from rag.languages.references import LANGUAGES

# More references than this in one file (generated code) are dropped beyond it.
MAX_REFS_PER_FILE = 20_000


def extract_graph(root: Node, text: str, path: str, language: str) -> CodeGraph:
    """The symbols and references of one parsed file."""
    with _no_collection():
        return _extract(root, text, path, language)


@contextmanager
def _no_collection() -> Iterator[None]:
    """Extraction holds every query match (dicts and lists of nodes) while it
    works and makes no reference cycles: the garbage collector's passes over
    them cost 8% of it (Django: 0.16 s of 2.05 s) and would free nothing."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _extract(root: Node, text: str, path: str, language: str) -> CodeGraph:
    definitions = walk_definitions(root, language)
    symbols = [
        Symbol(d.fqn, d.kind, d.node_start_row + 1, d.node_end_row + 1, signature, d.parent)
        for d, signature in zip(definitions, signature_lines(definitions, text), strict=True)
    ]
    spec = LANGUAGES.get(language)
    modules = _module_stems(path, spec)
    if spec is None:
        return CodeGraph(symbols, [], modules)
    refs = References(spec, definitions, path, language, text).collect(root)
    truncated = len(refs) > MAX_REFS_PER_FILE
    return CodeGraph(symbols, refs[:MAX_REFS_PER_FILE], modules, truncated)


_GO_ROOT = "(root)"


def _module_stems(path: str, spec: Language | None) -> list[str]:
    """The stems an import of this file may name, longest first: ``a/b/c`` for
    ``a/b/c.py``, and ``a/b`` too for ``a/b/__init__.py`` or ``a/b/index.ts``;
    a Go file is its folder (its package); at the root, a stem no import can
    name (a module's root package): its files still find each other by folder."""
    if spec is not None and spec.package_is_folder:
        return [posixpath.dirname(path) or _GO_ROOT]
    stem = posixpath.splitext(path)[0]
    stems = [stem] if stem else []
    index = spec.index_module if spec is not None else None
    if index and posixpath.basename(stem) == index and posixpath.dirname(stem):
        stems.append(posixpath.dirname(stem))
    return stems

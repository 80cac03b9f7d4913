"""A package.json's entry points as the code graph sees them: ``package_graph``, which the
dispatcher asks for each ``package.json`` it chunks.

The files ``main``, ``module``, ``source``, ``types``/``typings``, ``browser`` (as a string)
and ``exports`` (a string, a conditional object, or subpaths to either, wildcards left out)
name are the package's entry files: what it offers its users. Each becomes an import of the
whole module (``*``, as ``export * from``) by the package.json, at its first line, so that
the ranking can tell a package's front from its other files (``rag._entry_chunks``) and the
graph shows what a package offers. Bounded (``MAX_ENTRIES``, nesting ``MAX_DEPTH``); a file
that is not JSON, or whose fields are not what npm documents, gives what could be read,
never an error.
"""

import json
import posixpath
import re
from collections.abc import Iterator

from rag.graph.model import CodeGraph, Reference

MAX_ENTRIES = 32  # entry stems of one package.json
MAX_DEPTH = 4  # nested condition objects of ``exports``
MAX_BYTES = 1_000_000  # a bigger package.json is no manifest
_FIELDS = ("source", "main", "module", "exports", "types", "typings", "browser")
_EXTENSION = re.compile(r"\.(m|c)?[jt]sx?$")  # (a .d.ts file's stem keeps its .d, as its module's)


def package_graph(text: str, path: str) -> CodeGraph | None:
    """The package's entry files as whole-module imports, or None when it names none."""
    stems = entry_stems(text, path)
    if not stems:
        return None
    refs = [Reference("import", "*", 1, None, -1, targets=((stem, "*"),), imported=True) for stem in stems]
    return CodeGraph(refs=refs)


def entry_stems(text: str, path: str) -> list[str]:
    """Module stems (from the source root, "/src/index") of the files a package.json at
    ``path`` names as its entry points, in the order of ``_FIELDS``, each once."""
    if len(text) > MAX_BYTES:
        return []
    try:
        manifest = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not isinstance(manifest, dict):
        return []
    folder = posixpath.dirname(path)
    stems: dict[str, None] = {}
    for field in _FIELDS:
        for target in _targets(manifest.get(field), field == "exports", 0):
            stem = _stem(folder, target)
            if stem is not None:
                stems[stem] = None
            if len(stems) >= MAX_ENTRIES:
                return list(stems)
    return list(stems)


def _targets(value: object, subpaths: bool, depth: int) -> Iterator[str]:
    """The file paths of a field's value: a string, or (``exports``) an object of conditions
    or of subpaths ("." and "./x", not "./x/*" or "./package.json"), or an array of those."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, str):
        if "*" not in value:
            yield value
    elif isinstance(value, list):
        for item in value[:MAX_ENTRIES]:
            yield from _targets(item, subpaths, depth + 1)
    elif isinstance(value, dict) and subpaths:
        for key, item in list(value.items())[:MAX_ENTRIES]:
            if key.startswith(".") and ("*" in key or key.endswith(".json")):
                continue
            yield from _targets(item, subpaths, depth + 1)


def _stem(folder: str, target: str) -> str | None:
    """``./dist/index.js`` of a package in ``pkg`` → ``/pkg/dist/index``; None outside the
    package, or for anything but a module (a .json, a .css)."""
    target = target.strip()
    # (printable: no NUL or lone surrogate, which PostgreSQL refuses; a colon: a URL, node:fs)
    if not target or not target.isprintable() or "\\" in target or ":" in target or target.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(folder, target))
    if joined == ".." or joined.startswith("../"):
        return None
    base = posixpath.basename(joined)
    if "." in base.lstrip(".") and not _EXTENSION.search(base):
        return None  # a .json, .css, .node, ...
    stem = _EXTENSION.sub("", joined)
    return "/" + stem if stem not in ("", ".") else None

"""Go's references: ``import u "path"`` binds the package in a folder named by the
path's last part. A method's receiver is typed by its parameter, so ``s.f()`` is
``Server.f``; a file is imported as its folder (its package)."""

from collections.abc import Iterable, Mapping

from rag.graph.model import Reference
from rag.graph.references import Captures, Language, References, query_text

_BUILTINS = frozenset({
    "len", "cap", "make", "new", "append", "copy", "delete", "panic", "recover", "print",
    "println", "close", "string", "int", "int64", "float64", "byte", "rune", "error", "min", "max",
})


def read_import(refs: References, captures: Captures) -> Iterable[Reference]:
    """``import u "example.com/app/util"``: u is the package in a folder named util
    (the import itself makes no reference: its uses do)."""
    node = captures["import"][0]
    path = (refs.field(node, "path") or "").strip('"`')
    alias = refs.field(node, "name") or path.rsplit("/", 1)[-1]
    if path and alias not in ("_", "."):
        refs.imports[alias] = (path.rsplit("/", 1)[-1], None)
    return ()


GO = Language(query_text("rag.languages.go", "go"),
              self_names=frozenset(), implicit_members=False, read_import=read_import,
              builtins=_BUILTINS, package_is_folder=True)


LANGUAGES: Mapping[str, Language] = {"go": GO}

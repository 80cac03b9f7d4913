"""The modules of ``rag`` import each other without cycles, counting every import: at the top,
under ``TYPE_CHECKING`` and inside functions (a lazy import hides a cycle, it does not end it)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rag"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_of_rag_modules() -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports."""
    files = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module)  # `from rag.cli import admin`: the package, then its module
                imported |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {other for other in imported if other in files and other != name}
    return graph


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    """A path of imports from ``start`` back to itself, if there is one."""
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop()
        for other in sorted(graph[path[-1]]):
            if other == start:
                return [*path, start]
            if other not in seen:
                seen.add(other)
                paths.append([*path, other])
    return None


def test_the_graph_sees_the_imports_it_should() -> None:
    graph = _imports_of_rag_modules()

    assert "rag.cli.root" in graph["rag.cli.graph"]
    assert "rag.service" in graph["rag.cli.root"], "imports under TYPE_CHECKING count"
    assert "rag.watcher" in graph["rag.cli.watch"], "imports inside functions count"


def test_no_rag_module_imports_itself_through_others() -> None:
    graph = _imports_of_rag_modules()

    cycles = [" -> ".join(cycle) for name in sorted(graph) if (cycle := _cycle_from(name, graph))]

    assert cycles == []


def _imports_between(graph: dict[str, set[str]], importer: str, imported: str) -> list[str]:
    """``a -> b`` for each module of package ``importer`` importing a module of package ``imported``."""
    def inside(name: str, package: str) -> bool:
        return name == package or name.startswith(package + ".")

    return sorted(f"{name} -> {other}" for name, others in graph.items() if inside(name, importer)
                  for other in others if inside(other, imported))


def test_chunking_and_graph_do_not_import_each_other() -> None:
    """What both need of a language is in rag.languages; rag.dispatcher calls both (#50)."""
    graph = _imports_of_rag_modules()

    assert _imports_between(graph, "rag.chunking", "rag.graph") == []
    assert _imports_between(graph, "rag.graph", "rag.chunking") == []
    assert _imports_between(graph, "rag.languages", "rag.chunking") == []
    assert "rag.graph.extract" in graph["rag.dispatcher"], "the test sees a real tie"
    assert "rag.languages.definitions" in graph["rag.graph.definitions"]

"""Builds the ``django-code`` evaluation set, CodeSearchNet style.

Source: the Django 5.1.4 sdist (pip download), packages ``django/utils`` and
``django/db/models``. Every docstring (module, class, function) is removed from
the indexed copy; a function or method whose docstring could be removed
cleanly becomes a case: query = the docstring's first paragraph, answer = the
definition's path and line span (decorators to last line) in the copy.
Removed lines are dropped and the spans recomputed; a body that held only its
docstring gets ``pass`` on the docstring's first line. At most 300 cases are
drawn with a fixed seed.

Usage: .venv/bin/python eval/build_django_code.py [--max-queries N]
"""

import ast
import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import builder_main, drop_repeated_queries, fetch_sdist, fresh_copy, write_cases, write_copy

NAME = "django-code"
DJANGO = "5.1.4"
PARTS = ("django/utils", "django/db/models")
MIN_WORDS, MAX_WORDS = 4, 60

Scope = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Definition:
    qualname: str
    start: int  # first line (a decorator's, if any), in the stripped file
    end: int
    query: str


def scopes(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, Scope]]:
    """Every module, class and function below ``node`` with its qualified name."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}{child.name}"
            yield name, child
            yield from scopes(child, f"{name}.")
        else:
            yield from scopes(child, prefix)


def docstring_expr(scope: Scope) -> ast.Expr | None:
    first = scope.body[0] if scope.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def owns_its_lines(expr: ast.Expr, lines: list[str]) -> bool:
    """Whether the docstring is alone on its lines (so removing the lines removes only it)."""
    assert expr.end_lineno is not None and expr.end_col_offset is not None
    before = lines[expr.lineno - 1].encode()[: expr.col_offset]  # ast offsets count UTF-8 bytes
    after = lines[expr.end_lineno - 1].encode()[expr.end_col_offset:]
    return not before.strip() and not after.strip()


def first_paragraph(docstring: str) -> str:
    paragraph = re.split(r"\n\s*\n", docstring.strip(), maxsplit=1)[0]
    return " ".join(paragraph.replace("`", "").split())


def usable_query(text: str) -> bool:
    words = len(text.split())
    return MIN_WORDS <= words <= MAX_WORDS and not text.startswith((">>>", ":", "..", "#"))


def strip_docstrings(source: str) -> tuple[str, list[Definition]]:
    """``source`` without its docstrings, and the functions that can be cases."""
    tree = ast.parse(source)
    lines = re.findall(r"[^\n]*\n|[^\n]+$", source)  # split at "\n" only, as ast and the chunkers do
    removed: set[int] = set()
    replaced: dict[int, str] = {}
    candidates = []
    for qualname, scope in [("", tree), *scopes(tree)]:
        expr = docstring_expr(scope)
        if expr is None or not owns_its_lines(expr, lines):
            continue
        assert expr.end_lineno is not None
        span = range(expr.lineno, expr.end_lineno + 1)
        if len(scope.body) == 1 and not isinstance(scope, ast.Module):
            indent = re.match(r"[ \t]*", lines[expr.lineno - 1])
            assert indent is not None
            replaced[expr.lineno] = f"{indent.group()}pass\n"
            span = range(expr.lineno + 1, expr.end_lineno + 1)
        removed.update(span)
        if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
            candidates.append((qualname, scope, first_paragraph(ast.get_docstring(scope) or "")))
    kept = sorted(removed)

    def new_line(old: int) -> int:
        return old - bisect.bisect_right(kept, old)

    text = "".join(replaced.get(n, line) for n, line in enumerate(lines, 1) if n not in removed)
    ast.parse(text)  # still valid Python
    definitions = [
        Definition(name, new_line(min([d.lineno for d in node.decorator_list] + [node.lineno])),
                   new_line(node.end_lineno or node.lineno), query)
        for name, node, query in candidates if usable_query(query)
    ]
    return text, definitions


def build(max_queries: int = 300) -> Path:
    tree = fetch_sdist("django", DJANGO)
    copy = fresh_copy(NAME)
    cases: list[dict[str, Any]] = []
    for part in PARTS:
        for source in sorted((tree / part).rglob("*.py")):
            relative = source.relative_to(tree).as_posix()
            text, definitions = strip_docstrings(source.read_text(encoding="utf-8"))
            write_copy(copy, relative, text)
            cases.extend({"id": f"{relative}:{d.qualname}", "query": d.query,
                          "relevant": [{"path": relative, "startLine": d.start, "endLine": d.end}]}
                         for d in definitions)
    header = (f"{NAME}: Django {DJANGO} {', '.join(PARTS)}; query = first docstring paragraph, "
              "answer = the definition in the copy without docstrings (eval/build_django_code.py)")
    return write_cases(NAME, drop_repeated_queries(cases), max_queries, header)


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

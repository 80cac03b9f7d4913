"""Builds the ``rxjs-code`` evaluation set: TypeScript, JSDoc -> the documented definition.

Source: ``src/**/*.ts`` of the rxjs 7.8.1 npm tarball (npm pack). Every JSDoc
comment on lines of its own is removed from the indexed copy; a function,
method, class or variable it documented becomes a case: query = the comment's
first paragraph, answer = the definition's path and line span in the copy
(see ``jsdoc.py``). At most 300 cases are drawn with a fixed seed.

Usage: .venv/bin/python eval/build_rxjs_code.py [--max-queries N]
"""

from pathlib import Path

from common import builder_main, fetch_npm
from jsdoc import build_set

NAME = "rxjs-code"
RXJS = "7.8.1"


def sources(tree: Path) -> list[Path]:
    return sorted((tree / "src").rglob("*.ts"))


def build(max_queries: int = 300) -> Path:
    header = (f"{NAME}: rxjs {RXJS} src/**/*.ts; query = first JSDoc paragraph, answer = the definition "
              "in the copy without JSDoc (eval/build_rxjs_code.py)")
    return build_set(NAME, fetch_npm("rxjs", RXJS), sources, "typescript", header, max_queries)


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

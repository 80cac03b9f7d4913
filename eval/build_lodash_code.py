"""Builds the ``lodash-code`` evaluation set: JavaScript (CommonJS), JSDoc -> the documented definition.

Source: the per-function modules (``*.js`` at the top level, internal ``_*.js``
helpers included) of the lodash 4.17.21 npm tarball (npm pack); the bundles
(``lodash.js``, ``core.js``, minified files) and ``fp/`` are left out, as they
repeat the modules. JSDoc is removed and cases drawn as in ``jsdoc.py``: query
= the comment's first paragraph, answer = path + line span of the definition
in the copy. At most 300 cases are drawn with a fixed seed.

Usage: .venv/bin/python eval/build_lodash_code.py [--max-queries N]
"""

from pathlib import Path

from common import builder_main, fetch_npm
from jsdoc import build_set

NAME = "lodash-code"
LODASH = "4.17.21"
BUNDLES = frozenset({"lodash.js", "core.js", "fp.js"})


def sources(tree: Path) -> list[Path]:
    return sorted(p for p in tree.glob("*.js") if p.name not in BUNDLES and not p.name.endswith(".min.js"))


def build(max_queries: int = 300) -> Path:
    header = (f"{NAME}: lodash {LODASH} modules; query = first JSDoc paragraph, answer = the definition "
              "in the copy without JSDoc (eval/build_lodash_code.py)")
    return build_set(NAME, fetch_npm("lodash", LODASH), sources, "javascript", header, max_queries)


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

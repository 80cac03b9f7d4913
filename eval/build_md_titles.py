"""Builds the ``md-titles`` evaluation set: Markdown documentation, section title -> section body.

Source: the Markdown documentation of the starlette 1.10.0 (``docs/*.md``),
pymdown-extensions 13.1.2 (``docs/src/markdown/**/*.md``) and Markdown 3.11.3
(``docs/**/*.md``) sdists (pip download), projects used nowhere else in eval/, copied to
``copy/<project>/...``. A case is a leaf section's title, removed from the
copy, and the line span of its body (``title_cases.py``), as ``rst-docs`` has
for reST: a held-out-style set whose queries are titles, where ``md-docs``'s
are first sentences. Titles found elsewhere in the copy, or more than once
among the cases, give none. At most 300 cases are drawn with a fixed seed.

Usage: .venv/bin/python eval/build_md_titles.py [--max-queries N]
"""

from pathlib import Path
from typing import Any

from common import builder_main, drop_repeated_queries, fetch_sdist, fresh_copy, write_cases, write_copy
from title_cases import file_cases, unique_queries

NAME = "md-titles"
PROJECTS = (("starlette", "1.10.0", "docs"), ("pymdown-extensions", "13.1.2", "docs/src/markdown"),
            ("markdown", "3.11.3", "docs"))


def build(max_queries: int = 300) -> Path:
    copy = fresh_copy(NAME)
    cases: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    for project, version, folder in PROJECTS:
        docs = fetch_sdist(project, version) / folder
        for source in sorted(docs.rglob("*.md")):
            if any(part.startswith(".") for part in source.relative_to(docs).parts):
                continue  # pymdown's .snippets/: included into pages by its build, not pages
            relative = f"{project}/{source.relative_to(docs).as_posix()}"
            text, found = file_cases(source.read_text(encoding="utf-8"), relative)
            write_copy(copy, relative, text)
            texts[relative] = text
            cases.extend(found)
    header = (f"{NAME}: Markdown docs of {', '.join(f'{p} {v}' for p, v, _ in PROJECTS)}; query = a section's "
              "title, removed from the copy; answer = path + line span of the section's body "
              "(eval/build_md_titles.py)")
    return write_cases(NAME, drop_repeated_queries(unique_queries(cases, texts)), max_queries, header)


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

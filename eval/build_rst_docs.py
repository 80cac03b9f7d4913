"""Builds the ``rst-docs`` evaluation set: reStructuredText documentation, section title -> section.

Source: the ``docs/**/*.rst`` files of the flask 3.1.0, werkzeug 3.1.3 and
jinja2 3.1.4 sdists (pip download), copied to ``copy/<project>/...``. A case is
a section without subsections that is not the document's title and has at
least ``MIN_BODY_WORDS`` words of body: query = its title (inline markup
reduced to words), answer = path + the line span of its body in the copy. The
title (with its adornment lines) is removed from the copy. Titles found more
than once among the cases give none. The answer is a line span, not a
headerPath, so it is judged the same whether ``.rst`` files are chunked as
plain text or by section. Change logs, licenses and author lists are indexed
but give no cases. At most 300 cases are drawn with a fixed seed.

Usage: .venv/bin/python eval/build_rst_docs.py [--max-queries N]
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import builder_main, drop_repeated_queries, fetch_sdist, fresh_copy, write_cases, write_copy

NAME = "rst-docs"
PROJECTS = (("flask", "3.1.0"), ("werkzeug", "3.1.3"), ("jinja2", "3.1.4"))
NO_CASES = re.compile(r"change|history|licen[cs]e|authors|contributors", re.IGNORECASE)
MIN_TITLE_WORDS, MIN_BODY_WORDS = 2, 20

_ADORNMENT = re.compile(r"([!-/:-@\[-`{-~])\1+\s*$")  # one punctuation character repeated
_ROLE = re.compile(r":[\w:+-]+:`([^`<]*?)\s*(?:<[^`]*>)?`")
_MARKUP = re.compile(r"`+|\*{1,2}|\|")


@dataclass(frozen=True)
class Title:
    first: int  # 0-based first line of the title block (the overline, if any)
    end: int  # 0-based line after the underline
    text: str
    style: tuple[str, bool]  # (adornment character, has an overline): the level's key


def titles(lines: list[str]) -> list[Title]:
    """Section titles: an unindented text line under an optional overline and over an underline
    of one repeated punctuation character at least as long as the text."""
    found = []
    index = 0
    while index + 1 < len(lines):
        text, under = lines[index], lines[index + 1]
        before = lines[index - 1] if index > 0 else ""
        adornment = _ADORNMENT.match(under)
        overlined = adornment is not None and before.rstrip() == under.rstrip()
        if (adornment and text.strip() and not _ADORNMENT.match(text)
                and (overlined or (not text[0].isspace() and not before.strip()))
                and len(under.rstrip()) >= len(text.rstrip())):
            first = index - 1 if overlined else index
            found.append(Title(first, index + 2, text.strip(), (adornment.group(1), overlined)))
            index += 2
        else:
            index += 1
    return found


def plain(text: str) -> str:
    return " ".join(_MARKUP.sub("", _ROLE.sub(r"\1", text)).split())


@dataclass(frozen=True)
class Section:
    title: Title
    body_first: int  # 0-based, in the original lines
    body_end: int


def leaf_sections(lines: list[str]) -> list[Section]:
    """Sections without subsections, the document title excluded, each with its body's lines."""
    found = titles(lines)
    levels: list[tuple[str, bool]] = []
    for title in found:
        if title.style not in levels:
            levels.append(title.style)
    sections = []
    for number, title in enumerate(found):
        following = found[number + 1] if number + 1 < len(found) else None
        level = levels.index(title.style)
        if level == 0 or (following is not None and levels.index(following.style) > level):
            continue  # the document title, or a section with subsections
        end = following.first if following is not None else len(lines)
        sections.append(Section(title, title.end, end))
    return sections


def file_cases(text: str, path: str) -> tuple[str, list[dict[str, Any]]]:
    """The copy's text of one document (case titles removed) and its cases."""
    lines = text.split("\n")
    chosen = [s for s in leaf_sections(lines)
              if len(plain(s.title.text).split()) >= MIN_TITLE_WORDS
              and len(plain("\n".join(lines[s.body_first:s.body_end])).split()) >= MIN_BODY_WORDS]
    if NO_CASES.search(Path(path).name):
        chosen = []
    removed = {n for s in chosen for n in range(s.title.first, s.title.end)}
    kept = [n for n in range(len(lines)) if n not in removed]
    new_line = {old: new for new, old in enumerate(kept, 1)}
    cases = []
    for section in chosen:
        body = [n for n in range(section.body_first, section.body_end) if lines[n].strip()]
        cases.append({"id": f"{path}:{section.title.first + 1}", "query": plain(section.title.text),
                      "relevant": [{"path": path, "startLine": new_line[body[0]], "endLine": new_line[body[-1]]}]})
    return "\n".join(lines[n] for n in kept), cases


def build(max_queries: int = 300) -> Path:
    copy = fresh_copy(NAME)
    cases: list[dict[str, Any]] = []
    for project, version in PROJECTS:
        docs = fetch_sdist(project, version) / "docs"
        for source in sorted(docs.rglob("*.rst")):
            relative = f"{project}/{source.relative_to(docs).as_posix()}"
            text, found = file_cases(source.read_text(encoding="utf-8"), relative)
            write_copy(copy, relative, text)
            cases.extend(found)
    header = (f"{NAME}: reST docs of {', '.join(f'{p} {v}' for p, v in PROJECTS)}; query = a section's title, "
              "removed from the copy; answer = path + line span of the section's body (eval/build_rst_docs.py)")
    return write_cases(NAME, drop_repeated_queries(cases), max_queries, header)


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

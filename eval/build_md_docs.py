"""Builds the ``md-docs`` evaluation set: Markdown documentation, one query per section.

Source: the ``docs/**/*.md`` files of the click 8.5.1, black 26.10.1 and attrs
26.1.0 sdists (pip download), copied to ``copy/<project>/...``. A case is a
section without subsections whose headerPath is unique in its file and which
has a prose paragraph: query = that paragraph's first sentence (Markdown and
MyST markup reduced to plain words), answer = path + the section's line span
in the copy (title included), judged as the peers' windows are. The sentence
is removed from the indexed copy (sentences repeated elsewhere give no case),
so the query never appears there verbatim;
the rest of the section (its title included) is what search has to find.
Change logs, licenses and author lists are indexed but give no cases. At most
300 cases are drawn with a fixed seed.

Usage: .venv/bin/python eval/build_md_docs.py [--max-queries N]
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import builder_main, drop_repeated_queries, fetch_sdist, fresh_copy, write_cases, write_copy

from rag.chunking.markdown import markdown_sections

NAME = "md-docs"
PROJECTS = (("click", "8.5.1"), ("black", "26.10.1"), ("attrs", "26.1.0"))
NO_CASES = re.compile(r"change|history|licen[cs]e|authors|contributors", re.IGNORECASE)
MIN_WORDS, MAX_WORDS = 6, 50

_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,}|:{3,})")
_LIST_ITEM = re.compile(r"[ \t]*(?:[*+-]|\d{1,9}[.)])(?:\s|$)")
_PROSE_START = re.compile(r"(?![*+-]\s)[A-Za-z_*`{\"']")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|cf)|\.\.)\.$", re.IGNORECASE)
_MARKUP = [
    (re.compile(r"\{[\w:-]+\}`([^`<]*?)\s*(?:<[^`]*>)?`"), r"\1"),  # MyST roles: {func}`option`
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # links and images
    (re.compile(r"\[\^[^\]]*\]"), ""),  # footnote references
    (re.compile(r"`+"), ""),
    (re.compile(r"(\*{1,2}|\b_{1,2})(\S(?:.*?\S)?)\1"), r"\2"),  # emphasis
]


@dataclass(frozen=True)
class Section:
    header_path: str
    header_line: int  # 0-based index of the header line
    end: int  # 0-based index after the section's last line


@dataclass(frozen=True)
class Edit:
    first: int  # 0-based lines first..end-1 are replaced by ``lines``
    end: int
    lines: list[str]


def leaf_sections(text: str) -> list[Section]:
    """Sections under an ATX header with a headerPath unique in the file and no subsections."""
    spans = markdown_sections(text)
    paths = [header_path for header_path, _, _ in spans]
    lines = text.split("\n")
    sections = []
    for header_path, start, end in spans:
        unique = paths.count(header_path) == 1
        leaf = not any(p.startswith(header_path + " > ") for p in paths)
        if header_path and unique and leaf and lines[start - 1].lstrip().startswith("#"):
            sections.append(Section(header_path, start - 1, end))
    return sections


def first_prose_paragraph(lines: list[str], section: Section) -> tuple[int, int] | None:
    """Lines (first, end) of the section's first paragraph of prose, outside fences."""
    index, fence = section.header_line + 1, None
    while index < section.end:
        line = lines[index]
        marker = _FENCE.match(line)
        if fence is not None:
            fence = None if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence) \
                else fence
        elif marker:
            fence = marker.group(1)
        elif line.strip():
            end = index + 1
            while end < section.end and lines[end].strip() and not _FENCE.match(lines[end]) \
                    and not _LIST_ITEM.match(lines[end]):
                end += 1
            if _PROSE_START.match(line):
                return index, end
            index = end
            continue
        index += 1
    return None


def plain(text: str) -> str:
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def split_first_sentence(paragraph: str) -> tuple[str, str] | None:
    """(first sentence, the rest) of a paragraph, or None when it has no sentence end."""
    for end in _SENTENCE_END.finditer(paragraph):
        if not _ABBREVIATION.search(paragraph[: end.end()]):
            return paragraph[: end.end()], paragraph[end.end():].lstrip()
    return None


def section_case(lines: list[str], section: Section) -> tuple[str, Edit] | None:
    """The query of a section and the edit that removes it from the copy."""
    span = first_prose_paragraph(lines, section)
    if span is None:
        return None
    first, end = span
    split = split_first_sentence("\n".join(lines[first:end]))
    if split is None:
        return None
    sentence, rest = split
    query = plain(sentence)
    if not MIN_WORDS <= len(query.split()) <= MAX_WORDS or "http" in query:
        return None
    body_left = rest or any(line.strip() for line in lines[end:section.end])
    if not body_left:
        return None
    if not rest and end < len(lines) and not lines[end].strip():
        end += 1  # the paragraph goes with the blank line after it
    return query, Edit(first, end, rest.split("\n") if rest else [])


def apply(lines: list[str], edits: list[Edit]) -> list[str]:
    for edit in sorted(edits, key=lambda e: e.first, reverse=True):
        lines = lines[: edit.first] + edit.lines + lines[edit.end:]
    return lines


def file_cases(text: str, path: str) -> tuple[str, list[dict[str, Any]]]:
    """The copy's text of one document and its cases."""
    lines = text.split("\n")
    found = [(s, c) for s in leaf_sections(text) if (c := section_case(lines, s)) is not None]
    if NO_CASES.search(Path(path).name):
        found = []
    edited = "\n".join(apply(lines, [edit for _, (_, edit) in found]))
    kept = {header_path: (start, end) for header_path, start, end in markdown_sections(edited)}
    cases = [{"id": f"{path} {s.header_path}", "query": query,
              "relevant": [{"path": path, "startLine": kept[s.header_path][0], "endLine": kept[s.header_path][1]}]}
             for s, (query, _) in found if s.header_path in kept]
    return edited, cases


def build(max_queries: int = 300) -> Path:
    copy = fresh_copy(NAME)
    cases: list[dict[str, Any]] = []
    texts = []
    for project, version in PROJECTS:
        docs = fetch_sdist(project, version) / "docs"
        for source in sorted(docs.rglob("*.md")):
            relative = f"{project}/{source.relative_to(docs).as_posix()}"
            text, found = file_cases(source.read_text(encoding="utf-8"), relative)
            write_copy(copy, relative, text)
            texts.append(plain(text))
            cases.extend(found)
    # A sentence repeated elsewhere in the docs would still be in the copy: no such cases.
    cases = [c for c in cases if not any(c["query"] in text for text in texts)]
    header = (f"{NAME}: Markdown docs of {', '.join(f'{p} {v}' for p, v in PROJECTS)}; query = first "
              "sentence of a section, removed from the copy; answer = path + line span of the section "
              "(eval/build_md_docs.py)")
    return write_cases(NAME, drop_repeated_queries(cases), max_queries, header)


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

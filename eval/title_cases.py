"""Cases of a Markdown document from its section titles: what ``md-titles`` and ``ru-docs`` share.

A case is a section under an ATX header (``#`` .. ``######``) without
subsections, whose headerPath is unique in its file, with at least
``MIN_TITLE_WORDS`` words of title (its numbering, such as ``2.3.``, left
out) and ``MIN_BODY_WORDS`` words of body: query = the title as plain words,
answer = path + the line span of the body in the copy. The header line is
removed from the copy, so the body joins the section before it and the query
is never found there as a title.
"""

import html
import re
from typing import Any

from rag.chunking.markdown import HEADER_SEPARATOR, markdown_sections

MIN_TITLE_WORDS, MIN_BODY_WORDS = 2, 20
NO_CASES = re.compile(r"change|history|licen[cs]e|authors|contributors|release", re.IGNORECASE)

_HEADER = re.compile(r"#{1,6}\s+(.*?)\s*#*\s*$")
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-ZА-Я]\.(?:\d+\.?)*)\s+")
_MARKUP = [
    (re.compile(r"\{[^}]*\}"), ""),  # attribute lists: {: #id .class}
    (re.compile(r"(?<!\S):[a-z0-9]+(?:[-_][a-z0-9]+)+:(?!\S)"), ""),  # icon shortcodes: :material-bug:
    (re.compile(r"!?\[([^\]]*)\]\([^)]*\)"), r"\1"),  # links and images
    (re.compile(r"`+|\*{1,2}|(?<!\w)_{1,2}|_{1,2}(?!\w)"), ""),
]


def plain(text: str) -> str:
    text = html.unescape(text)
    for pattern, replacement in _MARKUP:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def title_query(header_line: str) -> str:
    """The words of a header line, without its ``#`` marks and numbering."""
    found = _HEADER.match(header_line.strip())
    return _NUMBERING.sub("", plain(found.group(1).rstrip("¶ "))) if found else ""


def file_cases(text: str, path: str) -> tuple[str, list[dict[str, Any]]]:
    """The copy's text of one document (case titles removed) and its cases."""
    lines = text.split("\n")
    spans = markdown_sections(text)
    paths = [header_path for header_path, _, _ in spans]
    chosen: list[tuple[int, int, int, str]] = []  # (0-based header line, body first, body end, query)
    for header_path, start, end in spans:
        own = header_path.split(HEADER_SEPARATOR)[-1]
        # (a header with no body of its own starts the span of its first subsection)
        header = next((n for n in range(start - 1, end) if lines[n].strip() == own), None)
        if (header is None or not header_path or paths.count(header_path) != 1
                or any(p.startswith(header_path + HEADER_SEPARATOR) for p in paths)):
            continue
        query = title_query(lines[header])
        body = plain("\n".join(lines[header + 1:end]))
        if len(query.split()) >= MIN_TITLE_WORDS and len(body.split()) >= MIN_BODY_WORDS:
            chosen.append((header, header + 1, end, query))
    if NO_CASES.search(path):
        chosen = []
    removed = {header for header, _, _, _ in chosen}
    kept = [n for n in range(len(lines)) if n not in removed]
    new_line = {old: new for new, old in enumerate(kept, 1)}
    cases = []
    for header, first, end, query in chosen:
        body = [n for n in range(first, end) if lines[n].strip()]
        cases.append({"id": f"{path}:{header + 1}", "query": query,
                      "relevant": [{"path": path, "startLine": new_line[body[0]], "endLine": new_line[body[-1]]}]})
    return "\n".join(lines[n] for n in kept), cases


def unique_queries(cases: list[dict[str, Any]], texts: dict[str, str]) -> list[dict[str, Any]]:
    """Cases whose query is found in no copied text (a title kept in a table of contents, a link,
    another page's sentence): searched as a phrase, case and spacing ignored."""
    folded = [plain(text).lower() for text in texts.values()]
    return [c for c in cases if not any(c["query"].lower() in text for text in folded)]

"""Builds the Russian evaluation sets ``ru-man-pages`` and ``ru-man-options`` from Debian's manpages-ru.

Source: the man pages of sections 1 and 8 (user and administrator commands) in
the Debian package manpages-ru 4.27.0-1 (pinned by sha256, fetched once from the
Debian archive into ``.bench/eval/downloads/``), each converted to Markdown
(``man_markdown.py``: the pages are man(7), which ``mandoc -T markdown`` does not
convert) as ``copy/man<section>/<page>.md``; ``.so`` redirections are skipped.

- ``ru-man-pages``: query = a page's one-line description (the text after the
  dash of its НАИМЕНОВАНИЕ/НАЗВАНИЕ/ИМЯ line), removed from that line in the copy;
  answer = the whole page (path + its line span).
- ``ru-man-options``: query = the first sentence of an option's description
  (an item whose tag starts with "-"), removed from the copy, for options whose
  description has another sentence to find them by; answer = path + line span
  of the option's section (its tag a heading).

Queries repeated elsewhere (a description shared by two pages, a sentence left
in another section) give no case; at most 300 cases each, drawn with a fixed seed.

Usage: .venv/bin/python eval/build_ru_man.py [--max-queries N]
"""

import gzip
import io
import re
import tarfile
from pathlib import Path
from typing import Any

from common import builder_main, drop_repeated_queries, fetch_deb_data, fresh_copy, write_cases, write_copy
from man_markdown import man_to_markdown

from rag.chunking.markdown import markdown_sections

PAGES, OPTIONS = "ru-man-pages", "ru-man-options"
NAME = PAGES  # run_eval.py's key for this builder; it builds both sets
PACKAGE, VERSION = "manpages-ru", "4.27.0-1"
DEB_URL = f"https://deb.debian.org/debian/pool/main/m/manpages-l10n/{PACKAGE}_{VERSION}_all.deb"
DEB_SHA256 = "8e86695991e187a1e08332fd2fcfea5d25390439e8020171987db77f35b3f1b6"
SECTIONS = ("man1", "man8")
NAME_SECTIONS = {"НАИМЕНОВАНИЕ", "НАЗВАНИЕ", "ИМЯ", "NAME"}
MIN_WORDS = 4

_DASH = re.compile(r"\s[-–—]\s")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# A dot after one letter (т. е., и т. д., initials) or these words ends no sentence.
_ABBREVIATION = re.compile(r"(?:(?<!\w)\w|\b(?:см|напр|др|англ|стр|etc)|\.\.)\.$", re.IGNORECASE)


def fetch_pages() -> dict[str, str]:
    """The man(7) source of every page of SECTIONS, by its path in the copy (``man1/ls.1.md``)."""
    pages = {}
    with tarfile.open(fileobj=io.BytesIO(fetch_deb_data(DEB_URL, DEB_SHA256))) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts
            if member.isfile() and len(parts) >= 2 and parts[-2] in SECTIONS and member.name.endswith(".gz"):
                source = gzip.decompress(tar.extractfile(member).read()).decode("utf-8")  # type: ignore[union-attr]
                if not source.lstrip().startswith(".so "):
                    pages[f"{parts[-2]}/{Path(parts[-1]).stem}.md"] = source
    return dict(sorted(pages.items()))


def sentences(text: str) -> list[str]:
    """A paragraph's sentences (a dot after an abbreviation ends none)."""
    found, current = [], ""
    for piece in _SENTENCE.split(text):
        current = f"{current} {piece}".strip()
        if not _ABBREVIATION.search(current):
            found.append(current)
            current = ""
    return found + ([current] if current else [])


def page_case(path: str, lines: list[str]) -> dict[str, Any] | None:
    """The page's description as a query, removed from its name line in ``lines`` (edited in place)."""
    for header_path, start, end in markdown_sections("\n".join(lines)):
        if header_path.split(" > ")[-1].lstrip("# ").strip() not in NAME_SECTIONS:
            continue
        for index in range(start, end):
            split = _DASH.split(lines[index], maxsplit=1)
            if len(split) == 2 and len(split[1].split()) >= 2:
                lines[index] = split[0]
                return {"id": f"{path} description", "query": split[1].strip()}
        return None
    return None


def option_cases(path: str, lines: list[str]) -> list[tuple[str, str, int, int]]:
    """(header path, query, first line, end line) of each option whose description's first sentence
    can be removed with more left; ``lines`` lose those sentences (edited in place)."""
    found = []
    for header_path, start, end in markdown_sections("\n".join(lines)):
        title = header_path.split(" > ")[-1]
        if not re.match(r"#{3,4} -", title):
            continue
        body = next((i for i in range(start, end) if lines[i].strip() and not lines[i].startswith("#")), None)
        if body is None or lines[body].startswith("```"):
            continue
        parts = sentences(lines[body])
        if len(parts) < 2 or len(parts[0].split()) < MIN_WORDS:
            continue
        lines[body] = " ".join(parts[1:])
        found.append((header_path, parts[0], start, end))
    return found


def build(max_queries: int = 300) -> Path:
    pages_copy, options_copy = fresh_copy(PAGES), fresh_copy(OPTIONS)
    page_cases: list[dict[str, Any]] = []
    option_queries: list[dict[str, Any]] = []
    page_texts, option_texts = [], []
    for path, source in fetch_pages().items():
        markdown = man_to_markdown(source)
        lines = markdown.split("\n")
        case = page_case(path, lines)
        if case is not None:
            case["relevant"] = [{"path": path, "startLine": 1, "endLine": len(lines)}]
            page_cases.append(case)
        write_copy(pages_copy, path, "\n".join(lines))
        page_texts.append("\n".join(lines))
        lines = markdown.split("\n")
        found = option_cases(path, lines)
        edited = "\n".join(lines)
        spans = {header_path: (first, last) for header_path, first, last in markdown_sections(edited)}
        option_queries.extend(
            {"id": f"{path} {header_path}", "query": query,
             "relevant": [{"path": path, "startLine": spans[header_path][0], "endLine": spans[header_path][1]}]}
            for header_path, query, _, _ in found if header_path in spans)
        write_copy(options_copy, path, edited)
        option_texts.append(edited)
    # A query still written somewhere in its copy would be found verbatim: no such cases.
    page_cases = [c for c in page_cases if not any(c["query"] in text for text in page_texts)]
    option_queries = [c for c in option_queries if not any(c["query"] in text for text in option_texts)]
    origin = f"{PACKAGE} {VERSION} sections 1 and 8 as Markdown (eval/build_ru_man.py)"
    write_cases(PAGES, drop_repeated_queries(page_cases), max_queries,
                f"{PAGES}: {origin}; query = a page's one-line description, removed from the copy; "
                "answer = the page")
    return write_cases(OPTIONS, drop_repeated_queries(option_queries), max_queries,
                       f"{OPTIONS}: {origin}; query = first sentence of an option's description, removed "
                       "from the copy; answer = path + line span of the option's section")


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

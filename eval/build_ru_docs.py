"""Builds the ``ru-docs`` evaluation set: Russian documentation, section title -> section body.

Source: the Russian HTML documentation of four Debian packages (each pinned by
sha256, fetched once from the Debian archive into ``.bench/eval/downloads/``):
debian-faq-ru 11.1, maint-guide-ru 1.2.53, developers-reference-ru 12.18 and
doublecmd-help-ru 1.0.10-1, each page rendered to Markdown by the HTML chunker's
own reader (headings as ``#`` lines, ``rag/chunking/html.py``) and copied as
``copy/<package>/<page>.md``; tables of contents (index pages, the one-page
copy of the developers' reference, its search page, and the lists of links to
sections inside pages) are left out. A case is a
leaf section's title (its numbering left out), removed from the copy, and the
line span of its body (``title_cases.py``), as ``md-titles`` has in English.
Titles found elsewhere in the copy, or more than once among the cases, give
none. At most 300 cases are drawn with a fixed seed.

Usage: .venv/bin/python eval/build_ru_docs.py [--max-queries N]
"""

import io
import re
import tarfile
from pathlib import Path
from typing import Any

import lxml.html
from common import builder_main, drop_repeated_queries, fetch_deb_data, fresh_copy, write_cases, write_copy
from title_cases import file_cases, unique_queries

from rag.chunking.html import _PageText

NAME = "ru-docs"
POOL = "https://deb.debian.org/debian/pool/main"
PACKAGES = (  # (name, file in the pool, sha256)
    ("debian-faq-ru", "d/debian-faq/debian-faq-ru_11.1_all.deb",
     "aaaae7a409c5cf5f5b8c26991f6ef484297e0cd2dee74c8d675cfa6613bce541"),
    ("maint-guide-ru", "m/maint-guide/maint-guide-ru_1.2.53_all.deb",
     "41b69743c45f0a931edca9ab19232e226cebce393cbafdd582f0d000499a0d19"),
    ("developers-reference-ru", "d/developers-reference/developers-reference-ru_12.18_all.deb",
     "a618bfa826e2436fa73d5bf4eaac7170ff9d25a5d1bdd86b1c25a196a2b886c6"),
    ("doublecmd-help-ru", "d/doublecmd-help/doublecmd-help-ru_1.0.10-1_all.deb",
     "81d380674da3b6daf2d12101d0937d1ca978cc66c64220ae55a393994f325f2c"),
)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
NOT_PAGES = re.compile(r"^(?:index|search|genindex|developers-reference)(?:\.ru)?\.html$")


def without_contents(page: str) -> str:
    """The page without its tables of contents: elements of class toc or contents, and lists whose
    every item is a link and nothing else (they repeat the section titles that queries are drawn from)."""
    tree = lxml.html.fromstring(_XML_DECLARATION.sub("", page))
    for element in list(tree.iter("div", "nav", "ul", "ol", "dl")):
        classes = set((element.get("class") or "").split())
        items = [item for item in element if item.tag in ("li", "dt", "dd")]
        linked = items and all(" ".join(item.text_content().split()).strip(".0123456789 ")
                               == " ".join(" ".join(link.text_content().split()) for link in item.iter("a")).strip()
                               or (item.tag == "dd" and all(sub.tag in ("dl", "ul", "ol") for sub in item))
                               for item in items)
        if (classes & {"toc", "contents", "toctree-wrapper"} or linked) and element.getparent() is not None:
            element.getparent().remove(element)
    return lxml.html.tostring(tree, encoding="unicode")


def markdown_of(page: str) -> str:
    """An HTML page's text as the HTML chunker reads it: Markdown headings, lines of text, fences."""
    reader = _PageText()
    reader.feed(without_contents(page))
    reader.close()
    reader.finish()
    return "\n".join(reader.rendering.lines) + "\n"


def fetch_pages() -> dict[str, str]:
    """Every page of the packages' HTML documentation as Markdown, by its path in the copy."""
    pages = {}
    for name, pool_path, sha256 in PACKAGES:
        with tarfile.open(fileobj=io.BytesIO(fetch_deb_data(f"{POOL}/{pool_path}", sha256))) as tar:
            for member in tar.getmembers():
                file_name = Path(member.name).name
                if member.isfile() and file_name.endswith(".html") and "/_" not in member.name \
                        and not NOT_PAGES.match(file_name):
                    page = tar.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
                    pages[f"{name}/{file_name.removesuffix('.html').removesuffix('.ru')}.md"] = markdown_of(page)
    return dict(sorted(pages.items()))


def build(max_queries: int = 300) -> Path:
    copy = fresh_copy(NAME)
    cases: list[dict[str, Any]] = []
    texts: dict[str, str] = {}
    for relative, page in fetch_pages().items():
        text, found = file_cases(page, relative)
        write_copy(copy, relative, text)
        texts[relative] = text
        cases.extend(found)
    header = (f"{NAME}: Russian HTML docs of {', '.join(name for name, _, _ in PACKAGES)} (Debian) as Markdown; "
              "query = a section's title, removed from the copy; answer = path + line span of the section's body "
              "(eval/build_ru_docs.py)")
    return write_cases(NAME, drop_repeated_queries(unique_queries(cases, texts)), max_queries, header)


if __name__ == "__main__":
    builder_main(__doc__.splitlines()[0], build)

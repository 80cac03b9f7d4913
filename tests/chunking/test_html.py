"""HTML chunking: sections by headings, text only, lines of the HTML file."""

from pathlib import Path

import pytest

from rag.chunking.html import chunk_html
from rag.chunking.model import Chunk

# These tests look at the sections the parser finds; merging them: test_section_merging.py
pytestmark = pytest.mark.usefixtures("sections_unmerged")

STRUCTURED = Path(__file__).parent / "fixtures" / "structured"


def chunk(text: str, max_tokens: int = 1000, overlap: int = 0) -> list[Chunk]:
    chunks = chunk_html(text, "site/page.html", max_tokens=max_tokens, overlap=overlap)
    lines = text.count("\n") + 1
    for c in chunks:
        assert c.content.strip() and c.tokens <= max_tokens
        assert 1 <= c.metadata["startLine"] <= c.metadata["endLine"] <= lines, c.metadata
    return chunks


def test_fixture_sections_text_and_lines() -> None:
    text = (STRUCTURED / "page.html").read_text()
    chunks = chunk(text)
    assert [(c.metadata["startLine"], c.metadata["endLine"], c.metadata["headerPath"]) for c in chunks] == [
        (10, 12, "# Tool & Friends"),
        (13, 20, "# Tool & Friends > ## Installing"),
        (21, 22, "# Tool & Friends > ## Searching"),
        (23, 24, "# Tool & Friends > ## Searching > ### Filters"),
    ]
    assert {(c.metadata["sourceType"], c.metadata["language"]) for c in chunks} == {("text", "html")}
    # Entities decoded, whitespace collapsed, list items and <pre> lines kept.
    assert chunks[0].content == "# Tool & Friends\nThe tool indexes code <fast>.\n"
    assert chunks[1].content == (
        "## Installing\n- pip install tool\n- check the version\n\n"
        "```\ntool --version\ntool index .\n```\n"
    )
    assert chunks[2].content == "## Searching\nSearch éverything.\n"
    # Title, style, script (even one holding markup) and navigation are dropped.
    everything = "".join(c.content for c in chunks)
    for dropped in ("Tool docs", "color", "Fake", "document.write", "Home", "Docs\n"):
        assert dropped not in everything


def test_a_page_without_headings_is_one_section() -> None:
    chunks = chunk((STRUCTURED / "no_headings.html").read_text())
    assert [(c.metadata["startLine"], c.metadata["endLine"], c.metadata["headerPath"]) for c in chunks] == [
        (2, 3, "")
    ]
    assert chunks[0].content == "First paragraph of a page.\n\nSecond paragraph.\n"


def test_long_sections_split_with_the_heading_repeated_and_lines_in_order() -> None:
    paragraphs = "".join(f"<p>Paragraph {i} says something about retries.</p>\n" for i in range(40))
    chunks = chunk(f"<h2>Retries</h2>\n{paragraphs}", max_tokens=60, overlap=8)
    assert len(chunks) > 3
    assert all(c.content.startswith("## Retries\n") for c in chunks)
    starts = [c.metadata["startLine"] for c in chunks]
    assert starts == sorted(starts) and starts[0] == 1
    assert chunks[-1].metadata["endLine"] == 41
    last = chunks[-1].metadata["startLine"]
    assert f"Paragraph {last - 2} " in chunks[-1].content  # line n holds paragraph n - 2


def test_broken_and_odd_markup_is_tolerated() -> None:
    assert chunk("") == []
    assert chunk("<html><script>only()</script></html>") == []
    chunks = chunk("<h1>Open <b>heading\n<p>never closed<pre>x = 1")
    assert "x = 1" in "".join(c.content for c in chunks)
    text = "".join(c.content for c in chunk("<p>a &zzz; b &#0; c</p><h3></h3><p>d</p>"))
    assert "a &zzz; b" in text and "d" in text


def test_navigation_roles_and_controls_are_dropped_with_what_they_hold() -> None:
    page = (
        '<div role="navigation"><div><h2>Contents</h2><p>menu</p></div><p>more menu</p></div>\n'
        '<input role="search" name="q">\n'
        "<h1>Body</h1><p>kept <button>Copy</button>text</p>\n"
        '<select><option>Theme</option></select><div role="search"><p>find</p></div><p>end</p>\n'
    )
    chunks = chunk(page)
    assert [(c.metadata["headerPath"], c.content) for c in chunks] == [("# Body", "# Body\nkept text\n\nend\n")]


def test_inline_markup_keeps_words_whole_and_table_rows_on_one_line() -> None:
    page = (
        "<p>re<b>try</b>ing <code>fetch()</code>, then <i>stop</i>.</p>\n"
        "<table><tr><th>name</th><th>value</th></tr>\n<tr><td>retries</td><td>3</td></tr></table>\n"
    )
    assert chunk(page)[0].content == "retrying fetch(), then stop.\n\nname value\nretries 3\n"

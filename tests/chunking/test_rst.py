"""reStructuredText chunking: titles and their levels, what is not a title,
directives and literal blocks kept whole, and .txt detection."""

from pathlib import Path

import pytest
from fixtures.docs.invariants import assert_chunk_invariants

from rag.chunking.model import Chunk
from rag.chunking.rst import chunk_rst, looks_like_rst

# These tests look at the sections the parser finds; merging them: test_section_merging.py
pytestmark = pytest.mark.usefixtures("sections_unmerged")

STRUCTURED = Path(__file__).parent / "fixtures" / "structured"


def chunk(text: str, max_tokens: int = 1000, overlap: int = 0) -> list[Chunk]:
    chunks = chunk_rst(text, "docs/guide.rst", max_tokens=max_tokens, overlap=overlap)
    assert_chunk_invariants(text, chunks, max_tokens)
    return chunks


def spans(chunks: list[Chunk]) -> list[tuple[int, int, str]]:
    return [(c.metadata["startLine"], c.metadata["endLine"], c.metadata["headerPath"]) for c in chunks]


def test_fixture_sections_lines_and_header_paths() -> None:
    text = (STRUCTURED / "guide.rst").read_text()
    chunks = chunk(text)
    assert spans(chunks) == [
        (1, 8, "# User Guide"),
        (10, 25, "# User Guide > ## Installation"),
        (27, 36, "# User Guide > ## Installation > ### Configuration"),
        (38, 45, "# User Guide > ## Usage"),
    ]
    assert [c.metadata["headerLevel"] for c in chunks] == [1, 2, 3, 2]
    assert {(c.metadata["sourceType"], c.metadata["language"]) for c in chunks} == {("text", "rst")}
    # The simple table's borders and the ---- transition are no titles.
    assert "=====  ========\nName   Meaning" in chunks[1].content
    assert chunks[2].content.rstrip().endswith("----")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Levels follow the first appearance of each style, overline or not.
        ("Top\n***\n\nA\n===\n\na\n\nB\n---\n\nb\n\nC\n===\n\nc\n",
         ["# Top > ## A", "# Top > ## A > ### B", "# Top > ## C"]),
        ("=====\nOver\n=====\n\nx\n\nUnder\n=====\n\ny\n", ["# Over", "# Over > ## Under"]),
        # An underline shorter than the title, or a paragraph line above: text.
        ("Long title\n===\n\nx\n", [""]),
        ("para line\nTitle\n=====\n\nx\n", [""]),
        # A transition between blank lines is no title.
        ("a\n\n--------\n\nb\n", [""]),
        # A one-column simple table (border, cell, border, rows) is no title.
        ("=====\nName\n=====\nfirst\nsecond\n=====\n", [""]),
        # An indented line under a literal block's :: is not a title.
        ("Intro::\n\n    Code\n    ====\n\nT\n==\n\nbody\n", ["", "# T"]),
    ],
)
def test_what_is_a_title(text: str, expected: list[str]) -> None:
    assert [c.metadata["headerPath"] for c in chunk(text)] == expected


def test_directives_and_literal_blocks_are_not_split_while_they_fit() -> None:
    code = "".join(f"   value_{i} = compute({i})\n" for i in range(12))
    literal = "".join(f"    $ step {i}\n" for i in range(12))
    text = (
        "Guide\n=====\n\n"
        + "".join(f"Sentence number {i} of the intro.\n\n" for i in range(6))
        + ".. code-block:: python\n\n" + code + "\n"
        + "Run these steps::\n\n" + literal + "\nThe end.\n"
    )
    chunks = chunk(text, max_tokens=120, overlap=10)
    assert len(chunks) > 1
    assert all(c.metadata["headerPath"] == "# Guide" for c in chunks)
    holding_code = [c for c in chunks if "value_0" in c.content]
    assert any(".. code-block:: python" in c.content and code in c.content for c in holding_code)
    assert any("Run these steps::" in c.content and literal in c.content for c in chunks)
    # Later pieces repeat the title (its lines are not counted as theirs).
    assert all(c.content.startswith("Guide\n=====\n") for c in chunks)


def test_a_directive_over_the_bound_is_cut_at_lines() -> None:
    body = "".join(f"   line_{i} = {i}\n" for i in range(80))
    chunks = chunk("T\n=\n\n.. code-block:: python\n\n" + body, max_tokens=60, overlap=5)
    assert len(chunks) > 2
    assert all(c.tokens <= 60 for c in chunks)


@pytest.mark.parametrize(
    ("name", "is_rst"),
    [("notes_rst.txt", True), ("notes_plain.txt", False), ("guide.rst", True)],
)
def test_txt_detection_by_content(name: str, is_rst: bool) -> None:
    assert looks_like_rst((STRUCTURED / name).read_text()) is is_rst


@pytest.mark.parametrize(
    ("text", "is_rst"),
    [
        ("Title\n=====\n\n.. note:: careful\n", True),
        ("Title\n=====\n\nSee ``x``.\n", True),
        ("Title\n=====\n\nJust a heading and words.\n", False),
        ("no titles at all\n\n.. note:: x\n", False),
        ("", False),
    ],
)
def test_txt_detection_needs_a_title_and_more(text: str, is_rst: bool) -> None:
    assert looks_like_rst(text) is is_rst


def test_empty_and_blank_documents_give_no_chunks() -> None:
    assert chunk("") == []
    assert chunk("\n\n   \n") == []


def test_crlf_files_have_the_same_sections() -> None:
    text = (STRUCTURED / "guide.rst").read_text()
    crlf = text.replace("\n", "\r\n")
    assert spans(chunk(crlf)) == spans(chunk(text))
    assert looks_like_rst(crlf)

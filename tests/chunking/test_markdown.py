"""Markdown chunking: sections and header paths, fences, tables, long sections."""

from itertools import pairwise
from pathlib import Path

import pytest
from fixtures.docs.invariants import assert_chunk_invariants
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking.markdown import chunk_markdown
from rag.chunking.model import Chunk

# These tests look at the sections the parser finds; merging them: test_section_merging.py
pytestmark = pytest.mark.usefixtures("sections_unmerged")

GUIDE = Path(__file__).parent / "fixtures" / "docs" / "guide.md"


def chunk(text: str, max_tokens: int = 1000, overlap: int = 0) -> list[Chunk]:
    chunks = chunk_markdown(text, "docs/guide.md", max_tokens=max_tokens, overlap=overlap)
    assert_chunk_invariants(text, chunks, max_tokens)
    return chunks


def paths(chunks: list[Chunk]) -> list[str]:
    return [c.metadata["headerPath"] for c in chunks]


def numbered_lines(count: int, prefix: str = "line") -> str:
    return "".join(f"{prefix} {i} has five tokens\n" for i in range(count))


@pytest.mark.parametrize(
    ("text", "expected_paths"),
    [
        ("# A\n\ntext\n", ["# A"]),
        ("intro\n\n# A\ntext\n", ["", "# A"]),
        ("# A\na\n## B\nb\n### C\nc\n## D\nd\n# E\ne\n", [
            "# A", "# A > ## B", "# A > ## B > ### C", "# A > ## D", "# E"
        ]),
        ("## Skips\nx\n#### Levels\ny\n### Back\nz\n", [
            "## Skips", "## Skips > #### Levels", "## Skips > ### Back"
        ]),
        ("Title\n=====\n\nt\n\nSub\n---\ns\n", ["# Title", "# Title > ## Sub"]),
        ("# Closed ##\nx\n", ["# Closed"]),
        ("#hashtag is text\n", [""]),
        ("    # indented code\n", [""]),
        ("- item\n---\n", [""]),  # a list item above --- is no setext header
        ("---\ntitle: Front\n---\n# A\nx\n", ["", "# A"]),
        ("```\n# comment in a fence\n```\n", [""]),
        ("~~~~\n```\n# still fenced\n~~~~\n# A\nx\n", ["", "# A"]),
        ("1. step\n\n   ```bash\n   # not a header\n   ```\n", [""]),
        ("```\n# never closed\n", [""]),
        ("```inline``` code\n# A\nx\n", ["", "# A"]),
    ],
)
def test_sections(text: str, expected_paths: list[str]) -> None:
    assert paths(chunk(text)) == expected_paths


def test_metadata_and_content() -> None:
    chunks = chunk("intro\n\n# API\n\n## Auth\n\nUse a token.\n\n## Errors\n\nNone.\n")
    assert [(c.metadata["startLine"], c.metadata["endLine"]) for c in chunks] == [
        (1, 1),
        (3, 7),
        (9, 11),
    ]
    assert chunks[1].content == "# API\n\n## Auth\n\nUse a token.\n"  # the empty parent folds in
    assert chunks[1].metadata == {
        "path": "docs/guide.md",
        "sourceType": "markdown",
        "language": "markdown",
        "startLine": 3,
        "endLine": 7,
        "headerPath": "# API > ## Auth",
        "headerLevel": 2,
    }
    assert chunks[0].metadata["headerLevel"] == 0


def test_empty_header_before_a_sibling_stays_a_chunk() -> None:
    chunks = chunk("# A\n\n# B\nb\n")
    assert [(c.content, c.metadata["headerPath"]) for c in chunks] == [
        ("# A\n", "# A"),
        ("# B\nb\n", "# B"),
    ]


def test_long_section_pieces_repeat_the_header() -> None:
    text = "# Intro\nhello\n## Long\n\n" + numbered_lines(60)
    chunks = chunk(text, max_tokens=100, overlap=10)
    long_pieces = [c for c in chunks if c.metadata["headerPath"] == "# Intro > ## Long"]
    assert len(long_pieces) > 3
    assert all(c.content.startswith("## Long\n") for c in long_pieces)
    assert long_pieces[0].metadata["startLine"] == 3
    assert long_pieces[0].content.count("## Long") == 1
    for before, after in pairwise(long_pieces):
        assert after.metadata["startLine"] < before.metadata["endLine"]  # overlap


def test_fence_that_fits_is_never_split() -> None:
    fence = "```python\n" + numbered_lines(15, "x =") + "```\n"
    text = "# Code\n\n" + numbered_lines(10) + "\n" + fence + "\nafter\n"
    chunks = chunk(text, max_tokens=120, overlap=0)
    assert sum(fence in c.content for c in chunks) == 1
    assert all(c.content.count("```") in (0, 2) for c in chunks)


def test_fence_over_the_bound_is_reopened_in_every_piece() -> None:
    body = numbered_lines(80, "x =")
    text = "# Code\n\n~~~~js\n" + body + "~~~~\n"
    chunks = chunk(text, max_tokens=100, overlap=12)
    assert len(chunks) > 4
    for piece in chunks:
        lines = piece.content.splitlines()
        assert lines[:2] == ["# Code", "~~~~js"]
        assert lines[-1] == "~~~~"
    assert chunks[0].metadata["startLine"] == 1  # no chunk holds the lone header
    assert chunks[-1].metadata["endLine"] == 84  # the closing fence


def test_table_over_the_bound_repeats_header_rows() -> None:
    head = "| name | value |\n|------|:-----:|\n"
    rows = "".join(f"| key{i} | {i} |\n" for i in range(60))
    text = "# Table\n\n" + head + rows
    chunks = chunk(text, max_tokens=80, overlap=20)
    assert len(chunks) > 3
    for piece in chunks:
        assert head in piece.content
    seen_rows = [line for c in chunks for line in c.content.splitlines() if "key" in line]
    assert seen_rows == rows.splitlines()  # rows are split, not overlapped


def test_headings_of_a_folded_parent_are_no_chunk_of_their_own() -> None:
    rows = "".join(f"| сервер-{i} | 10.0.0.{i} | владелец команды номер {i} |\n" for i in range(30))
    text = "# Серверы\n\n## Таблица адресов\n\n| Имя | Адрес | Владелец |\n| --- | --- | --- |\n" + rows
    chunks = chunk(text, max_tokens=120)
    assert all("|" in c.content for c in chunks)  # (was: a 6-token chunk of the two headings)
    assert chunks[0].metadata["startLine"] == 1
    assert chunks[0].content.startswith("## Таблица адресов\n| Имя | Адрес | Владелец |")
    assert {c.metadata["headerPath"] for c in chunks} == {"# Серверы > ## Таблица адресов"}


def test_giant_line_in_a_section() -> None:
    giant = " ".join(f"w{i}" for i in range(500))
    text = "# Big\n\n" + giant + "\n"
    chunks = chunk(text, max_tokens=60, overlap=5)
    assert all(c.content.startswith("# Big\n") for c in chunks[1:])


def test_fixture_guide() -> None:
    text = GUIDE.read_text()
    chunks = chunk(text, max_tokens=120, overlap=15)
    assert paths(chunks)[0] == ""
    assert "# Guide > ## Install > ### From source" in paths(chunks)
    assert not any("Not a header" in p for p in paths(chunks))


def test_identical_sections_share_a_hash_under_the_same_header_path_only() -> None:
    section = "## Shared\n\nSame words in both files.\n"
    first = chunk("# One\nx\n" + section)
    second = chunk("# One\ny\n\n" + section)
    elsewhere = chunk("# Two\ny\n\n" + section)  # the headerPath is embedded with the text
    assert first[-1].content == second[-1].content == elsewhere[-1].content
    assert first[-1].content_hash == second[-1].content_hash != elsewhere[-1].content_hash


markdown_lines = st.one_of(
    st.sampled_from(
        [
            "",
            "# Title",
            "## Sub section",
            "###### Deep",
            "Setext",
            "===",
            "---",
            "```",
            "```python",
            "~~~",
            "    ```",
            "| a | b |",
            "|---|:-:|",
            "| 1 | 2 |",
            "- item",
            "> quote",
            "plain words here.",
        ]
    ),
    st.text(st.characters(blacklist_characters="\n"), max_size=40),
    st.text(st.sampled_from("ab #`|-=. "), min_size=50, max_size=300),
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(markdown_lines, max_size=80),
    st.integers(min_value=40, max_value=200),
    st.integers(min_value=0, max_value=30),
)
def test_properties(lines: list[str], max_tokens: int, overlap: int) -> None:
    text = "\n".join(lines) + "\n"
    chunks = chunk_markdown(text, "a.md", max_tokens=max_tokens, overlap=overlap)
    assert_chunk_invariants(text, chunks, max_tokens, unsplit_line_tokens=10)
    again = chunk_markdown(text, "b.md", max_tokens=max_tokens, overlap=overlap)
    assert [c.content for c in chunks] == [c.content for c in again]  # (hashes differ: the path is indexed)


@settings(max_examples=200, deadline=None)
@given(st.lists(markdown_lines, max_size=40), st.integers(min_value=1, max_value=40))
def test_properties_with_tiny_bounds(lines: list[str], max_tokens: int) -> None:
    text = "\n".join(lines)
    chunks = chunk_markdown(text, "a.md", max_tokens=max_tokens, overlap=max_tokens // 3)
    assert_chunk_invariants(text, chunks, max_tokens)

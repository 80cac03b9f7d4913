"""Consecutive sections that fit the bound together are merged into one chunk
(rag/chunking/markdown.py); the merged chunk lists each section's headerPath
and lines, and the same rule holds for every document kind chunked by sections."""

from itertools import pairwise
from pathlib import Path

import pytest
from fixtures.docs.invariants import assert_chunk_invariants
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking import markdown
from rag.chunking.markdown import chunk_markdown
from rag.chunking.model import Chunk
from rag.dispatcher import chunk_bytes

FIXTURES = Path(__file__).parent / "fixtures"


def words(count: int, word: str = "word") -> str:
    return " ".join([word] * count)


def parts(chunk: Chunk) -> list[tuple[str, int, int]]:
    return [(p["headerPath"], p["startLine"], p["endLine"]) for p in chunk.metadata["sections"]]


def test_small_sections_make_one_chunk_under_their_shared_header_path() -> None:
    text = "# Guide\n\n## Install\n\npip install it\n\n## Use\n\nrun it\n"
    [chunk] = chunk_markdown(text, "g.md", max_tokens=256, overlap=0)
    assert chunk.content == text
    assert (chunk.metadata["startLine"], chunk.metadata["endLine"]) == (1, 9)
    # "# Guide" has a blank body, so it is folded into "## Install" by the parser.
    assert chunk.metadata["headerPath"] == "# Guide"
    assert chunk.metadata["headerLevel"] == 1
    assert parts(chunk) == [("# Guide > ## Install", 1, 5), ("# Guide > ## Use", 7, 9)]


def test_sections_without_a_shared_header_merge_under_the_empty_path() -> None:
    text = "intro text\n\n# A\n\na\n\n# B\n\nb\n"
    [chunk] = chunk_markdown(text, "g.md", max_tokens=256, overlap=0)
    assert (chunk.metadata["headerPath"], chunk.metadata["headerLevel"]) == ("", 0)
    assert parts(chunk) == [("", 1, 1), ("# A", 3, 5), ("# B", 7, 9)]


def test_a_run_ends_where_the_next_section_would_pass_the_bound() -> None:
    sections = [f"## S{i}\n\n{words(30)}\n" for i in range(5)]
    text = "".join(sections)
    one = chunk_markdown(sections[0], "g.md", max_tokens=1000, overlap=0)[0].tokens
    chunks = chunk_markdown(text, "g.md", max_tokens=2 * one + 2, overlap=0)
    assert [[p[0] for p in parts(c)] if "sections" in c.metadata else [c.metadata["headerPath"]]
            for c in chunks] == [["## S0", "## S1"], ["## S2", "## S3"], ["## S4"]]
    assert "sections" not in chunks[-1].metadata  # a section alone is not a merge
    assert_chunk_invariants(text, chunks, 2 * one + 2)


def test_a_section_over_the_bound_is_split_alone_and_its_neighbours_are_not_merged_into_it() -> None:
    text = f"## Small\n\nshort\n\n## Long\n\n{words(200)}\n\n{words(200)}\n\n## Tail\n\nend\n"
    chunks = chunk_markdown(text, "g.md", max_tokens=250, overlap=0)
    assert [c.metadata["headerPath"] for c in chunks] == ["## Small", "## Long", "## Long", "## Tail"]
    assert not any("sections" in c.metadata for c in chunks)


@pytest.mark.parametrize(
    "name",
    ["docs/guide.md", "structured/guide.rst", "structured/manual.adoc", "structured/page.html",
     "structured/train.ipynb", "structured/notes_rst.txt"],
)
def test_merged_parts_are_the_sections_the_parser_found(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = (FIXTURES / name).read_bytes()
    merged = chunk_bytes(data, name, max_tokens=256, overlap=0).chunks
    monkeypatch.setattr(markdown, "merge_small_sections", lambda lines, sections, max_tokens: sections)
    alone = chunk_bytes(data, name, max_tokens=256, overlap=0).chunks
    assert len(merged) < len(alone)
    listed = [part for c in merged for part in (parts(c) if "sections" in c.metadata else
                                                [(c.metadata["headerPath"], c.metadata["startLine"],
                                                  c.metadata["endLine"])])]
    assert listed == [(c.metadata["headerPath"], c.metadata["startLine"], c.metadata["endLine"]) for c in alone]
    for chunk in merged:
        if "sections" in chunk.metadata:
            spans = parts(chunk)
            assert spans[0][1] == chunk.metadata["startLine"] and spans[-1][2] == chunk.metadata["endLine"]


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=12),
    levels=st.lists(st.integers(min_value=1, max_value=3), min_size=12, max_size=12),
    bound=st.integers(min_value=20, max_value=120),
)
def test_merging_keeps_the_chunk_invariants(sizes: list[int], levels: list[int], bound: int) -> None:
    pairs = enumerate(zip(sizes, levels[: len(sizes)], strict=True))
    text = "".join(f"{'#' * level} H{i}\n\n{words(size)}\n\n" for i, (size, level) in pairs)
    chunks = chunk_markdown(text, "g.md", max_tokens=bound, overlap=0)
    assert_chunk_invariants(text, chunks, bound)
    for before, after in pairwise(chunks):
        assert before.metadata["endLine"] <= after.metadata["startLine"]  # in order; a cut line may be shared


@pytest.mark.parametrize(
    ("text", "header_path", "level"),
    [
        # A title may hold " > ": the shared path is taken from the headers, not the string.
        ("# A > B\n\nx\n\n## C\n\nc\n\n## D\n\nd\n", "# A > B", 1),
        ("# A > B\n\nx\n\n# A > C\n\ny\n", "", 0),
        # Text before the first header (blank, front matter) sits under no header and does not count.
        ("\n\n# Guide\n\nintro\n\n## A\n\na\n\n## B\n\nb\n", "# Guide", 1),
        ("---\ntitle: T\n---\n# Guide\n\nintro\n\n## A\n\na\n", "# Guide", 1),
    ],
)
def test_the_shared_path_comes_from_the_headers(text: str, header_path: str, level: int) -> None:
    [chunk] = chunk_markdown(text, "g.md", max_tokens=256, overlap=0)
    assert (chunk.metadata["headerPath"], chunk.metadata["headerLevel"]) == (header_path, level)

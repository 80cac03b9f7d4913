"""Plain-text chunking: line windows, overlap, offsets, giant lines."""

from itertools import pairwise

import pytest
from fixtures.docs.invariants import assert_chunk_invariants
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.chunking.model import count_tokens
from rag.chunking.text import chunk_text


def numbered_lines(count: int, words_per_line: int = 5) -> str:
    return "".join(
        " ".join(f"w{line}x{word}" for word in range(words_per_line)) + "\n"
        for line in range(count)
    )


def assert_text_chunks(text: str, max_tokens: int, overlap: int) -> None:
    chunks = chunk_text(text, "notes.txt", max_tokens=max_tokens, overlap=overlap)
    assert_chunk_invariants(text, chunks, max_tokens)
    for chunk in chunks:
        start, end = chunk.metadata["startOffset"], chunk.metadata["endOffset"]
        assert chunk.content == text[start:end]
        assert chunk.metadata["startLine"] == text.count("\n", 0, start) + 1
        assert chunk.metadata["endLine"] == text.count("\n", 0, end - 1) + 1
    for before, after in pairwise(chunks):
        assert after.metadata["startOffset"] > before.metadata["startOffset"]
        shared = text[after.metadata["startOffset"] : before.metadata["endOffset"]]
        assert count_tokens(shared) <= overlap


@pytest.mark.parametrize(
    ("text", "max_tokens", "expected_lines"),
    [
        ("one line\n", 100, [(1, 1)]),
        ("no final newline", 100, [(1, 1)]),
        ("\n\n  \n", 100, []),
        ("", 100, []),
        ("a b\nc d\n\n\ne f\n\n", 100, [(1, 5)]),  # trailing blank lines are left out
        ("\n\nlate start\n", 100, [(3, 3)]),
        ("a b c\nd e f\ng h i\n", 6, [(1, 2), (3, 3)]),
        ("a b c\r\nd e f\r\ng h i\r\n", 6, [(1, 2), (3, 3)]),
    ],
)
def test_line_windows(text: str, max_tokens: int, expected_lines: list[tuple[int, int]]) -> None:
    chunks = chunk_text(text, "notes.txt", max_tokens=max_tokens, overlap=0)
    assert [(c.metadata["startLine"], c.metadata["endLine"]) for c in chunks] == expected_lines
    assert_text_chunks(text, max_tokens, 0)


def test_metadata() -> None:
    [chunk] = chunk_text("hello world\n", "docs/notes.txt", language="log", max_tokens=10, overlap=2)
    assert chunk.metadata == {
        "path": "docs/notes.txt",
        "sourceType": "text",
        "language": "log",
        "startLine": 1,
        "endLine": 1,
        "startOffset": 0,
        "endOffset": 12,
    }


def test_overlap_repeats_whole_lines() -> None:
    text = numbered_lines(40)  # 5 tokens a line
    chunks = chunk_text(text, "notes.txt", max_tokens=50, overlap=12)
    assert len(chunks) > 3
    for before, after in pairwise(chunks):
        # two lines (10 tokens) fit in an overlap of 12, three would not
        assert after.metadata["startLine"] == before.metadata["endLine"] - 1
    assert_text_chunks(text, 50, 12)


def test_window_ends_at_a_nearby_paragraph_break() -> None:
    paragraph = numbered_lines(4)  # 20 tokens
    text = paragraph + "\n" + paragraph + "\n" + paragraph
    chunks = chunk_text(text, "notes.txt", max_tokens=50, overlap=0)
    # 50 tokens would reach into the third paragraph; the cut is at the blank line
    assert [(c.metadata["startLine"], c.metadata["endLine"]) for c in chunks] == [(1, 9), (11, 14)]


def test_far_paragraph_break_is_not_taken() -> None:
    text = "short\n\n" + numbered_lines(30)
    chunks = chunk_text(text, "notes.txt", max_tokens=50, overlap=0)
    assert chunks[0].metadata["endLine"] > 3
    assert all(c.tokens > 40 for c in chunks[:-1])


def test_giant_line_is_cut_into_pieces_of_its_own() -> None:
    giant = " ".join(f"word{i}" for i in range(1000))
    text = "before\n" + giant + "\nafter\n"
    chunks = chunk_text(text, "notes.txt", max_tokens=100, overlap=10)
    pieces = [c for c in chunks if c.metadata["startLine"] == c.metadata["endLine"] == 2]
    assert all(80 <= p.tokens <= 100 for p in pieces[:-1])  # well filled, guessed not searched
    assert "".join(p.content for p in pieces) == giant + "\n"
    assert all(not p.content.startswith(" ") for p in pieces)  # cut after whitespace
    assert_text_chunks(text, 100, 10)


def test_giant_line_without_spaces() -> None:
    text = "-" * 5000
    chunks = chunk_text(text, "notes.txt", max_tokens=64, overlap=8)
    assert "".join(c.content for c in chunks) == text
    assert_text_chunks(text, 64, 8)


def test_identical_content_gives_identical_chunks_and_hashes_per_path() -> None:
    text = numbered_lines(100)
    first = chunk_text(text, "a.txt", max_tokens=60, overlap=10)
    again = chunk_text(text, "a.txt", max_tokens=60, overlap=10)
    elsewhere = chunk_text(text, "b/c.txt", max_tokens=60, overlap=10)
    assert [c.content for c in first] == [c.content for c in elsewhere]
    assert [c.content_hash for c in first] == [c.content_hash for c in again]
    assert not {c.content_hash for c in first} & {c.content_hash for c in elsewhere}, "the path is indexed"


lines = st.one_of(
    st.just(""),
    st.text(st.characters(blacklist_characters="\n"), max_size=60),
    st.text(st.sampled_from("ab cd.,;\t"), min_size=100, max_size=400),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(lines, max_size=60),
    st.sampled_from(["\n", "\r\n"]),
    st.booleans(),
    st.integers(min_value=1, max_value=80),
    st.integers(min_value=0, max_value=40),
)
def test_properties(
    body: list[str], newline: str, final_newline: bool, max_tokens: int, overlap: int
) -> None:
    text = newline.join(body) + (newline if final_newline else "")
    assert_text_chunks(text, max_tokens, overlap)
    again = chunk_text(text, "notes.txt", max_tokens=max_tokens, overlap=overlap)
    assert again == chunk_text(text, "notes.txt", max_tokens=max_tokens, overlap=overlap)

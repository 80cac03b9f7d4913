"""Properties of the code chunker over generated and mutated sources.

Whatever the input: it never raises, no non-blank line is left out of every
chunk, a chunk is within max_tokens unless it is a single over-long line, and
the same input gives the same chunks (and so the same content hashes).
"""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.chunking.code import chunk_code
from rag.chunking.model import Chunk, content_hash, count_tokens

FIXTURES = Path(__file__).parent / "fixtures" / "code"
SOURCES = {
    "typescript": "user_service.ts",
    "tsx": "user_card.tsx",
    "javascript": "cart.js",
    "python": "inventory.py",
    "go": "server.go",
    "rust": "shapes.rs",
    "java": "OrderService.java",
    "ruby": "account.rb",
    "c": "ring_buffer.c",
    "kotlin": "Playlist.kt",
}
LINES = {
    language: (FIXTURES / name).read_text(encoding="utf-8").split("\n")
    for language, name in SOURCES.items()
}
LANGUAGES = [*SOURCES, "cpp", "bash", "no-such-language"]
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def mutated_sources(draw: st.DrawFn) -> tuple[str, str]:
    """A fixture's lines, shuffled in blocks, with lines dropped, duplicated,
    garbled or made huge, then maybe truncated: code that is often broken."""
    language = draw(st.sampled_from(sorted(SOURCES)))
    lines = list(LINES[language])
    for _ in range(draw(st.integers(0, 12))):
        position = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["drop", "copy", "garble", "huge", "blank", "brace"]))
        if action == "drop" and lines:
            del lines[min(position, len(lines) - 1)]
        elif action == "copy":
            start = draw(st.integers(0, len(lines)))
            lines[position:position] = lines[start : start + draw(st.integers(1, 15))]
        elif action == "garble":
            lines.insert(position, draw(st.text(max_size=40)))
        elif action == "huge":
            lines.insert(position, "x=[" + ",".join(["f(a,b);"] * draw(st.integers(50, 400))))
        elif action == "blank":
            lines.insert(position, draw(st.sampled_from(["", "   ", "\t", "\r"])))
        else:
            lines.insert(position, draw(st.sampled_from(["{", "}", "(", "def", "class X {"])))
    text = "\n".join(lines)
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return language, text


bounds = st.tuples(st.integers(1, 300), st.integers(0, 120))


def own_text(chunk: Chunk) -> str:
    """The chunk's content without the signature lines put in front of it."""
    context = len(chunk.metadata.get("contextLines", []))
    return chunk.content.split("\n", context)[context] if context else chunk.content


def assert_chunk_properties(text: str, language: str, max_tokens: int, overlap: int) -> None:
    chunks = chunk_code(text, "src/file", language, max_tokens=max_tokens, overlap=overlap)
    lines = text.split("\n")
    covered: set[int] = set()
    for chunk in chunks:
        start, end = chunk.metadata["startLine"], chunk.metadata["endLine"]
        assert 1 <= start <= end <= len(lines)
        covered.update(range(start, end + 1))
        own = "\n".join(lines[start - 1 : end])
        if start == end and own_text(chunk) != own:
            assert own_text(chunk) in own  # a piece of an enormous line
        else:
            assert own_text(chunk) == own
        if start != end:
            assert count_tokens(chunk.content) <= max_tokens
        assert chunk.metadata["fragmentType"].isupper()
    lost = [n for n, line in enumerate(lines, 1) if line.strip() and n not in covered]
    assert not lost
    again = chunk_code(text, "src/file", language, max_tokens=max_tokens, overlap=overlap)
    assert [c.content_hash for c in again] == [content_hash(c.indexed_text) for c in chunks]
    assert [c.metadata for c in again] == [c.metadata for c in chunks]


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(mutated_sources(), bounds)
def test_mutated_sources(source: tuple[str, str], bound: tuple[int, int]) -> None:
    language, text = source
    assert_chunk_properties(text, language, *bound)


@PROPERTY_SETTINGS
@given(st.binary(max_size=3000), st.sampled_from(LANGUAGES), bounds)
def test_random_bytes_as_text(data: bytes, language: str, bound: tuple[int, int]) -> None:
    assert_chunk_properties(data.decode("utf-8", "replace"), language, *bound)


@PROPERTY_SETTINGS
@given(st.text(alphabet=st.sampled_from("ab (){}[];:=,.\n\t\r#/\"'"), max_size=2000),
       st.sampled_from(LANGUAGES), bounds)
def test_punctuation_soup(text: str, language: str, bound: tuple[int, int]) -> None:
    assert_chunk_properties(text, language, *bound)


def test_zero_width_nodes_only() -> None:
    """Found by test_punctuation_soup: Kotlin parses this into a zero-width identifier alone."""
    assert_chunk_properties("[]=\n:", "kotlin", 1, 0)

"""A document chunk's passages: paragraph groups of at least MIN_PASSAGE_TOKENS, covering it end to end."""

from hypothesis import given
from hypothesis import strategies as st

from rag.chunking.model import Chunk, content_hash, count_tokens, indexed_text
from rag.chunking.passages import MIN_PASSAGE_TOKENS, chunk_passages, passage_ends

WORDS = " ".join(f"w{i}" for i in range(MIN_PASSAGE_TOKENS))  # one paragraph of exactly the minimum


def test_paragraphs_are_joined_until_a_group_reaches_the_minimum() -> None:
    short = "A few words here."
    content = f"{short}\n\n{short}\n\n{WORDS}\n\n{WORDS}\n\n{short}"
    ends = passage_ends(content)
    pieces = [content[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    assert pieces == [f"{short}\n\n{short}\n\n{WORDS}\n\n", f"{WORDS}\n\n", short], "the rest is a passage too"
    assert ends[-1] == len(content)


def test_one_group_is_no_passages() -> None:
    assert passage_ends(f"{WORDS}\n\nA closing line.") == [len(WORDS) + 2, len(WORDS) + 2 + 15]
    assert passage_ends("Short.\n\nAlso short.") == [], "one group under the minimum: the chunk's own vector suffices"
    assert passage_ends(WORDS) == []
    assert passage_ends(f"{WORDS}\n\n   \n\n") == [], "trailing blank lines are no paragraph"


def test_blank_lines_with_spaces_separate_paragraphs() -> None:
    content = f"{WORDS}\n  \t\n{WORDS}"
    assert passage_ends(content) == [len(WORDS) + 5, len(content)]


def test_only_documents_have_passages_hashed_with_the_chunk_context() -> None:
    text = f"{WORDS}\n\n{WORDS} again"
    meta = {"path": "docs/guide.md", "headerPath": "# Guide", "sourceType": "markdown"}
    doc = Chunk(text, meta)
    passages = chunk_passages(doc)
    assert [p.end for p in passages] == passage_ends(text)
    first = text[: passages[0].end]
    assert passages[0].content_hash == content_hash(indexed_text("docs/guide.md\n# Guide", first))
    assert chunk_passages(Chunk(text, {**meta, "sourceType": "text"}))
    assert chunk_passages(Chunk(text, {**meta, "sourceType": "pdf"}))
    assert chunk_passages(Chunk(text, {"path": "a.py", "sourceType": "code"})) == []


@given(st.lists(st.text(alphabet="ab \n.", max_size=60), max_size=12), st.integers(1, 30))
def test_passages_cover_the_content_in_order_and_each_but_the_last_is_long_enough(
    paragraphs: list[str], min_tokens: int
) -> None:
    content = "\n\n".join(paragraphs)
    ends = passage_ends(content, min_tokens)
    if not ends:
        return
    assert len(ends) >= 2 and ends == sorted(set(ends)) and ends[-1] == len(content)
    starts = [0, *ends[:-1]]
    assert all(count_tokens(content[a:b]) >= min_tokens for a, b in zip(starts[:-1], ends[:-1], strict=True))

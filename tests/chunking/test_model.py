"""The token counts every size bound uses: per line, as count_tokens counts."""

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rag.chunking.model import count_tokens, line_token_counts

# Every ASCII character (controls, the \x1c-\x1f separators Python counts as
# whitespace, \r, tabs) and non-ASCII letters, digits, marks and spaces.
CHARACTERS = [chr(c) for c in range(128)] + list("éßЖ٣—…\u00a0\u2028\u0085\u200b日🙂_")


def test_counts_words_and_marks_per_line() -> None:
    text = "def f(x):\n\treturn x_1 + 2\n\x1c\x1f é—ß\n"
    assert line_token_counts(text) == [6, 4, 3, 0]


@settings(max_examples=500)
@given(st.text(alphabet=st.sampled_from(CHARACTERS), max_size=200))
@example("")
@example("\n\n")
@example("plain ascii\nthen ünïcode, with marks!\n\ud800 lone surrogate")
def test_line_counts_equal_count_tokens_of_each_line(text: str) -> None:
    assert line_token_counts(text) == [count_tokens(line) for line in text.split("\n")]


@given(st.text(max_size=200))
def test_line_counts_equal_count_tokens_for_any_text(text: str) -> None:
    assert line_token_counts(text) == [count_tokens(line) for line in text.split("\n")]

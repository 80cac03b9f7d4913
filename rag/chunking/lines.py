"""Text bookkeeping shared by the document chunkers (text, markdown, pdf, docx).

Owns ``Lines`` (a text cut at ``\\n`` with every line's offset and token count, computed once),
``pack`` (greedy windows of units under a token bound, with overlap, preferring
to end after a blank unit) and ``line_spans`` (``pack`` over lines, cutting a
line only when it alone is over the bound). Lines split at ``\\n`` only, so
``\\r\\n`` files count lines as editors do; tokens never straddle a ``\\n``,
so a range's count is the sum of its lines' counts.
"""

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from rag.chunking.model import count_tokens, line_token_counts

# A window may end after a blank unit instead of at the bound when that keeps
# at least this share of the tokens the full window would have held.
_PARAGRAPH_CUT_SHARE = 2 / 3


class Lines:
    """The lines of ``text``: ``starts[i]`` is line i's offset (``starts[-1]`` is
    ``len(text)``), ``strings[i]`` its text without the ``\\n``, ``tokens[i]`` its
    token count (0 exactly when the line is blank)."""

    __slots__ = ("prefix", "starts", "strings", "text", "tokens")

    def __init__(self, text: str) -> None:
        strings = text.split("\n")
        tokens = line_token_counts(text)
        if strings[-1] == "":  # nothing after the final newline (or an empty text)
            strings.pop()
            tokens.pop()
        self.text = text
        self.strings = strings
        self.tokens = tokens
        self.prefix = list(accumulate(self.tokens, initial=0))
        self.starts = list(accumulate((len(line) + 1 for line in strings), initial=0))
        self.starts[-1] = len(text)  # the last line may lack its newline

    def __len__(self) -> int:
        return len(self.strings)

    def tokens_in(self, first: int, end: int) -> int:
        """Tokens in lines ``first`` .. ``end - 1``."""
        return self.prefix[end] - self.prefix[first]

    def trimmed(self, first: int, end: int) -> tuple[int, int]:
        """Lines ``first`` .. ``end - 1`` without the blank lines at either end."""
        while first < end and self.tokens[first] == 0:
            first += 1
        while end > first and self.tokens[end - 1] == 0:
            end -= 1
        return first, end

    def slice(self, first: int, end: int) -> str:
        """The text of lines ``first`` .. ``end - 1``, newlines included."""
        return self.text[self.starts[first] : self.starts[end]]


@dataclass(frozen=True, slots=True)
class Span:
    """Characters ``start:end`` of a text, lying on lines ``first_line`` ..
    ``last_line`` (0-based, inclusive)."""

    start: int
    end: int
    first_line: int
    last_line: int


def pack(
    tokens: Sequence[int], budget: int, overlap: int, lo: int = 0, hi: int | None = None
) -> list[tuple[int, int]]:
    """Cut units ``lo`` .. ``hi - 1`` into windows ``(first, end)`` of at most
    ``budget`` tokens, each repeating up to ``overlap`` tokens of whole units
    from the end of the one before.

    A unit over the budget gets a window of its own (the caller splits it).
    Blank (zero-token) units neither start nor end a window, so units that are
    only blank belong to none. Linear in the number of units.
    """
    hi = len(tokens) if hi is None else hi
    prefix = list(accumulate(tokens[lo:hi], initial=0))
    last_blank = _last_blank_before(prefix)
    count = hi - lo
    windows: list[tuple[int, int]] = []
    start = 0
    while True:
        while start < count and prefix[start + 1] == prefix[start]:
            start += 1
        if start == count:
            return windows
        end = _window_end(prefix, last_blank, start, budget)
        windows.append((lo + start, lo + _drop_trailing_blanks(prefix, end)))
        if end == count:
            return windows
        start = _overlap_start(prefix, start, end, budget, overlap)


def _last_blank_before(prefix: list[int]) -> list[int]:
    """``result[k]``: the last blank unit before unit k, or -1."""
    result = [-1] * len(prefix)
    for k in range(1, len(prefix)):
        result[k] = k - 1 if prefix[k] == prefix[k - 1] else result[k - 1]
    return result


def _drop_trailing_blanks(prefix: list[int], end: int) -> int:
    while prefix[end - 1] == prefix[end]:
        end -= 1
    return end


def _window_end(prefix: list[int], last_blank: list[int], start: int, budget: int) -> int:
    if prefix[start + 1] - prefix[start] > budget:
        return start + 1
    end = bisect_right(prefix, prefix[start] + budget, start + 1) - 1
    if end < len(prefix) - 1:
        blank = last_blank[end]
        full = prefix[end] - prefix[start]
        if blank > start and prefix[blank] - prefix[start] >= full * _PARAGRAPH_CUT_SHARE:
            end = blank + 1
    return end


def _overlap_start(prefix: list[int], start: int, end: int, budget: int, overlap: int) -> int:
    """Where the window after ``(start, end)`` begins: back over whole units
    worth at most ``overlap`` tokens, but never so far that unit ``end`` would
    no longer fit beside them, and always past ``start``."""
    first = end
    while first - 1 > start and prefix[end] - prefix[first - 1] <= overlap:
        first -= 1
    while first < end and prefix[end + 1] - prefix[first] > budget:
        first += 1
    return first


def line_spans(lines: Lines, first: int, end: int, budget: int, overlap: int) -> list[Span]:
    """Windows over lines ``first`` .. ``end - 1`` of at most ``budget`` tokens
    with ``overlap``; a line over the budget is cut into pieces of its own."""
    spans: list[Span] = []
    for window_first, window_end in pack(lines.tokens, budget, overlap, first, end):
        last = window_end - 1
        if window_end - window_first == 1 and lines.tokens[last] > budget:
            spans.extend(
                Span(start, stop, last, last)
                for start, stop in split_long_line(
                    lines.text, lines.starts[last], lines.starts[window_end], budget
                )
            )
        else:
            spans.append(Span(lines.starts[window_first], lines.starts[window_end], window_first, last))
    return spans


def split_long_line(text: str, start: int, end: int, budget: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into consecutive pieces of at most ``budget``
    tokens, each holding some, cut after whitespace where there is some.

    Piece lengths are guessed from the line's characters per token and shrunk
    until they fit, so each piece is counted about once: linear, not quadratic.
    """
    chars_per_token = (end - start) / max(1, count_tokens(text[start:end]))
    guess = max(1, int(budget * chars_per_token))
    pieces: list[tuple[int, int]] = []
    while start < end:
        stop = _fitting_stop(text, start, end, guess, budget)
        while stop < end and text[stop].isspace():  # free: whitespace holds no tokens
            stop += 1
        pieces.append((start, stop))
        start = stop
    return pieces


def _fitting_stop(text: str, start: int, end: int, size: int, budget: int) -> int:
    body = start  # leading whitespace costs nothing, and a piece must hold a token
    while body < end - 1 and text[body].isspace():
        body += 1
    while True:
        stop = _soft_stop(text, body, min(end, body + size), end)
        if count_tokens(text[start:stop]) <= budget:
            return stop
        size = max(1, (stop - body) * 3 // 4)


def _soft_stop(text: str, start: int, stop: int, end: int) -> int:
    """``stop`` moved back to just after whitespace in the last quarter of
    ``start:stop``, if there is some there; cutting a word would split a token."""
    if stop >= end:
        return end
    floor = start + (stop - start) * 3 // 4
    space = max(text.rfind(" ", floor, stop), text.rfind("\t", floor, stop))
    return space + 1 if space > start else stop

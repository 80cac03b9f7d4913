"""Text a PostgreSQL text column (and jsonb) accepts: ``make_storable`` replaces what it refuses.

Used wherever text enters from outside: the chunkers' decoded files, a search query, what an
LLM writes. Depends on nothing, so a search or an index run with nothing to chunk loads no
chunker for it.
"""

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def make_storable(text: str) -> tuple[str, list[str]]:
    """``text`` with the characters a PostgreSQL text column rejects (NUL and
    lone surrogates) replaced by U+FFFD one for one, so offsets and lines hold;
    and a warning per kind replaced."""
    warnings: list[str] = []
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
        warnings.append("NUL characters replaced by U+FFFD")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _LONE_SURROGATE.sub("\ufffd", text)
            warnings.append("lone surrogates replaced by U+FFFD")
    return text, warnings

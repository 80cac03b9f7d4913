"""The chunk every chunker returns, and the token count all size bounds use.

Metadata keys are camelCase, as in the stored JSON and the MCP tools:
path, sourceType (code | markdown | text | pdf), language, startLine, endLine,
and per type fqn, fragmentType, headerPath, headerLevel, startOffset, endOffset,
pageStart, pageEnd.

A chunk is shown as its ``content`` but found by its ``indexed_text``: its
``context`` (where it lies: the file's path, then its fqn or headerPath) and
then its content. The embedding model and BM25 see that text, and
``content_hash``, the key its vector is reused by, is the hash of it;
``rag._indexed_text`` (sql/015_keywords.sql) joins the two the same way.
"""

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

# Roughly one token per word piece or punctuation mark: close enough to BPE
# counts for size bounds, and fast (a single regex scan).
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Approximate model tokens in ``text`` (words and punctuation marks)."""
    return len(_TOKEN.findall(text))  # findall is twice as fast as counting finditer


def _ascii_tables() -> tuple[bytes, bytes]:
    """For ``line_token_counts``: a table turning ASCII punctuation and
    whitespace other than ``\n`` into spaces, and the bytes to delete to keep
    only punctuation and ``\n`` (classes as ``_TOKEN`` sees them)."""
    to_spaces = bytearray(range(256))
    not_punctuation = bytearray()
    for code in range(128):
        char = chr(code)
        if re.fullmatch(r"\w", char):
            not_punctuation.append(code)
        elif char != "\n":
            to_spaces[code] = ord(" ")
            if re.fullmatch(r"\s", char):
                not_punctuation.append(code)
    return bytes(to_spaces), bytes(not_punctuation)


_WORDS_ONLY, _NOT_PUNCTUATION = _ascii_tables()


def line_token_counts(text: str) -> list[int]:
    """``count_tokens`` of every line of ``text.split("\n")``, three times faster.

    Every file's lines are counted (a million for Django): for ASCII lines, a
    token is a run of word characters or one punctuation mark, so byte
    translations count them without a regex; the few other lines use it.
    """
    data = text.encode("utf-8", "surrogatepass")
    words = [len(line.split()) for line in data.translate(_WORDS_ONLY).split(b"\n")]
    marks = [len(line) for line in data.translate(None, _NOT_PUNCTUATION).split(b"\n")]
    counts = [w + m for w, m in zip(words, marks, strict=True)]
    if not data.isascii():
        for number, line in enumerate(text.split("\n")):
            if not line.isascii():
                counts[number] = count_tokens(line)
    return counts


def content_hash(text: str) -> str:
    """sha256 hex digest of a chunk's indexed text: the key embeddings are reused by."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def indexed_text(context: str, content: str) -> str:
    """What the embedding model and BM25 see: the context's lines, then the content."""
    return f"{context}\n{content}" if context else content


@dataclass(frozen=True)
class Chunk:
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def context(self) -> str:
        """Where the chunk lies, one item a line: the file's path (relative to the
        source root), a Confluence page's breadcrumb (space › parent › page), then its
        fqn (code) or headerPath (documents) if it has one.

        Indexed, never shown: a query naming a file, class or section finds the
        chunk even when its text does not say it (eval sets, README "What is
        embedded and indexed")."""
        meta = self.metadata
        keys = ("path", "breadcrumb", "fqn", "headerPath")
        return "\n".join(str(meta[key]) for key in keys if meta.get(key))

    @property
    def indexed_text(self) -> str:
        return indexed_text(self.context, self.content)

    @property
    def content_hash(self) -> str:
        return content_hash(self.indexed_text)

    @property
    def tokens(self) -> int:
        return count_tokens(self.content)

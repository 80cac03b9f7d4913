"""The chunk every chunker returns, and the token count all size bounds use.

Metadata keys are camelCase, as in the stored JSON and the MCP tools:
path, sourceType (code | markdown | text | pdf), language, startLine, endLine,
and per type fqn, fragmentType, headerPath, headerLevel, startOffset, endOffset,
pageStart, pageEnd.
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


def content_hash(text: str) -> str:
    """sha256 hex digest of the chunk text: the key embeddings are reused by."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Chunk:
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)

    @property
    def tokens(self) -> int:
        return count_tokens(self.content)

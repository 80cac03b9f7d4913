"""A document chunk's passages: its paragraphs, grouped, each embedded on its own.

One vector for a whole section averages its topics away; a question about one
paragraph of it matches that paragraph's vector better. So a document chunk
(sourceType markdown, text or pdf: ``rag._is_document``) is also cut at its
blank lines into passages of at least ``MIN_PASSAGE_TOKENS`` (consecutive
paragraphs joined until the group is that long), and the vector arm scores the
chunk by the best of its own vector and its passages' (``rag.vector_search``).
BM25 and what is shown still see the chunk whole. Measured in
eval/README.md ("Passage vectors"): too-small passages match by chance,
too-large ones are the chunk again.

Passages cover the content end to end (each ends just after a blank-line
run), so each is ``content[previous end:end]``; the database stores the ends
and the hash of each passage's indexed text, and rebuilds the texts to embed.
"""

import re
from dataclasses import dataclass

from rag.chunking.model import Chunk, content_hash, count_tokens, indexed_text

MIN_PASSAGE_TOKENS = 40
DOCUMENT_SOURCE_TYPES = frozenset({"markdown", "text", "pdf"})  # as rag._is_document
_PARAGRAPH_END = re.compile(r"\n[ \t]*\n\s*")


@dataclass(frozen=True)
class Passage:
    end: int  # offset in the chunk's content just past the passage
    content_hash: str  # of its indexed text: the chunk's context, then the passage


def passage_ends(content: str, min_tokens: int = MIN_PASSAGE_TOKENS) -> list[int]:
    """Where ``content``'s passages end: paragraphs joined until each group has
    ``min_tokens``, the last group whatever is left; [] when that makes one group."""
    ends, start = [], 0
    paragraph_ends = [m.end() for m in _PARAGRAPH_END.finditer(content) if m.end() < len(content)]
    for end in [*paragraph_ends, len(content)]:
        if end == len(content) or count_tokens(content[start:end]) >= min_tokens:
            ends.append(end)
            start = end
    return ends if len(ends) > 1 else []


def chunk_passages(chunk: Chunk) -> list[Passage]:
    """A document chunk's passages (none for code, or for a chunk of one paragraph group)."""
    if chunk.metadata.get("sourceType") not in DOCUMENT_SOURCE_TYPES:
        return []
    passages, start = [], 0
    for end in passage_ends(chunk.content):
        passages.append(Passage(end, content_hash(indexed_text(chunk.context, chunk.content[start:end]))))
        start = end
    return passages

"""Contextual chunk text (``indexing.context: llm``): an LLM situates each chunk in its document.

For every chunk the LLM reads the document (or, for a long one, its beginning and
a window around the chunk) and writes one or two sentences: what the document is
about and what part this chunk plays in it. They are indexed after the chunk's
structural context (path, fqn or headerPath), so BM25 and the embedding model see
them, and shown apart from its content.

The bookkeeping is SQL's (``sql/024_contextual.sql``): which chunks still lack a
text of this model and prompt version, the cache keyed by (model, prompt version,
document hash, chunk hash), and putting texts into the chunks' indexed text. This
module writes the prompts, asks the LLM ``maxConcurrency`` requests at a time, and
records a failed request as an error of the chunk's file, never ending the run.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from rag import db, lemmas, sqlapi
from rag.errors import RagError, first_line
from rag.providers.llm import ChatMessage, ChatModel
from rag.secrets import mask_connection

if TYPE_CHECKING:
    from rag.runs import PhaseDeadline, Reporter, RunSummary

PROMPT = resources.files(__package__).joinpath("prompt.txt").read_text(encoding="utf-8")
# Editing the prompt makes another version, so its texts are asked for anew (lazily, per run).
PROMPT_VERSION = "chunk-context-" + hashlib.sha256(PROMPT.encode("utf-8")).hexdigest()[:12]
# The document as the prompt shows it: whole up to this size (~2,000 tokens), else its
# beginning (what it is about) and a window around the chunk. A small local model reads
# a prompt of that size in seconds on a CPU; the whole of a long document would take minutes.
DOCUMENT_CHARS = 8_000
HEAD_CHARS = 2_000
ANSWER_TOKENS = 50  # one or two short sentences (a CPU writes a token in 0.05-0.5 s)
ANSWER_CHARS = 600  # a model that rambles on is cut here
DOCUMENTS_PER_PAGE = 20  # documents listed, asked about and stored at a time
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# Failed requests in a row after which the LLM is taken to be down: the requests not yet
# sent are cancelled, the rest of the chunks keep their structural context (one error says
# so) and the next run asks again.
FAILURES_IN_A_ROW = 5


@dataclass(frozen=True)
class ChunkToSituate:
    document_hash: str
    chunk_hash: str
    path: str
    content: str
    start_line: int | None
    end_line: int | None

    def where(self) -> str:
        lines = f":{self.start_line}-{self.end_line}" if self.start_line is not None else ""
        return f"{self.path}{lines}"


def document_window(document: str, chunk: str) -> str:
    """The part of ``document`` the prompt shows: all of it when short, else its head, an
    ellipsis, and the text around ``chunk`` (found by its first line), within DOCUMENT_CHARS."""
    if len(document) <= DOCUMENT_CHARS:
        return document
    first = chunk.strip().splitlines()[0] if chunk.strip() else ""
    found = document.find(first) if first else -1
    around = DOCUMENT_CHARS - HEAD_CHARS
    start = max(HEAD_CHARS, (found if found >= 0 else HEAD_CHARS) - around // 2)
    start = min(start, len(document) - around)
    return f"{document[:HEAD_CHARS]}\n[...]\n{document[start:start + around]}"


def prompt_messages(document: str, chunk: str) -> list[ChatMessage]:
    """The one user message asking for ``chunk``'s contextual text (PROMPT_VERSION)."""
    text = PROMPT.replace("{chunk}", chunk).replace("{document}", document_window(document, chunk))
    return [ChatMessage(role="user", content=text)]


def clean_answer(text: str) -> str:
    """The answer as stored: its first paragraph up to any markup the prompt used, at most
    two sentences, whitespace folded, at most ANSWER_CHARS. A small model goes on writing
    after its answer (the next paragraph, a tag of the prompt): that part is dropped."""
    first = re.split(r"\n\s*\n|</?(?:chunk|document)>", text.strip(), maxsplit=1)[0]
    kept = " ".join(_SENTENCE_END.split(first.strip())[:2])
    return " ".join(kept.split())[:ANSWER_CHARS]


class ContextWriter:
    """Asks an LLM for contextual texts, ``max_concurrency`` requests at a time."""

    def __init__(self, chat: ChatModel, max_concurrency: int) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be positive, not {max_concurrency}")
        self.chat = chat
        self.max_concurrency = max_concurrency

    @property
    def model_id(self) -> str:
        return self.chat.model_id

    def write(self, document: str, chunk: str) -> str:
        answer = self.chat.complete(prompt_messages(document, chunk), max_tokens=ANSWER_TOKENS)
        return clean_answer(answer.text)


def contextualize_source(
    conn: db.Conn,
    source_id: int,
    writer: ContextWriter | None,
    summary: RunSummary,
    report: Reporter,
    deadline: PhaseDeadline,
) -> None:
    """Bring every chunk of the source to the wanted contextual text: ``writer`` None removes
    them all; else cached texts of its model and prompt go in first, then the LLM is asked
    for the rest, page by page (each page stored: a killed run keeps what it got)."""
    if writer is None:
        summary.contextual_reused += sqlapi.apply_contextual_texts(conn, source_id, None, None)
        return
    model = writer.model_id
    summary.contextual_reused += sqlapi.apply_contextual_texts(conn, source_id, model, PROMPT_VERSION)
    calls = sqlapi.count_chunks_without_contextual_text(conn, source_id, model, PROMPT_VERSION)
    if not calls:
        return
    report.contextualizing_started(calls)
    lemmatize = sqlapi.keyword_lemmas(conn)
    breaker = _Breaker(FAILURES_IN_A_ROW)
    with ThreadPoolExecutor(max_workers=writer.max_concurrency, thread_name_prefix="rag-context") as pool:
        for page in _pages(conn, source_id, model):
            deadline.check()
            answered: list[tuple[ChunkToSituate, str]] = []
            asked = {pool.submit(breaker.call, writer.write, document, chunk.content): chunk
                     for document, chunk in page}
            for done in as_completed(asked):
                if isinstance(done.exception(), _NotAsked):
                    continue
                chunk = asked[done]
                report.contextualized(1)
                failure = _failure(done)
                if failure is None:
                    answered.append((chunk, done.result()))
                    continue
                summary.errors.append({"path": chunk.path,
                                       "error": f"contextual text of {chunk.where()}: {failure}"})
            if answered:
                if lemmatize:  # (their words get a lemma before they are posted: rag/lemmas.py)
                    lemmas.fill(conn, [t for _, t in answered])
                sqlapi.store_contextual_texts(conn, source_id, model, PROMPT_VERSION,
                                              [c.document_hash for c, _ in answered],
                                              [c.chunk_hash for c, _ in answered], [t for _, t in answered])
                summary.contextualized += len(answered)
            if breaker.open:
                left = sqlapi.count_chunks_without_contextual_text(conn, source_id, model, PROMPT_VERSION)
                summary.errors.append({"path": "", "error": (
                    f"the LLM failed {breaker.failures} requests in a row, so it was not asked about "
                    f"the rest; {left:,} chunks keep their structural context alone until the next run")})
                return


class _NotAsked(Exception):
    """A request not sent: the LLM had failed too many in a row."""


class _Breaker:
    """Counts the requests that fail in a row, as the workers see them; once ``limit`` have,
    no worker sends another (those in flight finish)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.failures = 0
        self.open = False
        self._lock = threading.Lock()

    def call(self, ask: Callable[[str, str], str], document: str, chunk: str) -> str:
        if self.open:
            raise _NotAsked
        try:
            answer = ask(document, chunk)
        except RagError:
            with self._lock:
                self.failures += 1
                self.open = self.open or self.failures >= self.limit
            raise
        with self._lock:
            if not self.open:
                self.failures = 0
        return answer


def _pages(conn: db.Conn, source_id: int, model: str) -> Iterator[list[tuple[str, ChunkToSituate]]]:
    """The chunks to ask about, DOCUMENTS_PER_PAGE documents at a time, each with its document's
    text; a page is fetched once the one before is stored, and failed chunks are not listed again."""
    after = ""
    while True:
        rows = sqlapi.chunks_without_contextual_text(conn, source_id, model, PROMPT_VERSION, after,
                                                     DOCUMENTS_PER_PAGE)
        if not rows:
            return
        yield [(row["document"] or "", _chunk(row, item)) for row in rows for item in row["chunks"]]
        after = rows[-1]["document_hash"]


def _chunk(row: dict[str, Any], item: dict[str, Any]) -> ChunkToSituate:
    return ChunkToSituate(row["document_hash"], item["hash"], row["path"], item["content"],
                          item.get("startLine"), item.get("endLine"))


def _failure(done: Future[str]) -> str | None:
    """Why a request failed, one line with secrets masked; None when it answered."""
    exc = done.exception()
    if exc is None:
        return None
    if not isinstance(exc, RagError):
        raise exc  # a bug, not an unanswered request
    return mask_connection(first_line(exc))


def cached_texts(conn: db.Conn, model: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The cached contextual texts of ``model`` and this prompt for (document hash, chunk hash) keys."""
    rows = sqlapi.cached_contextual_texts(conn, model, PROMPT_VERSION, [d for d, _ in keys],
                                          [c for _, c in keys])
    return {(r["document_hash"], r["chunk_hash"]): r["contextual_text"] for r in rows}

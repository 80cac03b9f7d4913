"""Storing an index run's new and changed files: each file one JSON record (its text, chunks
and code graph, encoded once so that batches are cut by size), batches of them replaced in one
transaction each (``rag.replace_files``) on writer threads while the run reads and chunks on.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import orjson
import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from rag import db, sqlapi

if TYPE_CHECKING:
    from rag.chunking.model import Chunk
    from rag.dispatcher import FileChunks
    from rag.sources.scan import ScannedFile

# A file whose chunks alone are larger cannot be stored: a per-file error.
MAX_FILE_JSON = 128 * 2**20
WRITERS = 2  # replace_files transactions at once, each tokenizing on a core of its own
DEADLOCK_RETRIES = 5

Batched = bytes  # a file to store with its chunks and graph, as JSON (``file_json``)
# NUL as JSON writes it (after an even run of backslashes, which are escaped backslashes):
# PostgreSQL's jsonb refuses it, so a NUL anywhere in a file's record (a page title, a body,
# a field) is stored as U+FFFD, one character for one.
_JSON_NUL = re.compile(rb"(?<!\\)((?:\\\\)*)\\u0000")


def file_json(scanned_file: ScannedFile, sha: str, fc: FileChunks, errors: list[dict[str, str]]) -> bytes:
    """A file for ``rag.replace_files`` as JSON, encoded once here so that batches are cut by
    size; a file too large to store is stored as its error (added to ``errors``), without
    content or chunks."""
    record = {
        "path": scanned_file.path, "size": scanned_file.size, "mtimeNs": scanned_file.mtime_ns,
        "sha256": sha,
        "sourceType": fc.chunks[0].metadata.get("sourceType") if fc.chunks else None,
        "language": fc.chunks[0].metadata.get("language") if fc.chunks else None,
        "content": fc.text, "error": fc.error, "metadata": fc.metadata,
        "graph": fc.graph.payload() if fc.graph is not None else None,
        "chunks": [_chunk_json(c) for c in fc.chunks],
    }
    encoded = encode_json(record)
    if len(encoded) <= MAX_FILE_JSON:
        return encoded
    size = len(encoded) / 2**20
    error = (f"too large to store: its text and {len(fc.chunks):,} chunks make {size:,.0f} MB of JSON, "
             f"over the {MAX_FILE_JSON // 2**20} MB a file may take; "
             "lower indexing.maxFileSize or exclude it")
    errors.append({"path": scanned_file.path, "error": error})
    record.update(sourceType=None, language=None, content="", error=error, graph=None, chunks=[])
    return encode_json(record)


def encode_json(value: Any) -> bytes:
    """JSON for ``rag.replace_files``: orjson encodes Django's 111 MB of batches in 0.17 s
    instead of json's 0.71 s; what it refuses (a lone surrogate, a non-string key) goes
    through json as before."""
    try:
        encoded = orjson.dumps(value)
    except orjson.JSONEncodeError:
        encoded = json.dumps(value).encode()
    return _JSON_NUL.sub(rb"\1\\ufffd", encoded) if b"\\u0000" in encoded else encoded


def _joined(batch: list[Batched]) -> bytes:
    return b"[" + b",".join(batch) + b"]"


class Writers:
    """Stores batches on WRITERS threads with a connection each.

    Storing is PostgreSQL's work (tokenizing and inserting postings): while
    its backends do it on their cores, the calling thread reads and chunks the
    next files. At most IN_FLIGHT batches wait, so a slow database holds back
    the chunking instead of letting a whole source pile up in memory; the first
    failed batch stops the run at the next submit.
    """

    IN_FLIGHT = 2 * WRITERS

    def __init__(self, conn: db.Conn):
        self._conninfo = conninfo(conn)
        self._local = threading.local()
        self._opened: list[db.Conn] = []
        self._opened_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.IN_FLIGHT)
        self._futures: list[Future[tuple[int, int]]] = []
        self._failure: BaseException | None = None
        self._pool = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="rag-store")

    def submit(self, source_id: int, batch: list[Batched]) -> None:
        self._slots.acquire()
        if self._failure is not None:
            self._slots.release()
            raise self._failure
        future = self._pool.submit(self._store, source_id, batch)
        future.add_done_callback(self._done)
        self._futures.append(future)

    def totals(self) -> tuple[int, int]:
        """Waits for every batch: (chunks added, chunks removed) of those stored; raises the first failure."""
        stored = [f.result() for f in self._futures if f.exception() is None]
        if self._failure is not None:
            raise self._failure
        return sum(a for a, _ in stored), sum(r for _, r in stored)

    def _done(self, future: Future[tuple[int, int]]) -> None:
        # (a batch cancelled by an interrupted run is no failure: the interrupt is reported)
        if not future.cancelled() and future.exception() is not None and self._failure is None:
            self._failure = future.exception()
        self._slots.release()

    def _store(self, source_id: int, batch: list[Batched]) -> tuple[int, int]:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = psycopg.connect(self._conninfo, autocommit=True, row_factory=dict_row)
            self._local.conn = conn
            with self._opened_lock:
                self._opened.append(conn)
        return store_batch(conn, source_id, batch)

    def __enter__(self) -> Writers:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        for conn in self._opened:
            conn.close()


def conninfo(conn: db.Conn) -> str:
    """What opens another connection to the same database as ``conn``."""
    password = {"password": conn.info.password} if conn.info.password else {}
    return make_conninfo("", **conn.info.get_parameters(), **password)


@contextmanager
def meanwhile(
    conn: db.Conn, work: Callable[[db.Conn], object]
) -> Iterator[None]:
    """Runs ``work`` on a connection of its own while the block runs; at the end of
    the block waits for it and raises its error (the block's own error wins)."""

    info = conninfo(conn)  # (read here: a connection is not shared between threads)

    def run() -> None:
        with psycopg.connect(info, autocommit=True, row_factory=dict_row) as own:
            work(own)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="rag-meanwhile") as pool:
        done = pool.submit(run)
        yield
        done.result()


def store_batch(
    conn: db.Conn,
    source_id: int,
    batch: list[Batched],
) -> tuple[int, int]:
    """Replace the batch's files and their chunks in one transaction: (added, removed) chunks.

    Concurrent batches update the same term statistics; when PostgreSQL breaks
    a deadlock between two of them, the aborted one (rolled back whole) is retried.
    """
    for attempt in range(DEADLOCK_RETRIES + 1):
        try:
            return sqlapi.replace_files(conn, source_id, Jsonb(batch, dumps=_joined))
        except psycopg.errors.DeadlockDetected:
            if attempt == DEADLOCK_RETRIES:
                raise
    raise AssertionError("unreachable")


def _chunk_json(chunk: Chunk) -> dict[str, Any]:
    # Loaded with the chunkers, as chunk_bytes is: only files just chunked are stored.
    from rag.chunking.passages import chunk_passages

    row: dict[str, Any] = {"content": chunk.content, "context": chunk.context,
                           "contentHash": chunk.content_hash, "metadata": chunk.metadata}
    passages = chunk_passages(chunk)
    if passages:
        row["passages"] = [{"end": p.end, "hash": p.content_hash} for p in passages]
    return row

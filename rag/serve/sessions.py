"""The service as one request of ``rag serve`` sees it: the server's config and models, a
pooled connection running as the request's database role, and a statement deadline.

``RequestService`` is a ``RagService`` whose ``with_db`` borrows a connection from the
server's ``ConnectionPool`` and runs the work in one transaction that first does
``SET LOCAL ROLE`` (a read token's role: PostgreSQL's row-level security then shows it
only its sources) and ``SET LOCAL statement_timeout`` (what is left of the request's
deadline). Everything else is the base service's: a request changes nothing a later one
sees. ``cancel()`` (a client gone, a deadline passed) cancels the statement running now.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from psycopg import sql

from rag.errors import AccessDenied, DatabaseError
from rag.serve.access import Principal
from rag.service import RagService, database_errors

if TYPE_CHECKING:
    from rag.config import SourceSpec
    from rag.db import Conn, DatabaseTarget
    from rag.providers import Embedder
    from rag.providers.llm import OpenAIChatModel
    from rag.providers.rerankers import Reranker
    from rag.runs import Reporter
    from rag.schemas import IndexOutput, RemoveOutput, StatusOutput
    from rag.search import SearchRequest, SearchResponse

log = logging.getLogger("rag.serve")
T = TypeVar("T")


class ConnectionPool:
    """At most ``size`` open connections of the server's database user, made on demand and kept;
    a broken one is dropped. Borrowers beyond ``size`` wait (the server limits requests first)."""

    def __init__(self, connect: Callable[[], Conn], size: int) -> None:
        self._connect = connect
        self._idle: queue.LifoQueue[Conn] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        self._slots.acquire()
        conn: Conn | None = None
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = self._connect()
            yield conn
        finally:
            if conn is not None:
                if self._closed or conn.closed or conn.broken:
                    conn.close()
                else:
                    self._idle.put(conn)
            self._slots.release()

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class SourceNames:
    """The names of the indexed sources, read again at most every ``ttl`` seconds."""

    def __init__(self, service: RagService, ttl: float = 5.0) -> None:
        self._service = service
        self._ttl = ttl
        self._lock = threading.Lock()
        self._names: frozenset[str] = frozenset()
        self._read_at = -ttl

    def __call__(self) -> frozenset[str]:
        with self._lock:
            if time.monotonic() - self._read_at >= self._ttl:
                from rag import sqlapi

                rows = self._service.with_db(sqlapi.list_sources)
                self._names, self._read_at = frozenset(r["name"] for r in rows), time.monotonic()
            return self._names


class RequestService(RagService):
    """One request's view of the server's ``base`` service (see the module docstring)."""

    def __init__(self, base: RagService, pool: ConnectionPool, principal: Principal,
                 deadline: float | None = None, source_names: Callable[[], frozenset[str]] | None = None
                 ) -> None:
        super().__init__(base.config_path, loaded=base.loaded, interface="mcp")
        self.base = base
        self.principal = principal
        self.deadline = deadline  # time.monotonic() by which the request must be answered
        self._pool = pool
        self._source_names = source_names
        self._schema_checked = True  # the server checked it at start
        self._running: Conn | None = None  # the connection a statement of this request runs on
        self._cancelled = False
        self.watch_status = base.watch_status

    # The models and the database are the server's.
    def target(self) -> DatabaseTarget:
        return self.base.target()

    def embedder(self) -> Embedder:
        return self.base.embedder()

    def reranker(self) -> Reranker:
        return self.base.reranker()

    def chat_model(self) -> OpenAIChatModel:
        return self.base.chat_model()

    def close(self) -> None:
        """Nothing of its own to close: the pool and the models are the server's."""

    def without_deadline(self) -> RequestService:
        """The same token's service for work that outlives its request (an index run)."""
        return RequestService(self.base, self._pool, self.principal, None, self._source_names)

    def cancel(self) -> None:
        """Cancels the statement running for this request now, and any it would start."""
        self._cancelled = True
        conn = self._running
        if conn is not None:
            conn.cancel_safe(timeout=2)

    def with_db(self, work: Callable[[Conn], T], *, retry: bool = True) -> T:
        import psycopg

        with database_errors(), self._pool.connection() as conn:
            if self._cancelled:
                raise DatabaseError("the request was cancelled")
            self._running = conn
            try:
                with conn.transaction():
                    if self.principal.role is not None:
                        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(self.principal.role)))
                    left_ms = self._left_ms()
                    if left_ms is not None:
                        conn.execute("SELECT set_config('statement_timeout', %s, true)", (str(left_ms),))
                    return work(conn)
            except psycopg.errors.QueryCanceled:
                raise DatabaseError("the request took longer than its deadline (serve.deadline) "
                                    "or its client went away, and was stopped") from None
            finally:
                self._running = None

    def _left_ms(self) -> int | None:
        if self.deadline is None:
            return None
        return max(int((self.deadline - time.monotonic()) * 1000), 1)

    def new_connection(self) -> Conn:
        """An index run's own connection: only an admin's, as the server's own user."""
        self._require_admin("index")
        return self.base.new_connection()

    # What a token may ask for: its sources only, writes only as admin.

    def _require_admin(self, what: str) -> None:
        if not self.principal.admin:
            raise AccessDenied(f"token {self.principal.name!r} has read scope; {what} needs an admin token")

    def allowed_sources(self, asked: list[str] | None) -> list[str] | None:
        """The sources a search may look in: those asked for, within the token's (None: all).
        The database enforces the grant anyway; naming them here keeps a restricted token's
        searches from spending their candidates on rows it cannot see."""
        granted = self.principal.sources
        if granted is None or "*" in granted:
            return asked
        if asked is None:
            if self._source_names is None:
                return list(granted)
            existing = self._source_names()  # (a granted source may not be indexed yet)
            visible = [s for s in granted if s in existing]
            return None if set(visible) == existing else visible
        outside = [s for s in asked if s not in granted]
        if outside:
            raise AccessDenied(f"token {self.principal.name!r} may not read source "
                               f"{', '.join(map(repr, outside))}; it may read {', '.join(granted)}")
        return asked

    def search_response(self, request: SearchRequest) -> SearchResponse:
        request = dataclasses.replace(request, sources=self.allowed_sources(request.sources))
        return super().search_response(request)

    def status(self, *, strict: bool = False) -> StatusOutput:
        """What a reader's token may know: the database's counts of its sources (row-level
        security), not the server's URL, config file, or the sources others watch."""
        found = super().status(strict=strict)
        if not self.principal.admin:
            found.database.url = None
            found.config.path = None
            found.watch = None
            found.config_changes = []
        return found

    def index(self, spec: SourceSpec, *, force: bool = False, reporter: Reporter | None = None,
              paths: Collection[str] | None = None, fetch: bool = True) -> IndexOutput:
        self._require_admin("index")
        return super().index(spec, force=force, reporter=reporter, paths=paths, fetch=fetch)

    def remove_source(self, name: str) -> RemoveOutput:
        self._require_admin("remove_source")
        return super().remove_source(name)

    def __repr__(self) -> str:
        return f"RequestService({self.principal.name!r})"


def describe(principal: Principal, **extra: Any) -> dict[str, Any]:
    """A principal as /v1/status shows it to its holder."""
    return {"token": principal.name, "scope": principal.scope,
            "sources": list(principal.sources) if principal.sources is not None else None, **extra}

"""The JSON API of ``rag serve`` under ``/v1``: each endpoint parses its request into the
arguments of one ``RagService`` call, runs it on a worker thread as the request's token
(``rag.serve.sessions.RequestService``) and answers its model as ``--json`` prints it.

Failures answer ``{"error": "<one line>"}``: 400 for a bad request or a ``RagError`` the
caller can fix, 403 beyond the token's scope or sources, 404 for an unknown run, 503 when
the database cannot be used, 504 past the deadline. ``/v1/ask`` streams server-sent
events: ``sources`` (what the LLM was given, numbered), ``token`` (each piece of the
answer), then ``done`` (the whole ``rag ask --json``) or ``error``.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from rag.config import describe_validation_error
from rag.errors import AccessDenied, DatabaseError, RagError, UnexpectedDatabaseError, first_line
from rag.schemas import IndexOutput, SourceType
from rag.secrets import mask_connection
from rag.serve.sessions import RequestService

log = logging.getLogger("rag.serve")
T = TypeVar("T")


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


Names = str | list[str] | None


class SearchBody(_Body):
    """``rag search``'s options."""

    query: str = Field(min_length=1, max_length=2048)
    top_k: int | None = Field(default=None, ge=1, le=100)
    source: Names = None
    source_type: SourceType | list[SourceType] | None = None
    language: Names = None
    path_prefix: str | None = None
    per_file: int | None = Field(default=None, ge=1, le=100)
    include_tests: bool = False
    no_rerank: bool = False


class AskBody(_Body):
    """``rag ask``'s options; ``stream`` false answers one JSON object."""

    question: str = Field(min_length=1, max_length=4096)
    top_k: int | None = Field(default=None, ge=1, le=100)
    source: Names = None
    source_type: SourceType | list[SourceType] | None = None
    language: Names = None
    path_prefix: str | None = None
    rewrite: bool = False
    filter: bool = False
    context_tokens: int | None = Field(default=None, ge=1)
    stream: bool = True


class IndexBody(_Body):
    """A configured or indexed source to bring up to date, or a folder on the server to index."""

    source: str | None = None
    path: str | None = None
    name: str | None = None
    force: bool = False


class ReadQuery(_Body):
    chunk_id: int | None = Field(default=None, ge=1)
    source: str | None = None
    path: str | None = None
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)
    header_path: str | None = None
    context: int = Field(default=0, ge=0, le=500)


class SourcesQuery(_Body):
    path_prefix: str | None = None
    source_type: Literal["local", "git", "confluence"] | None = None
    name_prefix: str | None = None
    limit: int = Field(default=50, ge=1, le=1000)


class RunOutput(_Body):
    """An index run started by ``POST /v1/index``, as ``GET /v1/runs/{id}`` shows it."""

    id: int
    source: str
    status: Literal["running", "succeeded", "failed"]
    started_by: str
    progress: str | None = None  # the last progress message
    done: float | None = None
    total: float | None = None
    result: IndexOutput | None = None
    error: str | None = None


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The one shape of every failure: ``{"error": "<one line>"}``."""
    line = " ".join(mask_connection(message).split())
    return JSONResponse({"error": line}, status_code=status, headers=headers)


def http_status(exc: BaseException) -> int:
    if isinstance(exc, HttpError):
        return exc.status
    if isinstance(exc, AccessDenied):
        return 403
    if isinstance(exc, DatabaseError):
        import psycopg

        if "deadline" in str(exc):
            return 504
        cause = exc.__cause__
        refused = isinstance(cause, psycopg.Error) and not isinstance(cause, psycopg.OperationalError)
        return 400 if refused and not isinstance(exc, UnexpectedDatabaseError) else 503
    return 400 if isinstance(exc, RagError) else 500


def out(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json", by_alias=True), status_code=status)


def listed(value: str | list[str] | list[SourceType] | None) -> list[str] | None:
    if value is None:
        return None
    return [str(v) for v in value] if isinstance(value, list) else [value]


async def parse_body(request: Request, model: type[T]) -> T:
    try:
        data = json.loads(await request.body() or b"{}")
    except ValueError as exc:
        raise HttpError(400, f"the body is not JSON ({exc})") from None
    return validated(model, data)


def validated(model: type[T], data: Any) -> T:
    try:
        return model.model_validate(data)  # type: ignore[attr-defined, no-any-return]
    except ValidationError as exc:
        raise HttpError(400, f"invalid request: {describe_validation_error(exc)}") from None


def service_of(request: Request) -> RequestService:
    service: RequestService = request.scope["rag.service"]
    return service


async def run_work(request: Request, work: Callable[[], T]) -> T:
    """``work`` on a worker thread, within the request's deadline; a client that goes away or
    a deadline that passes cancels the statement it runs (the thread ends with it)."""
    service = service_of(request)
    deadline = service.deadline
    try:
        with anyio.fail_after(None if deadline is None else max(deadline - time.monotonic(), 0.001)):
            result: list[T] = []
            async with _unwrapped(), anyio.create_task_group() as group:

                async def watch_disconnect() -> None:
                    while (await request.receive())["type"] != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                async def run() -> None:
                    result.append(await anyio.to_thread.run_sync(work, abandon_on_cancel=True))
                    group.cancel_scope.cancel()

                group.start_soon(watch_disconnect)
                group.start_soon(run)
            if not result:
                service.cancel()
                raise HttpError(499, "the client went away")
            return result[0]
    except TimeoutError:
        service.cancel()
        raise HttpError(504, "the request took longer than its deadline (serve.deadline) and was stopped") \
            from None


@asynccontextmanager
async def _unwrapped() -> AsyncIterator[None]:
    """A task group's one failure raised as itself, not inside an exception group."""
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0]  # noqa: B904 (its own __cause__ kept: the status depends on it)
        raise


# -- the endpoints ------------------------------------------------------------------------


async def search(request: Request) -> Response:
    from rag.search import SearchRequest

    body = await parse_body(request, SearchBody)
    request.scope["rag.query"] = body.query
    service = service_of(request)
    search_request = SearchRequest(
        body.query, body.top_k, listed(body.source), listed(body.source_type), listed(body.language),
        body.path_prefix or None, rerank=not body.no_rerank, per_file=body.per_file,
        include_tests=body.include_tests)
    return out(await run_work(request, lambda: service.search(search_request)))


async def read(request: Request) -> Response:
    query = validated(ReadQuery, dict(request.query_params))
    service = service_of(request)
    return out(await run_work(request, lambda: service.read_source(
        query.chunk_id, query.source, query.path, query.start_line, query.end_line, query.header_path,
        query.context)))


async def sources(request: Request) -> Response:
    query = validated(SourcesQuery, dict(request.query_params))
    service = service_of(request)
    return out(await run_work(request, lambda: service.list_sources(
        query.path_prefix, query.source_type, query.name_prefix, query.limit)))


async def status(request: Request) -> Response:
    service = service_of(request)
    principal = service.principal
    found = await run_work(request, service.status)
    body = found.model_dump(mode="json", by_alias=True)
    body["token"] = {"name": principal.name, "scope": principal.scope,
                     "sources": list(principal.sources) if principal.sources is not None else None}
    return JSONResponse(body)


async def ask(request: Request) -> Response:
    from rag.ask import AskRequest
    from rag.search import SearchRequest

    body = await parse_body(request, AskBody)
    request.scope["rag.query"] = body.question
    service = service_of(request)
    search_request = SearchRequest(body.question, body.top_k, listed(body.source), listed(body.source_type),
                                   listed(body.language), body.path_prefix or None)
    ask_request = AskRequest(search_request, rewrite=body.rewrite, filter=body.filter,
                             context_tokens=body.context_tokens)
    answering = await run_work(request, lambda: service.ask(ask_request))
    if not body.stream:
        return out(await run_work(request, answering.output))
    # On SIGTERM the answer goes on for up to a deadline (uvicorn waits a little longer).
    grace = request.app.state.server.settings.deadline
    return EventSourceResponse(_answer_events(service, answering), ping=15, shutdown_grace_period=grace)


async def _answer_events(service: RequestService, answering: Any) -> AsyncIterator[ServerSentEvent]:
    """The answer as events; when the client goes away the generator is cancelled, and closing
    the answer's stream closes the LLM's (its connection and its work)."""
    sources = [{"number": s.number, "chunkId": s.hit.chunk_id, "sourceName": s.hit.source_name,
                "path": s.hit.path, "location": s.location, "url": s.hit.url} for s in answering.sources]
    yield ServerSentEvent(json.dumps({"sources": sources, "warnings": answering.warnings}), event="sources")
    pieces = _Pieces(answering.stream())
    # Each piece within what was left of the deadline when the answer began: a long answer from
    # a model that keeps writing is not cut, a model that stops writing is.
    window = None if service.deadline is None else max(service.deadline - time.monotonic(), 1.0)
    try:
        while True:
            with anyio.fail_after(window):
                piece = await anyio.to_thread.run_sync(pieces.next, abandon_on_cancel=True)
            if piece is None:
                break
            yield ServerSentEvent(json.dumps({"text": piece}), event="token")
        output = await anyio.to_thread.run_sync(answering.output)
        yield ServerSentEvent(json.dumps(output.model_dump(mode="json", by_alias=True)), event="done")
    except TimeoutError:
        yield ServerSentEvent(json.dumps({"error": "the model wrote nothing for longer than the deadline "
                                                   "(serve.deadline)"}),
                              event="error")
    except RagError as exc:
        yield ServerSentEvent(json.dumps({"error": first_line(exc)}), event="error")
    finally:  # (not awaited: a cancelled generator cannot wait for anything)
        threading.Thread(target=pieces.close, name="rag-serve-answer-close", daemon=True).start()


class _Pieces:
    """An answer's pieces, read on worker threads one at a time; ``close`` waits for the piece
    being read, then closes the stream (and with it the LLM's response)."""

    def __init__(self, pieces: Iterator[str]) -> None:
        self._pieces = pieces
        self._lock = threading.Lock()

    def next(self) -> str | None:
        with self._lock:
            return next(self._pieces, None)

    def close(self) -> None:
        with self._lock:
            close = getattr(self._pieces, "close", None)
            if close is not None:
                close()


# -- index runs (admin) ----------------------------------------------------------------------


@dataclass
class Run:
    id: int
    source: str
    started_by: str
    status: Literal["running", "succeeded", "failed"] = "running"
    progress: str | None = None
    done: float | None = None
    total: float | None = None
    result: IndexOutput | None = None
    error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def output(self) -> RunOutput:
        with self.lock:
            return RunOutput(id=self.id, source=self.source, status=self.status, started_by=self.started_by,
                             progress=self.progress, done=self.done, total=self.total, result=self.result,
                             error=self.error)


class Runs:
    """The index runs this server started, by id (the last ``KEEP`` of them)."""

    KEEP = 100

    def __init__(self, on_indexed: Callable[[Any], None]) -> None:
        self._runs: dict[int, Run] = {}
        self._ids = itertools.count(1)
        self._on_indexed = on_indexed

    def start(self, service: RequestService, body: IndexBody) -> Run:
        from rag.mcp_server import ProgressReporter, source_to_index

        service = service.without_deadline()  # the run outlives the request
        spec = source_to_index(service, body.source, body.path, body.name)
        run = Run(next(self._ids), spec.name, service.principal.name)
        self._runs[run.id] = run
        for old in sorted(self._runs)[: -self.KEEP]:
            del self._runs[old]

        def progress(done: float, total: float | None, message: str) -> None:
            with run.lock:
                run.done, run.total, run.progress = done, total, message

        def work() -> None:
            try:
                result = service.index(spec, force=body.force, reporter=ProgressReporter(progress))
                with run.lock:
                    run.result, run.status = result, "succeeded"
                self._on_indexed(spec)
            except Exception as exc:
                if not isinstance(exc, RagError):
                    log.exception("index run %d crashed", run.id)
                with run.lock:
                    run.error, run.status = mask_connection(first_line(exc)), "failed"

        threading.Thread(target=work, name=f"rag-serve-index-{run.id}", daemon=True).start()
        return run

    def get(self, run_id: int) -> Run | None:
        return self._runs.get(run_id)


async def index(request: Request) -> Response:
    body = await parse_body(request, IndexBody)
    service = service_of(request)
    if not service.principal.admin:
        raise AccessDenied(f"token {service.principal.name!r} has read scope; index needs an admin token")
    runs: Runs = request.app.state.runs
    run = await run_work(request, lambda: runs.start(service, body))
    return out(run.output(), status=202)


async def run_status(request: Request) -> Response:
    service = service_of(request)
    if not service.principal.admin:
        raise AccessDenied(f"token {service.principal.name!r} has read scope; runs need an admin token")
    runs: Runs = request.app.state.runs
    try:
        run = runs.get(int(request.path_params["run_id"]))
    except ValueError:
        run = None
    if run is None:
        raise HttpError(404, f"no index run {request.path_params['run_id']!r} on this server")
    return out(run.output())

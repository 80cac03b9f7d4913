"""``rag serve``: one Starlette application for a team — MCP over Streamable HTTP at ``/mcp``
(the tools of ``rag.mcp_server``, from its one registry), the JSON API under ``/v1``
(``rag.serve.api``), the search page at ``/`` and ``/healthz``, ``/openapi.json``.

``AccessMiddleware`` owns what every request goes through: the token (401 without a valid
one, when tokens are configured), the concurrency limits (the server's and the token's: a
request waits for a slot until its deadline, then gets 503), the request's service
(``RequestService``: its token's database role and deadline) and one access-log line
(token, method, route, status, milliseconds, and the query when ``serve.logQueries``).
The lifespan owns the server's service, its connection pool, the MCP session manager, the
watcher that keeps the local sources fresh (as ``rag mcp`` does) and the database roles
of the read tokens (``rag.create_roles``, ``rag.grant_sources``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import rag.serve.api as api  # (the module: not through the package, which imports this one)
from rag import __version__, sqlapi
from rag.config import ServeConfig
from rag.errors import RagError, first_line
from rag.mcp_server import RagMCPServer, build_server
from rag.serve.access import LOCAL, Principal, Tokens, loopback_host_header
from rag.serve.sessions import ConnectionPool, RequestService, SourceNames
from rag.service import RagService, database_errors

log = logging.getLogger("rag.serve")
access_log = logging.getLogger("rag.serve.access")

PAGE = Path(__file__).parent / "page"
OPEN_PATHS = ("/healthz", "/openapi.json", "/", "/static/")  # no data: no token needed
POOL_EXTRA = 2  # connections beyond serve.maxConcurrent: the index runs' catalog calls, /healthz


@dataclass
class Limits:
    """The server's and each token's concurrency slots."""

    total: anyio.CapacityLimiter
    per_token: int
    tokens: dict[str, anyio.CapacityLimiter] = field(default_factory=dict)

    def of(self, principal: Principal) -> anyio.CapacityLimiter:
        if principal.name not in self.tokens:
            self.tokens[principal.name] = anyio.CapacityLimiter(self.per_token)
        return self.tokens[principal.name]


class AccessMiddleware:
    def __init__(self, app: ASGIApp, server: Server) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        settings = self.server.settings
        status = [0]

        async def logged_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        path: str = scope["path"]
        principal: Principal | None = None
        try:
            if not self.server.tokens and not loopback_host_header(_header(scope, b"host")):
                # Without tokens anyone who reaches the server reads everything: only this machine's
                # own names, so that a web page cannot rebind its name to 127.0.0.1 and read it.
                refusal = api.error_response(403, "without tokens this server answers requests to "
                                                  "127.0.0.1 or localhost only")
                await refusal(scope, receive, logged_send)
                return
            principal = self.server.principal(scope)
            if path in OPEN_PATHS or path.startswith("/static/"):
                await self.app(scope, receive, logged_send)
                return
            if principal is None:
                reason = "a token is required: send Authorization: Bearer <token>"
                if any(k == b"authorization" for k, _ in scope["headers"]):
                    reason = "the token is not valid"
                refusal = api.error_response(401, reason, {"WWW-Authenticate": "Bearer"})
                await refusal(scope, receive, logged_send)
                return
            deadline = started + settings.deadline
            limited = not (path.startswith("/mcp") and scope["method"] != "POST")  # an MCP GET stream idles
            async with AsyncExitStack() as slots:
                if limited:
                    try:
                        with anyio.fail_after(settings.deadline):
                            for limiter in (self.server.limits.of(principal), self.server.limits.total):
                                await slots.enter_async_context(_slot(limiter))
                    except TimeoutError:
                        busy = api.error_response(
                            503, "the server is busy: no free slot within the deadline; try again",
                            {"Retry-After": "1"})
                        await busy(scope, receive, logged_send)
                        return
                scope["rag.principal"] = principal
                scope["rag.service"] = RequestService(self.server.service, self.server.pool, principal,
                                                      deadline, self.server.source_names)
                await self.app(scope, receive, logged_send)
        finally:
            ms = (time.monotonic() - started) * 1000
            query = scope.get("rag.query") if settings.log_queries else None
            shown = f" q={json.dumps(query, ensure_ascii=False)}" if query else ""
            access_log.info("%s %s %s %d %.0fms%s", principal.name if principal else "-", scope["method"],
                            path, status[0], ms, shown)


def _header(scope: Scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), None)


@asynccontextmanager
async def _slot(limiter: anyio.CapacityLimiter) -> AsyncIterator[None]:
    borrower = object()  # one per request, whichever task runs it
    await limiter.acquire_on_behalf_of(borrower)
    try:
        yield
    finally:
        limiter.release_on_behalf_of(borrower)


class Server:
    """What the application's requests share (made by ``create_app``, started by its lifespan)."""

    def __init__(self, service: RagService, tokens: Tokens, settings: ServeConfig, *, host: str) -> None:
        self.service = service
        self.tokens = tokens
        self.settings = settings
        self.host = host
        self.pool = ConnectionPool(service.new_connection, settings.max_concurrent + POOL_EXTRA)
        self.limits = Limits(anyio.CapacityLimiter(settings.max_concurrent), settings.per_token_concurrent)
        self.mcp: RagMCPServer = build_server(service, preload=False, owns_service=False,
                                              watch=settings.watch)
        service.interface = "mcp"
        self.runs = api.Runs(self._indexed)
        self.source_names = SourceNames(service)

    def principal(self, scope: Scope) -> Principal | None:
        if not self.tokens:
            return LOCAL
        return self.tokens.authenticate(_header(scope, b"authorization"))

    def _indexed(self, spec: Any) -> None:
        if self.mcp.watcher is not None:
            self.mcp.watcher.add(spec)  # kept fresh from now on

    def prepare_database(self) -> None:
        """The schema checked, and each read token's role made and granted its sources."""
        readers = [p for p in self.tokens.principals() if p.role is not None]

        def work(conn: Any) -> None:
            if readers:
                made = sqlapi.create_roles(conn)
                if made:
                    log.info("made the database roles %s", ", ".join(made))
                for reader in readers:
                    assert reader.role is not None
                    sqlapi.grant_sources(conn, reader.role, list(reader.sources) if reader.sources else None)

        self.service.with_db(work, retry=False)

    def security(self) -> TransportSecuritySettings | None:
        """DNS-rebinding protection on loopback (a web page must not reach the MCP tools); elsewhere
        the tokens protect them."""
        from rag.serve.access import is_loopback

        if not is_loopback(self.host):
            return None
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])


def create_app(service: RagService, tokens: Tokens, settings: ServeConfig, *,
               host: str = "127.0.0.1") -> Starlette:
    """The application; its lifespan connects, prepares the roles and starts the watcher."""
    from rag.serve.openapi import openapi

    server = Server(service, tokens, settings, host=host)
    manager = StreamableHTTPSessionManager(app=server.mcp._lowlevel_server, stateless=True,
                                           security_settings=server.security())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await anyio.to_thread.run_sync(server.prepare_database)
        async with manager.run():
            server.mcp.start_watching()
            threading.Thread(target=service.warm_up, name="rag-warm-up", daemon=True).start()
            log.info("local-rag %s serving; tokens: %s", __version__,
                     ", ".join(f"{p.name} ({p.scope})" for p in tokens.principals())
                     or "none (loopback only)")
            try:
                yield
            finally:
                watcher = server.mcp.watcher
                if watcher is not None:
                    watcher.stop()
                server.pool.close()

    async def healthz(request: Request) -> Response:
        def ping() -> bool:
            with server.pool.connection() as conn, database_errors():
                conn.execute("SELECT 1")
            return True

        try:
            with anyio.fail_after(5):
                await anyio.to_thread.run_sync(ping, abandon_on_cancel=True)
        except (TimeoutError, RagError) as exc:
            return api.error_response(503, f"database not answering: {first_line(exc)}")
        return JSONResponse({"status": "ok", "version": __version__})

    async def openapi_json(request: Request) -> Response:
        return JSONResponse(openapi())

    async def page(request: Request) -> Response:
        return FileResponse(PAGE / "index.html", headers={"Cache-Control": "no-cache"})

    routes = [
        Route("/", page),
        Mount("/static", StaticFiles(directory=PAGE), name="static"),
        Route("/healthz", healthz),
        Route("/openapi.json", openapi_json),
        Route("/v1/search", guarded(api.search), methods=["POST"]),
        Route("/v1/ask", guarded(api.ask), methods=["POST"]),
        Route("/v1/read", guarded(api.read)),
        Route("/v1/sources", guarded(api.sources)),
        Route("/v1/status", guarded(api.status)),
        Route("/v1/index", guarded(api.index), methods=["POST"]),
        Route("/v1/runs/{run_id}", guarded(api.run_status)),
        Route("/mcp", StreamableHTTPASGIApp(manager), methods=["GET", "POST", "DELETE"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.runs = server.runs
    app.state.server = server
    app.add_middleware(AccessMiddleware, server=server)
    return app


def guarded(endpoint: Any) -> Any:
    """An endpoint whose failures answer ``{"error": ...}`` with their status."""

    async def call(request: Request) -> Response:
        try:
            response: Response = await endpoint(request)
            return response
        except (RagError, api.HttpError) as exc:
            return api.error_response(api.http_status(exc), str(exc))
        except Exception as exc:
            log.exception("%s crashed", request.url.path)
            return api.error_response(500, f"internal error ({type(exc).__name__}: {first_line(exc)}); "
                                           "the server log has the traceback")

    return call


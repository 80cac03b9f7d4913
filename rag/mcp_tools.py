"""What the MCP tools do, apart from the protocol: ``RagService`` and one function per tool.

``RagService`` holds what the tools share and builds each piece on first use,
so the server answers ``initialize`` and ``tools/list`` before anything heavy
happens: the database connection (re-opened when the server restarted; the
embedded server is started again if it was stopped), the embedding model and
the reranker. Each tool function returns a pydantic model (the tool's
structured output) or raises ``RagError`` / a psycopg error with a message
written for the agent; ``rag.mcp_server`` turns those into tool errors.

Search goes through ``rag.search.Searcher``, indexing through
``rag.indexer.index_source``, the catalog through the SQL functions
(``rag.list_sources``, ``rag.remove_source``, ``rag.status``, ...).
``read_source`` reads ``rag.files.content``, so it works for git sources and
remote databases alike, and refuses any path the index does not hold.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from rag.config import LoadedConfig, RagConfig, load_config
from rag.errors import DatabaseError, RagError

if TYPE_CHECKING:
    import psycopg

    from rag.db import DatabaseTarget
    from rag.indexer import SourceSpec
    from rag.providers import Embedder
    from rag.providers.rerankers import Reranker

    Connection = psycopg.Connection[dict[str, Any]]

log = logging.getLogger(__name__)

T = TypeVar("T")
SNIPPET_CHARS = 500
MAX_READ_LINES = 2000
MAX_READ_CHARS = 200_000
SourceType = Literal["code", "markdown", "text", "pdf"]

# Index runs hold pg_try_advisory_lock(rag._source_lock_key(source_id)), the key
# being 0x7261670000000000 + source_id; pg_locks shows a bigint key as its high
# half in classid, its low half in objid, with objsubid 1.
ACTIVE_RUNS_SQL = "SELECT * FROM rag.active_runs()"


# ---------------------------------------------------------------------------
# Structured outputs (camelCase on the wire)


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Scores(_Out):
    bm25: float | None
    vector: float | None
    rrf: float
    rerank: float | None


class Coordinates(_Out):
    start_line: int | None = None
    end_line: int | None = None
    fqn: str | None = None
    fragment_type: str | None = None
    header_path: str | None = None
    page_start: int | None = None
    page_end: int | None = None


class SearchResult(_Out):
    chunk_id: int
    source_name: str
    path: str
    source_type: str
    start_line: int | None
    end_line: int | None
    coordinates: Coordinates
    snippet: str
    scores: Scores


class SearchOutput(_Out):
    query: str
    results: list[SearchResult]
    total_candidates: int
    warnings: list[str]


class SourceText(_Out):
    source_name: str
    path: str
    source_type: str | None
    language: str | None
    start_line: int
    end_line: int
    total_lines: int
    content: str
    truncated: bool
    chunk_id: int | None = None
    metadata: dict[str, Any] | None = None


class SourceInfo(_Out):
    id: int
    name: str
    type: str
    path: str
    branch: str | None
    file_count: int
    chunk_count: int
    last_indexed_at: datetime | None
    indexing: bool


class SourcesOutput(_Out):
    sources: list[SourceInfo]


class DatabaseInfo(_Out):
    connected: bool
    url: str | None
    origin: str | None
    schema_version: str | None = None
    postgres_version: str | None = None
    pgvector_version: str | None = None
    total_sources: int | None = None
    total_files: int | None = None
    total_chunks: int | None = None
    total_embeddings: int | None = None
    error: str | None = None


class ProviderInfo(_Out):
    provider: str
    model: str | None
    configured: bool


class Providers(_Out):
    embeddings: ProviderInfo
    reranker: ProviderInfo


class Coverage(_Out):
    model: str
    embedded_chunks: int
    total_chunks: int


class ActiveRun(_Out):
    source: str
    run_id: int | None
    started_at: datetime | None


class LastRun(_Out):
    source: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    chunks_added: int
    chunks_removed: int
    errors: int


class IndexingInfo(_Out):
    active: bool
    active_runs: list[ActiveRun]
    last_indexed_at: datetime | None
    last_run: LastRun | None


class ConfigInfo(_Out):
    path: str | None
    origin: str


class StatusOutput(_Out):
    database: DatabaseInfo
    providers: Providers
    embedding_coverage: list[Coverage]
    indexing: IndexingInfo
    config: ConfigInfo


class FileError(_Out):
    path: str
    error: str


class IndexOutput(_Out):
    source: str
    location: str
    run_id: int | None
    status: str
    seconds: float
    files_found: int
    skipped: dict[str, int]
    new: int
    changed: int
    unchanged: int
    deleted: int
    chunks_added: int
    chunks_removed: int
    chunks_total: int
    embedded: int
    reused: int
    errors: int
    file_errors: list[FileError]


class RemoveOutput(_Out):
    name: str
    removed_chunks: int


# ---------------------------------------------------------------------------
# Shared state


class RagService:
    """Configuration, database connection and models, each made on first use and then kept.

    Tools run on worker threads: one connection serves the short queries under a
    lock, each index run opens its own (it holds the source's lock for minutes).
    """

    def __init__(
        self,
        config_path: str | None = None,
        *,
        loaded: LoadedConfig | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.config_path = config_path
        self._loaded = loaded
        self._target: DatabaseTarget | None = None
        self._conn: Connection | None = None
        self._db_lock = threading.Lock()
        self._model_lock = threading.Lock()
        self._embedder = embedder
        self._reranker = reranker

    @property
    def loaded(self) -> LoadedConfig:
        if self._loaded is None:
            self._loaded = load_config(self.config_path)
        return self._loaded

    @property
    def config(self) -> RagConfig:
        return self.loaded.config

    def target(self) -> DatabaseTarget:
        if self._target is None:
            from rag import db

            self._target = db.resolve_target(self.config.database)
        return self._target

    def known_target(self) -> DatabaseTarget | None:
        """The database chosen so far, without starting anything."""
        return self._target

    def new_connection(self) -> Connection:
        import psycopg

        from rag import db

        try:
            return db.connect(self.target())
        except (DatabaseError, psycopg.OperationalError):
            if self._target is None or self._target.origin != "embedded":
                raise
            # The embedded server was stopped since (rag db stop): start it again.
            log.info("the embedded PostgreSQL is not answering; starting it again")
            self._target = None  # resolving it again starts the server
            return db.connect(self.target())

    def with_db(self, work: Callable[[Connection], T], *, retry: bool = True) -> T:
        """Run ``work`` on the shared connection; a connection lost on the way is
        re-opened and, when ``retry`` (the work is safe to repeat), tried once more."""
        import psycopg

        with self._db_lock:
            for attempt in (1, 2):
                if self._conn is None or self._conn.closed:
                    self._conn = self.new_connection()
                conn = self._conn
                try:
                    return work(conn)
                except psycopg.OperationalError as exc:
                    if not (conn.broken or conn.closed):
                        raise  # a statement's own failure (lock, timeout), not the connection's
                    reason = _first_line(exc)
                    log.warning("database connection lost (%s); reconnecting", reason)
                    self._drop_connection()
                    if attempt == 2 or not retry:
                        raise DatabaseError(
                            f"the database connection was lost during the call ({reason}); "
                            "it is re-opened on the next call, so try again"
                        ) from None
            raise AssertionError("unreachable")

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # closing a dead connection may complain; nothing to do
                log.debug("closing a lost connection failed", exc_info=True)

    def close(self) -> None:
        with self._db_lock:
            self._drop_connection()

    def embedder(self) -> Embedder:
        with self._model_lock:
            if self._embedder is None:
                from rag import runtime

                self._embedder = runtime.make_configured_embedder(self.config.embeddings)
            return self._embedder

    def reranker(self) -> Reranker:
        with self._model_lock:
            if self._reranker is None:
                from rag import runtime

                self._reranker = runtime.make_configured_reranker(self.config.reranker)
            return self._reranker

    def warm_up(self) -> None:
        """Connect and load the local models ahead of the first call (run on a background thread)."""
        # A search per arm also compiles the PL/pgSQL functions of this session and reads the
        # indexes' top pages, which costs the first real search a few hundred milliseconds.
        warm_search = "SELECT count(*) FROM rag.search('warm up', %s::vector, 1, model => %s)"
        try:
            self.with_db(lambda conn: conn.execute(warm_search, (None, None)))
            if self.config.embeddings.provider == "local":
                embedder = self.embedder()
                literal = "[" + ",".join(f"{x:.7g}" for x in embedder.embed_query("warm up")) + "]"

                def vector_arm(conn: Connection) -> None:
                    if conn.execute("SELECT 1 FROM rag.embedding_models WHERE model = %s",
                                    (embedder.model_id,)).fetchone():
                        conn.execute(warm_search, (literal, embedder.model_id))

                self.with_db(vector_arm)
            if self.config.reranker.provider == "local":
                self.reranker().rerank("warm up", ["warm up"], 1)
            log.info("warm-up done: database connected, models loaded")
        except Exception as exc:  # the tool that needs the piece reports the problem
            log.info("warm-up stopped: %s", _first_line(exc))


# ---------------------------------------------------------------------------
# Tools


def search(
    service: RagService,
    query: str,
    top_k: int | None = None,
    sources: list[str] | None = None,
    source_types: list[str] | None = None,
    languages: list[str] | None = None,
    path_prefix: str | None = None,
) -> SearchOutput:
    from rag.search import Searcher, SearchRequest

    settings = service.config.search
    embedder, reranker = service.embedder(), service.reranker()
    request = SearchRequest(query, top_k, sources, source_types, languages, path_prefix or None)
    response = service.with_db(lambda conn: Searcher(conn, settings, embedder, reranker).search(request))
    results = [
        SearchResult(
            chunk_id=hit.chunk_id, source_name=hit.source_name, path=hit.path, source_type=hit.source_type,
            start_line=hit.coordinates.get("startLine"), end_line=hit.coordinates.get("endLine"),
            coordinates=Coordinates.model_validate(hit.coordinates), snippet=hit.content[:SNIPPET_CHARS],
            scores=Scores(bm25=hit.bm25, vector=hit.vector, rrf=hit.rrf, rerank=hit.rerank),
        )
        for hit in response.hits
    ]
    return SearchOutput(query=query, results=results, total_candidates=response.total_candidates,
                        warnings=response.warnings)


def read_source(
    service: RagService,
    chunk_id: int | None = None,
    source: str | None = None,
    path: str | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    header_path: str | None = None,
    context: int = 0,
) -> SourceText:
    if chunk_id is not None:
        if path or start_line or end_line or header_path:
            raise RagError("chunkId already names the lines to read; drop path, startLine, endLine and "
                           "headerPath (use context for lines around it)")
        return service.with_db(lambda conn: _read_chunk(conn, chunk_id, context))
    if not path:
        raise RagError("say what to read: a chunkId from search results, or a path "
                       "(with source when several sources hold it)")
    if header_path and (start_line or end_line):
        raise RagError("give headerPath or startLine/endLine, not both")
    if start_line and end_line and end_line < start_line:
        raise RagError(f"endLine {end_line} is before startLine {start_line}")
    return service.with_db(
        lambda conn: _read_path(conn, source, path, start_line, end_line, header_path, context))


def _read_chunk(conn: Connection, chunk_id: int, context: int) -> SourceText:
    row = conn.execute(
        "SELECT c.id, c.metadata, c.content AS chunk_content, f.path, f.source_type, f.language,"
        " f.content, s.name AS source_name"
        " FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id JOIN rag.sources s ON s.id = c.source_id"
        " WHERE c.id = %s", (chunk_id,),
    ).fetchone()
    if row is None:
        raise RagError(f"chunk {chunk_id} is not in the index (its file may have been re-indexed "
                       "since that search); search again for fresh chunkIds")
    meta = row["metadata"] or {}
    start, end = meta.get("startLine"), meta.get("endLine")
    if row["content"] is None or not isinstance(start, int) or not isinstance(end, int):
        text = row["chunk_content"]
        lines = len(text.split("\n"))
        return SourceText(source_name=row["source_name"], path=row["path"], source_type=row["source_type"],
                          language=row["language"], start_line=1, end_line=lines, total_lines=lines,
                          content=text, truncated=False, chunk_id=chunk_id, metadata=meta)
    out = _slice(row, start, end, context)
    out.chunk_id, out.metadata = chunk_id, meta
    return out


def _read_path(conn: Connection, source: str | None, path: str, start_line: int | None,
               end_line: int | None, header_path: str | None, context: int) -> SourceText:
    if source is not None:
        _require_source(conn, source)
    rel = _relative_path(conn, source, path)
    rows = conn.execute(
        "SELECT f.id, f.path, f.source_type, f.language, f.content, f.error, s.name AS source_name"
        " FROM rag.files f JOIN rag.sources s ON s.id = f.source_id"
        " WHERE f.path = %(path)s AND (%(source)s::text IS NULL OR s.name = %(source)s) ORDER BY s.name",
        {"path": rel, "source": source},
    ).fetchall()
    if not rows:
        raise RagError(_not_indexed(conn, source, rel))
    if len(rows) > 1:
        names = ", ".join(r["source_name"] for r in rows)
        raise RagError(f"path {rel!r} is in several sources ({names}); pass source")
    row = rows[0]
    if row["content"] is None:
        why = f" ({row['error']})" if row["error"] else ""
        raise RagError(f"the index holds no text for {rel!r} in source {row['source_name']!r}{why}")
    if header_path:
        span = conn.execute(
            "SELECT min((c.metadata->>'startLine')::int) AS first, max((c.metadata->>'endLine')::int) AS last"
            " FROM rag.chunks c WHERE c.file_id = %(file)s AND (c.metadata->>'headerPath' = %(hp)s"
            " OR starts_with(c.metadata->>'headerPath', %(hp)s || ' > '))",
            {"file": row["id"], "hp": header_path},
        ).fetchone()
        if span is None or span["first"] is None:
            sections = conn.execute(
                "SELECT DISTINCT c.metadata->>'headerPath' AS hp FROM rag.chunks c"
                " WHERE c.file_id = %s AND c.metadata ? 'headerPath' ORDER BY 1 LIMIT 30", (row["id"],),
            ).fetchall()
            known = "; ".join(r["hp"] for r in sections) or "none (no headings)"
            raise RagError(f"no section {header_path!r} in {rel!r}; its sections: {known}")
        return _slice(row, span["first"], span["last"], context)
    return _slice(row, start_line or 1, end_line, context)


def _slice(row: dict[str, Any], start: int, end: int | None, context: int) -> SourceText:
    """Lines ``start``..``end`` (1-based, inclusive; None: to the end) of the stored text, widened by
    ``context`` lines each side. Lines are cut at "\\n" only, as the chunkers count them."""
    lines = row["content"].split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    total = len(lines)
    if start > max(total, 1):
        raise RagError(f"{row['path']!r} has {total:,} lines; startLine {start} is past its end")
    first = max(1, start - context)
    last = min(total, (end if end is not None else total) + context)
    truncated = False
    if last - first + 1 > MAX_READ_LINES:
        last, truncated = first + MAX_READ_LINES - 1, True
    picked = lines[first - 1:last]
    size = 0
    for number, line in enumerate(picked):
        size += len(line) + 1
        if size > MAX_READ_CHARS and number > 0:
            picked, truncated = picked[:number], True
            break
    last = first + len(picked) - 1
    text = "\n".join(picked)
    if len(text) > MAX_READ_CHARS:  # one enormous line
        text, truncated = text[:MAX_READ_CHARS], True
    return SourceText(source_name=row["source_name"], path=row["path"], source_type=row["source_type"],
                      language=row["language"], start_line=first, end_line=max(last, first - 1),
                      total_lines=total, content=text, truncated=truncated)


def _relative_path(conn: Connection, source: str | None, path: str) -> str:
    """The path as the index stores it: relative to the source root, POSIX. An absolute
    path inside a local source's folder is made relative to it."""
    given = path.strip()
    if given.startswith("~") or given.startswith("/"):
        absolute = str(Path(given).expanduser())
        rows = conn.execute(
            "SELECT s.location FROM rag.sources s WHERE s.type = 'local'"
            " AND (%(source)s::text IS NULL OR s.name = %(source)s)"
            " AND starts_with(%(path)s, s.location || '/') ORDER BY length(s.location) DESC LIMIT 1",
            {"source": source, "path": absolute},
        ).fetchall()
        if rows:
            return absolute[len(rows[0]["location"]) + 1:]
        return absolute
    return str(PurePosixPath(given.replace("\\", "/"))).removeprefix("./")


def _not_indexed(conn: Connection, source: str | None, rel: str) -> str:
    where = f"source {source!r}" if source else "any source"
    name = PurePosixPath(rel).name
    similar = conn.execute(
        "SELECT s.name AS source_name, f.path FROM rag.files f JOIN rag.sources s ON s.id = f.source_id"
        " WHERE (f.path = %(name)s OR f.path LIKE %(suffix)s)"
        " AND (%(source)s::text IS NULL OR s.name = %(source)s) ORDER BY length(f.path), f.path LIMIT 5",
        {"name": name, "suffix": "%/" + _like_escape(name), "source": source},
    ).fetchall() if name else []
    hint = ("; did you mean: " + ", ".join(f"{r['path']} ({r['source_name']})" for r in similar)
            if similar else "; only indexed files can be read (list_sources shows the sources, "
            "search finds paths)")
    return f"path {rel!r} is not in the index of {where}{hint}"


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _require_source(conn: Connection, name: str) -> None:
    row = conn.execute(
        "SELECT bool_or(s.name = %s) AS found, string_agg(s.name, ', ' ORDER BY s.name) AS known"
        " FROM rag.sources s", (name,),
    ).fetchone()
    assert row is not None
    if not row["found"]:
        raise RagError(f"source {name!r} not found; known: {row['known'] or 'none (index one first)'}")


def list_sources(
    service: RagService,
    path_prefix: str | None = None,
    source_type: str | None = None,
    name_prefix: str | None = None,
    limit: int = 50,
) -> SourcesOutput:
    def work(conn: Connection) -> tuple[list[dict[str, Any]], set[str]]:
        rows = conn.execute(
            "SELECT * FROM rag.list_sources(%s, %s, %s)", (name_prefix or None, source_type, 100_000)
        ).fetchall()
        return rows, {r["source_name"] for r in conn.execute(ACTIVE_RUNS_SQL).fetchall()}

    rows, active = service.with_db(work)
    if path_prefix:
        prefix = str(Path(path_prefix).expanduser()) if path_prefix.startswith("~") else path_prefix
        rows = [r for r in rows if r["location"].startswith(prefix)]
    return SourcesOutput(sources=[
        SourceInfo(id=r["id"], name=r["name"], type=r["type"], path=r["location"], branch=r["branch"],
                   file_count=r["files"], chunk_count=r["chunks"], last_indexed_at=r["last_indexed_at"],
                   indexing=r["name"] in active)
        for r in rows[:limit]
    ])


def status(service: RagService) -> StatusOutput:
    import psycopg

    loaded = service.loaded
    config = loaded.config
    database = DatabaseInfo(connected=False, url=None, origin=None)
    coverage: list[Coverage] = []
    indexing = IndexingInfo(active=False, active_runs=[], last_indexed_at=None, last_run=None)

    def work(conn: Connection) -> None:
        database.connected = True
        row = conn.execute("SELECT * FROM rag.status()").fetchone()
        assert row is not None
        database.schema_version = row["schema_version"]
        database.postgres_version = row["postgres_version"]
        database.pgvector_version = row["pgvector_version"]
        database.total_sources, database.total_files = row["sources"], row["files"]
        database.total_chunks, database.total_embeddings = row["chunks"], row["embeddings"]
        indexing.last_indexed_at = row["last_indexed_at"]
        coverage.extend(Coverage(model=r["model"], embedded_chunks=r["embedded_chunks"],
                                 total_chunks=r["total_chunks"])
                        for r in conn.execute("SELECT * FROM rag.embedding_coverage()").fetchall())
        for run in conn.execute("SELECT * FROM rag.last_runs(1)").fetchall():
            counts = run["counts"] or {}
            indexing.last_run = LastRun(
                source=run["source_name"], status=run["status"], started_at=run["started_at"],
                finished_at=run["finished_at"], chunks_added=counts.get("chunksAdded", 0),
                chunks_removed=counts.get("chunksRemoved", 0), errors=counts.get("errors", 0))
        indexing.active_runs = [
            ActiveRun(source=r["source_name"], run_id=r["run_id"], started_at=r["started_at"])
            for r in conn.execute(ACTIVE_RUNS_SQL).fetchall()]
        indexing.active = bool(indexing.active_runs)

    try:
        service.with_db(work)
    except _missing_schema_errors():
        database.error = "the database has no local-rag schema yet; run `rag init`"
    except (RagError, psycopg.Error) as exc:
        database.connected = False
        database.error = describe_error(exc)
    target = service.known_target()
    if target is not None:
        database.url, database.origin = target.masked_url, target.origin
    return StatusOutput(
        database=database,
        providers=_providers(config),
        embedding_coverage=coverage,
        indexing=indexing,
        config=ConfigInfo(path=str(loaded.path) if loaded.path else None, origin=loaded.origin),
    )


def _providers(config: RagConfig) -> Providers:
    emb = config.embeddings
    if emb.provider == "local":
        embeddings = ProviderInfo(provider="local", model=emb.local.model, configured=True)
    elif emb.provider in ("jina", "openai"):
        remote = emb.jina if emb.provider == "jina" else emb.openai
        keyless = emb.provider == "openai" and remote.base_url != "https://api.openai.com/v1"
        embeddings = ProviderInfo(provider=emb.provider, model=remote.model,
                                  configured=remote.api_key is not None or keyless)
    else:
        embeddings = ProviderInfo(provider="none", model=None, configured=False)
    rr = config.reranker
    if rr.provider == "jina":
        reranker = ProviderInfo(provider="jina", model=rr.jina.model, configured=rr.jina.api_key is not None)
    elif rr.provider == "local":
        reranker = ProviderInfo(provider="local", model=rr.local.model, configured=True)
    else:
        reranker = ProviderInfo(provider="none", model=None, configured=False)
    return Providers(embeddings=embeddings, reranker=reranker)


ProgressFn = Callable[[float, float | None, str], None]


class _ProgressReporter:
    """The indexer's Reporter as MCP progress: a number that only grows, a total once known."""

    def __init__(self, send: ProgressFn) -> None:
        self._send = send
        self._base = 0
        self._total: int | None = None
        self._done = 0

    def scanned(self, found: int, skipped: dict[str, int]) -> None:
        self._send(1, None, f"scanned: {found:,} files found ({sum(skipped.values()):,} excluded)")

    def planned(self, to_index: int, unchanged: int, deleted: int) -> None:
        self._send(2, None, f"changed: {to_index:,} files ({unchanged:,} unchanged, {deleted:,} deleted)")

    def chunked(self, chunks: int, files: int) -> None:
        self._send(3, None, f"chunked: {chunks:,} chunks from {files:,} files")

    def embedding_started(self, total: int) -> None:
        self._base, self._total, self._done = 4, total, 0
        self._send(4, 4 + total, f"embedding {total:,} chunks")

    def embedded(self, count: int) -> None:
        self._done += count
        total = self._total or self._done
        self._send(self._base + self._done, self._base + total, f"embedded {self._done:,}/{total:,} chunks")


def index(
    service: RagService,
    source: str | None = None,
    path: str | None = None,
    name: str | None = None,
    force: bool = False,
    progress: ProgressFn | None = None,
) -> IndexOutput:
    from rag import indexer, runtime

    spec = _spec_to_index(service, source, path, name)
    config = service.config
    root = runtime.source_root(config, spec, sync=True)
    embedder = service.embedder()
    reporter = _ProgressReporter(progress) if progress else indexer.SilentReporter()
    # Its own connection: the run holds the source's advisory lock until it ends.
    with service.new_connection() as conn:
        summary = indexer.index_source(conn, spec, root, embedder, runtime.chunk_settings(config),
                                       force=force, reporter=reporter)
    return IndexOutput(
        source=spec.name, location=spec.location + (f" ({spec.branch})" if spec.branch else ""),
        run_id=summary.run_id, status=summary.status, seconds=round(summary.seconds, 3),
        files_found=summary.files_found, skipped=summary.skipped, new=summary.new, changed=summary.changed,
        unchanged=summary.unchanged, deleted=summary.deleted, chunks_added=summary.chunks_added,
        chunks_removed=summary.chunks_removed, chunks_total=summary.chunks_total,
        embedded=summary.embedded, reused=summary.reused, errors=len(summary.errors),
        file_errors=[FileError(path=e["path"], error=e["error"]) for e in summary.errors[:50]],
    )


def _spec_to_index(service: RagService, source: str | None, path: str | None, name: str | None) -> SourceSpec:
    from rag import runtime
    from rag.indexer import SourceSpec

    if bool(source) == bool(path):
        raise RagError("give source (a configured or already indexed source name) or path "
                       "(a folder to index) - one of them")
    if name and not path:
        raise RagError("name goes with path; an existing source is named by source")
    config = service.config
    if path:
        folder = Path(path).expanduser()
        if not folder.is_absolute():
            folder = Path.cwd() / folder
        folder = folder.resolve()
        if not folder.is_dir():
            raise RagError(f"path {path!r} is not a directory on the server's machine ({folder}); "
                           "give an absolute path to a folder")
        return SourceSpec(name or runtime.default_source_name(str(folder)), "local", str(folder))
    assert source is not None
    for configured in config.sources:
        if configured.name == source:
            return runtime.spec_from_config(configured)
    rows = service.with_db(lambda conn: conn.execute(
        "SELECT name, type, location, branch, config FROM rag.sources ORDER BY name").fetchall())
    for row in rows:
        if row["name"] == source:
            cfg = row["config"] or {}
            return SourceSpec(row["name"], row["type"], row["location"], row["branch"],
                              tuple(cfg.get("include") or ()), tuple(cfg.get("exclude") or ()))
    known = sorted({s.name for s in config.sources} | {r["name"] for r in rows})
    raise RagError(f"source {source!r} not found; known: {', '.join(known) or 'none'}; "
                   "to index a folder, pass path instead")


def remove_source(service: RagService, name: str) -> RemoveOutput:
    def work(conn: Connection) -> int:
        for run in conn.execute(ACTIVE_RUNS_SQL).fetchall():
            if run["source_name"] == name:
                raise RagError(f"source {name!r} is being indexed now (run {run['run_id'] or '?'}); "
                               "wait for the run to finish, then remove it")
        row = conn.execute("SELECT rag.remove_source(%s) AS n", (name,)).fetchone()
        assert row is not None
        return int(row["n"])

    return RemoveOutput(name=name, removed_chunks=service.with_db(work, retry=False))


# ---------------------------------------------------------------------------
# Errors


def describe_error(exc: BaseException) -> str:
    """A one-line message an agent can act on, for any error a tool may meet."""
    if isinstance(exc, RagError):
        return str(exc)
    import psycopg

    if isinstance(exc, _missing_schema_errors()):
        return "the database has no local-rag schema yet; run `rag init` (or `rag --config PATH init`)"
    if isinstance(exc, psycopg.OperationalError) and not isinstance(exc, psycopg.errors.LockNotAvailable):
        return f"database unavailable: {_first_line(exc)}; the next call reconnects"
    if isinstance(exc, psycopg.Error):
        message = exc.diag.message_primary or _first_line(exc)
        # SQL functions prefix their messages with their own name ("search: unknown source ...").
        head, sep, rest = message.partition(": ")
        return rest if sep and head.isidentifier() and head.islower() else message
    return f"internal error ({type(exc).__name__}: {_first_line(exc)}); the server log has the traceback"


def _missing_schema_errors() -> tuple[type[Exception], ...]:
    """What a query meets in a database where `rag init` has not run (no schema, no pgvector)."""
    import psycopg

    errors = psycopg.errors
    return (errors.UndefinedFunction, errors.InvalidSchemaName, errors.UndefinedTable, errors.UndefinedObject)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

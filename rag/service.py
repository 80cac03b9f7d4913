"""The application layer: everything a user can ask of local-rag, written once for the CLI and
the MCP server (both thin adapters over ``RagService``), each answer a model of ``rag.schemas``.

``RagService`` loads the config, chooses the database and loads the models on first use, so
a front end that only lists its commands or tools pays for none of it. One shared connection
serves the short calls under a lock (MCP tools run on worker threads); an index run opens its
own, since it holds its source's lock for minutes. A connection lost on the way is re-opened;
an embedded server stopped meanwhile is started again.

Every database failure leaves the service as a ``RagError`` (``rag.db.rag_error`` is the one
translation); the data logic itself is SQL's: sources, status, read-back, removal are calls
of ``rag.*`` functions, search is ``rag.search.Searcher``, indexing ``rag.indexer``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rag import __version__, sqlapi
from rag.config import ConfluencePages, LoadedConfig, RagConfig, SourceSpec, load_config
from rag.errors import (
    ConfigError,
    DatabaseError,
    ProviderError,
    RagError,
    UnexpectedDatabaseError,
    first_line,
)
from rag.hints import Hint, Interface
from rag.schemas import (
    ActiveRun,
    ConfigChange,
    ConfigInfo,
    ConfigOutput,
    Coordinates,
    Coverage,
    DatabaseInfo,
    DryRunOutput,
    EmbeddingProviderInfo,
    FileError,
    FileWarning,
    GcOutput,
    GitCommit,
    GraphCounts,
    IndexingInfo,
    IndexOutput,
    InitOutput,
    LastRun,
    LocalModel,
    ProviderInfo,
    Providers,
    RemoveOutput,
    Scores,
    SearchOutput,
    SearchResult,
    SourceInfo,
    SourcesOutput,
    SourceText,
    StatusOutput,
    SymbolsOutput,
    TraversalOutput,
    WatchedBy,
    WatchStatus,
)

if TYPE_CHECKING:
    from rag.ask import Answering, AskRequest
    from rag.contextual import ContextWriter
    from rag.db import Conn, DatabaseTarget
    from rag.indexer import Documents
    from rag.providers import Embedder
    from rag.providers.llm import OpenAIChatModel
    from rag.providers.rerankers import Reranker
    from rag.runs import Reporter
    from rag.search import Searcher, SearchRequest, SearchResponse
    from rag.sources.confluence import ConfluenceDocuments
    from rag.sources.scan import ScannedFile

log = logging.getLogger(__name__)

T = TypeVar("T")
SNIPPET_CHARS = 500
# The variables the hosted providers read their keys from when the config names none, and
# Confluence sources their credentials from (shown masked by rag config).
API_KEY_VARIABLES = ("JINA_API_KEY", "OPENAI_API_KEY", "CONFLUENCE_API_TOKEN", "CONFLUENCE_TOKEN")


class RagService:
    """Configuration, database connection and models, each made on first use and then kept."""

    def __init__(
        self,
        config_path: str | None = None,
        *,
        loaded: LoadedConfig | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        interface: Interface = "cli",
    ) -> None:
        self.config_path = config_path
        self.interface = interface  # whose words the hints in answers are in (rag.hints)
        self._loaded = loaded
        self._target: DatabaseTarget | None = None
        self._conn: Conn | None = None
        self._db_lock = threading.Lock()
        self._model_lock = threading.Lock()
        self._embedder = embedder
        self._reranker = reranker
        self._chat_model: OpenAIChatModel | None = None
        # What status() says of the sources this process keeps fresh (set by the one watching).
        self.watch_status: Callable[[], WatchStatus] | None = None
        self._schema_checked = False

    # -- configuration, database and models ---------------------------------

    @property
    def loaded(self) -> LoadedConfig:
        if self._loaded is None:
            self._loaded = load_config(self.config_path)
        return self._loaded

    @property
    def config(self) -> RagConfig:
        return self.loaded.config

    def target(self) -> DatabaseTarget:
        """The database to use; resolving it starts the embedded server when nothing else is set."""
        if self._target is None:
            from rag import db

            self._target = db.resolve_target(self.config.database)
        return self._target

    def known_target(self) -> DatabaseTarget | None:
        """The database chosen so far, without starting anything."""
        return self._target

    def new_connection(self) -> Conn:
        import psycopg

        from rag import db

        try:
            conn = db.connect(self.target())
        except (DatabaseError, psycopg.OperationalError):
            if self._target is None or self._target.origin != "embedded":
                raise
            # The embedded server was stopped since (rag db stop): start it again.
            log.info("the embedded PostgreSQL is not answering; starting it again")
            self._target = None  # resolving it again starts the server
            conn = db.connect(self.target())
        if not self._schema_checked:
            self._ensure_schema(conn)
        return conn

    def _ensure_schema(self, conn: Conn) -> None:
        """Zero setup: the first connection installs or upgrades the schema when it is missing or
        from another version (``rag init``'s install, under its lock, so first runs may race)."""
        from rag import db

        if not db.schema_is_current(conn):
            target = self.target()
            print(f"rag: installing the local-rag schema in {target.masked_url} (first use or upgrade)",
                  file=sys.stderr, flush=True)
            db.install_schema(target)
        db.apply_languages(conn, self.config.search.languages)
        self._schema_checked = True

    def with_db(self, work: Callable[[Conn], T], *, retry: bool = True) -> T:
        """Run ``work`` on the shared connection; a connection lost on the way is
        re-opened and, when ``retry`` (the work is safe to repeat), tried once more."""
        import psycopg

        with self._db_lock, database_errors():
            for attempt in (1, 2):
                if self._conn is None or self._conn.closed:
                    self._conn = self.new_connection()
                conn = self._conn
                try:
                    return work(conn)
                except psycopg.OperationalError as exc:
                    if not (conn.broken or conn.closed):
                        raise  # a statement's own failure (lock, timeout), not the connection's
                    reason = first_line(exc)
                    log.warning("database connection lost (%s); reconnecting", reason)
                    self._drop_connection()
                    if attempt == 2 or not retry:
                        raise DatabaseError(
                            f"the database connection was lost during the call ({reason}); "
                            "it is re-opened on the next call, so try again"
                        ) from None
            raise AssertionError("unreachable")

    def _disk_full(self) -> str | None:
        """When the embedded server went away because its disk is full, a line saying so."""
        if self._target is None or self._target.origin != "embedded":
            return None
        from rag import embedded

        return embedded.disk_full()

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
        with self._model_lock:
            if self._chat_model is not None:
                self._chat_model.close()
                self._chat_model = None

    def __enter__(self) -> RagService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embedder(self) -> Embedder:
        with self._model_lock:
            if self._embedder is None:
                from rag.providers import configured_embedder

                self._embedder = configured_embedder(self.config.embeddings)
            return self._embedder

    def reranker(self) -> Reranker:
        with self._model_lock:
            if self._reranker is None:
                from rag.providers.rerankers import configured_reranker

                self._reranker = configured_reranker(self.config.reranker)
            return self._reranker

    def chat_model(self) -> OpenAIChatModel:
        """The LLM of the config's ``llm`` section; ProviderError (one line) when none is configured."""
        with self._model_lock:
            if self._chat_model is None:
                from rag.config import configured_secrets
                from rag.providers.llm import build_chat_model

                self._chat_model = build_chat_model(self.config.llm, configured_secrets(self.config))
            return self._chat_model

    def warm_up(self) -> None:
        """Connect and load the local models ahead of the first call (run on a background thread)."""
        # A search per arm also compiles the PL/pgSQL functions of this session and reads the
        # indexes' top pages, which costs the first real search a few hundred milliseconds.
        try:
            self.with_db(lambda conn: sqlapi.warm_search(conn, None, None))
            if self.config.embeddings.provider == "local":
                from rag.providers import vector_literal

                embedder = self.embedder()
                literal = vector_literal(embedder.embed_query("warm up"))

                def vector_arm(conn: Conn) -> None:
                    if sqlapi.has_model(conn, embedder.model_id):
                        sqlapi.warm_search(conn, literal, embedder.model_id)

                self.with_db(vector_arm)
            if self.config.reranker.provider == "local":
                self.reranker().rerank("warm up", ["warm up"], 1)
            log.info("warm-up done: database connected, models loaded")
        except Exception as exc:  # the call that needs the piece reports the problem
            log.info("warm-up stopped: %s", first_line(exc))

    def config_info(self) -> ConfigOutput:
        """The resolved configuration and where it came from, secrets masked (``rag config``)."""
        from rag.config import masked_dump
        from rag.secrets import MASK

        loaded = self.loaded
        variables = dict.fromkeys((*API_KEY_VARIABLES, loaded.config.llm.api_key_env))
        present = {var: MASK for var in variables if os.environ.get(var)}
        return ConfigOutput(path=str(loaded.path) if loaded.path else None, origin=loaded.origin,
                            config=masked_dump(loaded.config), environment_api_keys=present)

    # -- the schema ---------------------------------------------------------

    def init(self) -> InitOutput:
        """Create or upgrade the schema, then prepare the local model if it is configured (``rag init``)."""
        from rag import db

        target = self.target()
        with database_errors():
            report = db.install_schema(target)
            with db.connect(target) as conn:
                db.apply_languages(conn, self.config.search.languages)
        try:
            local_model = self.prepare_local_model()
        except ProviderError as exc:
            raise ProviderError(f"schema {report.schema_version} is installed, but {exc}") from None
        return InitOutput(url=target.masked_url, origin=target.origin, schema_version=report.schema_version,
                          postgres_version=report.postgres_version, pgvector_version=report.pgvector_version,
                          migrations_applied=report.migrations_applied, local_model=local_model)

    def create_roles(self) -> list[str]:
        """``rag init --roles``: the roles rag_reader and rag_writer, their privileges and the
        row-level security of a shared server (``rag.create_roles()``); the roles made now."""
        return self.with_db(sqlapi.create_roles, retry=False)

    def prepare_local_model(self) -> LocalModel | None:
        """Load the local embedding model, exported to ONNX once, so later commands start fast.

        None, with nothing loaded, when the embedding provider is remote or none.
        """
        from rag.providers import LocalEmbedder

        if self.config.embeddings.provider != "local":
            return None
        embedder = self.embedder()
        assert isinstance(embedder, LocalEmbedder)
        file = embedder.prepare()
        return LocalModel(model=embedder.model_id, runtime=embedder.runtime, file=str(file) if file else None)

    # -- search -------------------------------------------------------------

    def search_response(self, request: SearchRequest) -> SearchResponse:
        """The hits of one search, with everything a front end may show of them."""
        if request.languages:
            request = dataclasses.replace(request, languages=known_languages(request.languages))
        return self.with_db(lambda conn: self.searcher(conn).search(request))

    def searcher(self, conn: Conn) -> Searcher:
        """A searcher over ``conn`` with this configuration's models and settings."""
        from rag.search import Searcher

        return Searcher(conn, self.config.search, self.embedder(), self.reranker(), self.interface)

    def search(self, request: SearchRequest) -> SearchOutput:
        response = self.search_response(request)
        return SearchOutput(query=request.query, results=[search_result(hit) for hit in response.hits],
                            warnings=response.warnings)

    def ask(self, request: AskRequest) -> Answering:
        """A question's sources, searched (and, as asked, rewritten and filtered by the LLM);
        the answer then streams from the result."""
        from rag.ask import Asker

        return Asker(self.chat_model(), self.search_response, self.config).prepare(request)

    # -- read-back ----------------------------------------------------------

    def read_source(
        self,
        chunk_id: int | None = None,
        source: str | None = None,
        path: str | None = None,
        start_line: int | None = None,
        end_line: int | None = None,
        header_path: str | None = None,
        context: int = 0,
    ) -> SourceText:
        """Stored text by chunk id, or by path with a line range or a markdown section."""
        if chunk_id is not None:
            if path or start_line or end_line or header_path:
                raise RagError("chunkId already names the lines to read; drop path, startLine, endLine and "
                               "headerPath (use context for lines around it)")
            text = self.with_db(lambda conn: _source_text(sqlapi.read_chunk(conn, chunk_id, context)))
            text.chunk_id = chunk_id
            return text
        if not path:
            raise RagError("say what to read: a chunkId from search results, or a path "
                           "(with source when several sources hold it)")
        if header_path and (start_line or end_line):
            raise RagError("give headerPath or startLine/endLine, not both")
        if start_line and end_line and end_line < start_line:
            raise RagError(f"endLine {end_line} is before startLine {start_line}")
        given = str(Path(path.strip()).expanduser()) if path.strip().startswith("~") else path
        return self.with_db(lambda conn: _source_text(sqlapi.read_file_range(
            conn, source, given, start_line, end_line, header_path, context)))

    # -- the catalog --------------------------------------------------------

    def list_sources(
        self,
        path_prefix: str | None = None,
        source_type: str | None = None,
        name_prefix: str | None = None,
        limit: int | None = None,
    ) -> SourcesOutput:
        """The indexed sources, filtered by SQL; ``limit`` None: all of them."""
        prefix = path_prefix
        if prefix and prefix.startswith("~"):
            prefix = str(Path(prefix).expanduser())
        rows = self.with_db(lambda conn: sqlapi.list_sources(
            conn, name_prefix or None, source_type, limit or None, prefix or None))
        return SourcesOutput(sources=[
            SourceInfo(id=r["id"], name=r["name"], type=r["type"], path=r["location"], branch=r["branch"],
                       file_count=r["files"], chunk_count=r["chunks"], last_indexed_at=r["last_indexed_at"],
                       indexing=r["indexing"], commit_sha=r["commit_sha"], **_pages(r))
            for r in rows
        ])

    def remove_source(self, name: str) -> RemoveOutput:
        """Delete a source with its files and chunks (refused by SQL while it is being indexed);
        a git source's clone goes too."""
        was_git = any(s.name == name and s.type == "git" for s in self.indexed_sources(name))
        removed = self.with_db(lambda conn: sqlapi.remove_source(conn, name), retry=False)
        clone = self.clone_dir(name) if was_git else None
        if clone is not None and clone.is_dir():
            import shutil

            shutil.rmtree(clone)
        return RemoveOutput(name=name, removed_chunks=removed,
                            deleted_clone=str(clone) if clone is not None else None)

    def gc(self) -> GcOutput:
        """Delete embeddings no chunk uses any more."""
        return GcOutput(pruned_embeddings=self.with_db(sqlapi.gc, retry=False))

    # -- code graph -----------------------------------------------------------

    def find_symbols(self, name: str, sources: list[str] | None = None, kinds: list[str] | None = None,
                     limit: int = 50) -> SymbolsOutput:
        """Definitions named ``name`` (a name, an fqn or ``path:fqn``), at most ``limit``, with the count."""
        from rag import graph

        self._graph_whole()
        return self.with_db(lambda conn: graph.find_symbols(conn, name, sources, kinds, limit))

    def traverse(self, symbol: str, relation: str, direction: str, depth: int = 1,
                 sources: list[str] | None = None, dynamic: bool = False) -> TraversalOutput:
        """Definitions ``depth`` edges of ``relation`` (calls, inherits, imports, contains) away from
        ``symbol``: ``direction`` in (callers, subclasses) or out (callees, superclasses);
        ``dynamic``: also calls on receivers of unknown type (every method of that name)."""
        from rag import graph

        self._graph_whole()
        return self.with_db(lambda conn: graph.traverse(conn, symbol, relation, direction, depth, sources,
                                                        dynamic=dynamic))

    def _graph_whole(self) -> None:
        """A database crash empties the code graph (its tables are unlogged): before a graph call
        answers, each source awaiting it has an index run (which reads only what changed and the
        code files the crash left without a graph; nothing is fetched), said on the log first."""
        for name, files in self.with_db(sqlapi.graph_awaiting_rebuild).items():
            spec = self.indexed_source(name)
            if spec is None:
                continue
            log.warning("rebuilding the code graph of %s (%d code files), which a database crash emptied",
                        name, files)
            try:
                self.index(spec, fetch=False)
            except RagError as exc:  # (the answer is then partial; status says which files wait)
                log.warning("the code graph of %s is not rebuilt: %s", name, first_line(exc))

    def status(self, *, strict: bool = False) -> StatusOutput:
        """Database, providers, embedding coverage and index runs. A database that cannot be used
        is described in ``database.error``, or raised when ``strict``."""
        loaded = self.loaded
        database = DatabaseInfo(connected=False, url=None, origin=None)
        coverage: list[Coverage] = []
        graph: list[GraphCounts] = []
        indexing = IndexingInfo(active=False, active_runs=[], last_indexed_at=None, last_run=None)
        git_sources: list[GitCommit] = []
        config_changes: list[ConfigChange] = []

        def work(conn: Conn) -> None:
            database.connected = True
            row = sqlapi.status(conn)
            database.schema_version = row["schema_version"]
            database.postgres_version = row["postgres_version"]
            database.pgvector_version = row["pgvector_version"]
            database.total_sources, database.total_files = row["sources"], row["files"]
            database.total_chunks, database.total_embeddings = row["chunks"], row["embeddings"]
            indexing.last_indexed_at = row["last_indexed_at"]
            coverage.extend(Coverage(model=r["model"], embedded_chunks=r["embedded_chunks"],
                                     total_chunks=r["total_chunks"])
                            for r in sqlapi.embedding_coverage(conn))
            for run in sqlapi.last_runs(conn, 1):
                counts = run["counts"] or {}
                indexing.last_run = LastRun(
                    source=run["source_name"], status=run["status"], started_at=run["started_at"],
                    finished_at=run["finished_at"], chunks_added=counts.get("chunksAdded", 0),
                    chunks_removed=counts.get("chunksRemoved", 0), errors=counts.get("errors", 0))
            indexing.active_runs = [
                ActiveRun(source=r["source_name"], run_id=r["run_id"], started_at=r["started_at"])
                for r in sqlapi.active_runs(conn)]
            indexing.active = bool(indexing.active_runs)
            indexing.watched = [
                WatchedBy(source=r["source_name"], pid=r["pid"], since=r["watching_since"],
                          last_sync_at=r["last_indexed_at"])
                for r in sqlapi.watched_sources(conn)]
            indexed = sqlapi.list_sources(conn)
            git_sources.extend(GitCommit(name=r["name"], branch=r["branch"], commit_sha=r["commit_sha"])
                               for r in indexed if r["type"] == "git")
            config_changes.extend(self._config_changes([catalog_source(r) for r in indexed]))
            awaiting = sqlapi.graph_awaiting_rebuild(conn)
            graph.extend(GraphCounts.model_validate({**r, "awaiting_rebuild": awaiting.get(r["source"], 0)})
                         for r in sqlapi.graph_status(conn))

        try:
            self.with_db(work)
        except RagError as exc:
            if strict:
                raise
            database.error = str(exc)
        target = self.known_target()
        if target is not None:
            database.url, database.origin = target.masked_url, target.origin
        return StatusOutput(
            version=__version__,
            database=database,
            providers=providers(self.config),
            embedding_coverage=coverage,
            indexing=indexing,
            config=ConfigInfo(path=str(loaded.path) if loaded.path else None, origin=loaded.origin),
            watch=self.watch_status() if self.watch_status is not None else None,
            git_sources=git_sources,
            graph=graph,
            config_changes=config_changes,
        )

    def _config_changes(self, indexed: list[SourceSpec]) -> list[ConfigChange]:
        """The configured sources whose index was made with another definition."""
        stored = {s.name: s for s in indexed}
        found = []
        for source in self.config.sources:
            spec = source.spec()
            if spec.name in stored:
                changes = definition_changes(stored[spec.name], spec)
                if changes:
                    found.append(ConfigChange(source=spec.name, changes=changes,
                                              apply=Hint("index", spec.name).render(self.interface)))
        return found

    # -- indexing -----------------------------------------------------------

    def configured_source(self, name: str) -> SourceSpec | None:
        for source in self.config.sources:
            if source.name == name:
                return source.spec()
        return None

    def known_source(self, name: str) -> SourceSpec | None:
        """A source from the config, else one indexed before (as the catalog recorded it)."""
        spec = self.configured_source(name)
        if spec is not None:
            return spec
        return self.indexed_source(name)

    def indexed_source(self, name: str) -> SourceSpec | None:
        """A source as its last run took it, None when it was never indexed."""
        return next((s for s in self.indexed_sources(name) if s.name == name), None)

    def indexed_sources(self, name_prefix: str | None = None) -> list[SourceSpec]:
        """The sources in the database, as their last run took them (branch, include, exclude)."""
        rows = self.with_db(lambda conn: sqlapi.list_sources(conn, name_prefix))
        return [catalog_source(r) for r in rows]

    def every_source(self) -> list[SourceSpec]:
        """``rag index --all``: the configured sources, then those only the database knows."""
        configured = [s.spec() for s in self.config.sources]
        names = {s.name for s in configured}
        return configured + [s for s in self.indexed_sources() if s.name not in names]

    def source_at(self, folder: Path) -> SourceSpec | None:
        """The local source (configured or indexed) whose root is ``folder``."""
        candidates = [s.spec() for s in self.config.sources] + self.indexed_sources()
        return next((s for s in candidates
                     if s.type == "local" and Path(s.location).expanduser().resolve() == folder), None)

    def remembered(self, spec: SourceSpec) -> SourceSpec:
        """An ad hoc source given again: what the command line leaves out (a git branch, include
        and exclude globs) is what the earlier run of the same source used."""
        earlier = next((s for s in self.indexed_sources(spec.name)
                        if (s.name, s.type, s.location) == (spec.name, spec.type, spec.location)), None)
        if earlier is None:
            return spec
        return SourceSpec(spec.name, spec.type, spec.location, spec.branch or earlier.branch,
                          spec.include or earlier.include, spec.exclude or earlier.exclude, spec.pages)

    def known_source_names(self) -> list[str]:
        indexed = self.with_db(sqlapi.list_sources)
        return sorted({s.name for s in self.config.sources} | {r["name"] for r in indexed})

    def root(self, spec: SourceSpec, *, sync: bool) -> Path:
        """The folder to scan: a local source's path, or a git source's clone (updated when ``sync``)."""
        return self._checkout(spec, sync=sync)[0]

    def _checkout(self, spec: SourceSpec, *, sync: bool) -> tuple[Path, str | None]:
        """``root``, with the commit a git clone was just brought to (None when not synced)."""
        if spec.type == "local":
            return Path(spec.location), None
        from rag.sources.git import sync_git_source

        dest = self.clone_dir(spec.name)
        if sync or not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            return dest, sync_git_source(spec.location, dest, branch=spec.branch)
        return dest, None

    def sources_to_watch(self, names: Collection[str] = ()) -> list[SourceSpec]:
        """The sources to keep fresh: those named, else every local one in the config or the
        database whose folder is on this machine, and the git and Confluence ones unless their
        polling is off; each as its index was made (a changed config is applied by
        ``rag index NAME``, which ``status`` names, never by a sync nobody asked for)."""
        if names:
            specs = []
            for name in names:
                spec = self.indexed_source(name) or self.configured_source(name)
                if spec is None:
                    known = ", ".join(self.known_source_names()) or "none"
                    raise RagError(f"source {name!r} not found (known: {known}); "
                                   "use --path DIR to watch a folder")
                specs.append(spec)
            return specs
        polled = {"git": self.config.indexing.git.poll_interval > 0,
                  "confluence": self.config.indexing.confluence.poll_interval > 0}
        found = {s.name: s.spec() for s in self.config.sources}
        for spec in self.indexed_sources():
            found[spec.name] = spec  # as indexed: a sync never applies a changed definition
        return [spec for _, spec in sorted(found.items())
                if polled.get(spec.type) or (spec.type == "local" and Path(spec.location).is_dir())]

    def git_commit(self, spec: SourceSpec) -> str:
        """Fetch a git source's branch into its clone; the commit it is at now."""
        from rag.sources.git import sync_git_source

        return sync_git_source(spec.location, self.root(spec, sync=False), branch=spec.branch)

    def confluence_documents(self, spec: SourceSpec) -> ConfluenceDocuments:
        """The pages of a Confluence source, through a client of its site (credentials from the
        environment, ``indexing.confluence.timeout`` per request)."""
        from rag.sources.confluence import ConfluenceClient, ConfluenceDocuments

        flavor = spec.pages.flavor if spec.pages is not None else None
        client = ConfluenceClient(spec.location, flavor, timeout=self.config.indexing.confluence.timeout)
        return ConfluenceDocuments(spec, client, self.config.indexing.max_file_size)

    def clone_dir(self, name: str) -> Path:
        """Where the git source ``name`` is cloned (indexing.git.cloneDir, else $RAG_HOME/repos)."""
        from rag.embedded import data_dir

        configured = self.config.indexing.git.clone_dir
        return (Path(configured).expanduser() if configured else data_dir() / "repos") / name

    def dry_run(self, spec: SourceSpec, *, verbose: bool = False) -> DryRunOutput:
        """What an index run of ``spec`` would read, changing nothing; a file the run would refuse
        as binary by its content is a file error here too. ``verbose``: every skipped path.
        With ``indexing.context: llm`` it counts the LLM requests the run would make: a
        Confluence source's new and changed pages are fetched (not stored) to count them."""
        from rag import indexer
        from rag.dispatcher import file_rejected_as_binary

        writer = self.context_writer()
        if spec.type == "confluence":
            documents = self.confluence_documents(spec)
            with closing_documents(documents):
                pages = documents.scan(None)
                plan = self._plan(spec, pages.files)
                todo = [f for f in pages.files if plan.get(f.path) in ("new", "changed")]
                calls = None if writer is None else self._contextual_calls(writer.model_id, documents, todo)
            out = DryRunOutput(source=spec.name, root=spec.location, files=[f.path for f in pages.files],
                               skipped={}, skipped_paths={} if verbose else None, file_errors=[],
                               contextual_calls=calls)
            return out.model_copy(update=_plan_counts(plan))
        root = self.root(spec, sync=False)
        scanned = indexer.scan(root, spec, self.config.chunk_settings())
        binary = {f.path for f in scanned.files if file_rejected_as_binary(f.abs_path)}
        # (what the run skips by content, as it would: a private key block in any text file)
        secret = sorted(f.path for f in scanned.files if f.path not in binary and _holds_secret(f.abs_path))
        skipped = {**scanned.skipped, "secret": sorted({*scanned.skipped.get("secret", []), *secret})}
        skipped = {reason: paths for reason, paths in skipped.items() if paths}
        kept = [f for f in scanned.files if f.path not in binary and f.path not in set(secret)]
        folders = {reason: n for reason, paths in skipped.items()
                   if (n := sum(p.endswith("/") for p in paths))}  # (folders are not walked)
        calls = None if writer is None else self._contextual_calls(
            writer.model_id, indexer.Folder(root, spec, self.config.chunk_settings()), kept)
        out = DryRunOutput(source=spec.name, root=str(root),
                           files=[f.path for f in kept],
                           skipped={reason: len(paths) for reason, paths in sorted(skipped.items())},
                           skipped_folders=dict(sorted(folders.items())),
                           skipped_paths=dict(sorted(skipped.items())) if verbose else None,
                           file_errors=[FileError(**problem) for problem in scanned.problems()]
                           + [FileError(path=path, error="binary file") for path in sorted(binary)],
                           contextual_calls=calls)
        return out.model_copy(update=_plan_counts(self._plan(spec, kept)))

    def _plan(self, spec: SourceSpec, files: list[ScannedFile]) -> dict[str, str]:
        """What an index run would do with each file (``rag.plan_files``: new, changed, moved,
        unchanged, deleted), by path, as the index of ``spec`` stands; all new when never indexed."""
        from rag.indexer import planned

        def work(conn: Conn) -> dict[str, str]:
            source = next((r for r in sqlapi.list_sources(conn, spec.name) if r["name"] == spec.name), None)
            if source is None:
                return dict.fromkeys((f.path for f in files), "new")
            rows = sqlapi.plan_files(conn, source["id"], [planned(f) for f in files], False, None)
            return {row["path"]: row["action"] for row in rows}

        return self.with_db(work)

    def cached_contextual_texts(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], str] | None:
        """The configured LLM's cached contextual texts for (document sha256, chunk content sha256)
        keys; None when ``indexing.context`` is not llm. Never asks the LLM."""
        from rag import contextual

        writer = self.context_writer()
        if writer is None:
            return None
        return self.with_db(lambda conn: contextual.cached_texts(conn, writer.model_id, keys))

    def _contextual_calls(self, model: str, documents: Documents, files: list[ScannedFile]) -> int:
        """How many requests an index run would make the LLM for these files' contextual
        texts: their distinct (document, chunk) pairs the cache lacks (each file read and chunked)."""
        from rag import contextual
        from rag.chunking.model import content_hash
        from rag.errors import FileUnreadableError

        settings = self.config.chunk_settings()
        keys: set[tuple[str, str]] = set()
        for scanned_file in files:
            try:
                data = documents.read(scanned_file)
            except FileUnreadableError:
                continue  # (the run records it as a file error, and asks nothing about it)
            document = hashlib.sha256(data).hexdigest()
            chunked = documents.chunk(data, scanned_file, settings)
            keys.update((document, content_hash(c.content)) for c in chunked.chunks)
        cached = self.with_db(lambda conn: contextual.cached_texts(conn, model, sorted(keys)))
        return len(keys) - len(cached)

    def context_writer(self) -> ContextWriter | None:
        """What writes contextual chunk text: the ``llm`` section's model with
        ``indexing.context: llm``, else None (chunks are indexed as they are)."""
        if self.config.indexing.context != "llm":
            return None
        from rag.contextual import ContextWriter

        if self.config.llm.provider == "none":
            raise ConfigError("indexing.context is llm but no LLM is configured (llm.provider: none); "
                              "set llm.provider, llm.baseUrl and llm.model, or indexing.context: none")
        return ContextWriter(self.chat_model(), self.config.llm.max_concurrency)

    def index(self, spec: SourceSpec, *, force: bool = False,
              reporter: Reporter | None = None, paths: Collection[str] | None = None,
              fetch: bool = True) -> IndexOutput:
        """One index run of ``spec``: only new and changed files are chunked, only new text embedded;
        with ``paths`` (relative files or folders, as a watcher saw them change) only those.
        A git source is fetched first unless ``fetch`` is false (a watcher fetched it)."""
        from rag import indexer

        documents = self.confluence_documents(spec) if spec.type == "confluence" else None
        root, commit = (Path(), None) if documents is not None else self._checkout(spec, sync=fetch)
        warnings = self._same_folder_warnings(spec)
        embedder = self.embedder()
        context_writer = self.context_writer()
        # Its own connection: the run holds the source's advisory lock until it ends.
        try:
            with database_errors(), self.new_connection() as conn, closing_documents(documents):
                summary = indexer.index_source(conn, spec, root, embedder, self.config.chunk_settings(),
                                               force=force, reporter=reporter, paths=paths,
                                               context_writer=context_writer,
                                               documents=documents,
                                               model_languages=self.model_languages())
                if commit is not None:
                    sqlapi.record_commit(conn, spec.name, commit)
                if embedder.dimensions:  # what rag.search scales the model's vector arm by
                    sqlapi.set_model_languages(conn, embedder.model_id, embedder.dimensions,
                                               self.model_languages())
        except UnexpectedDatabaseError:
            full = self._disk_full()
            if full is None:
                raise
            raise DatabaseError(full) from None
        return IndexOutput(
            source=spec.name, location=spec.location + (f" ({spec.branch})" if spec.branch else ""),
            run_id=summary.run_id, status=summary.status, seconds=round(summary.seconds, 3),
            files_found=summary.files_found, skipped=summary.skipped, new=summary.new,
            changed=summary.changed, unchanged=summary.unchanged, deleted=summary.deleted,
            chunks_added=summary.chunks_added, chunks_removed=summary.chunks_removed,
            chunks_total=summary.chunks_total, embedded=summary.embedded, reused=summary.reused,
            unreadable=summary.unreadable, contextualized=summary.contextualized,
            contextual_reused=summary.contextual_reused,
            errors=len(summary.errors), file_errors=[FileError(path=e["path"], error=e["error"])
                                                     for e in summary.errors],
            file_warnings=[FileWarning(**w) for w in summary.warnings],
            warnings=warnings + self._unreadable_warnings(summary.unreadable),
        )

    def model_languages(self) -> list[str] | None:
        """The languages the configured embedding model reads; None: any."""
        from rag.providers import model_languages

        return model_languages(self.config.embeddings)

    def _unreadable_warnings(self, unreadable: int) -> list[str]:
        """An index run's word on the texts its embedding model cannot read (left unembedded)."""
        if not unreadable:
            return []
        from rag.hints import with_hint
        from rag.progress import plural

        languages = self.model_languages() or []
        return [with_hint(f"{plural(unreadable, 'text')} of this source are in languages the embedding model "
                          f"{self.embedder().model_id} does not read (it reads only {', '.join(languages)}): "
                          "they were not embedded and are found by keywords only", Hint("multilingual"),
                          self.interface)]

    def _same_folder_warnings(self, spec: SourceSpec) -> list[str]:
        """Other sources over the folder ``spec`` indexes, or over a folder within it or around it:
        each doubles the index of the files they share (searches show them once)."""
        from rag.hints import with_hint

        if spec.type != "local":
            return []
        warnings = []
        for other in self.indexed_sources():
            if other.type != "local" or other.name == spec.name:
                continue
            copy = spec.name  # (the source to remove: the one over the subfolder)
            if other.location == spec.location:
                shared = f"the folder {spec.location} is also indexed as source {other.name!r}"
            elif _within(other.location, spec.location):
                shared = f"its subfolder {other.location} is also indexed as source {other.name!r}"
                copy = other.name
            elif _within(spec.location, other.location):
                shared = (f"the folder {spec.location} is also indexed within source {other.name!r} "
                          f"({other.location})")
            else:
                continue
            warnings.append(with_hint(f"{shared}; searches show its files once", Hint("remove", copy),
                                      self.interface))
        return warnings


def _within(folder: str, parent: str) -> bool:
    return folder.startswith(parent.rstrip("/") + "/")


def _plan_counts(plan: dict[str, str]) -> dict[str, int]:
    """How many files a plan (path -> action) has of each action, as DryRunOutput counts them."""
    actions = list(plan.values())
    return {action: actions.count(action) for action in ("new", "changed", "moved", "unchanged", "deleted")}


def _pages(row: dict[str, Any]) -> dict[str, Any]:
    """A Confluence source's spaces and CQL as ``rag.list_sources`` recorded them (none elsewhere)."""
    if row["type"] != "confluence":
        return {}
    pages = ConfluencePages.from_config(row["config"] or {})
    return {"spaces": list(pages.spaces), "cql": pages.cql}


def definition_changes(stored: SourceSpec, configured: SourceSpec) -> list[str]:
    """How ``configured`` differs from the definition ``stored`` in the catalog (a branch the
    config leaves out is whichever the clone has, not a change)."""
    changes = []
    for field in ("type", "location", "branch", "include", "exclude"):
        was, now = getattr(stored, field), getattr(configured, field)
        if field == "branch" and now is None:
            continue
        if was != now:
            show = (lambda v: repr(list(v))) if field in ("include", "exclude") else repr
            changes.append(f"{field}: {show(was)} in the index, {show(now)} in the config")
    return changes


def catalog_source(row: dict[str, Any]) -> SourceSpec:
    """A source as ``rag.list_sources`` recorded it."""
    cfg = row["config"] or {}
    pages = ConfluencePages.from_config(cfg) if row["type"] == "confluence" else None
    return SourceSpec(row["name"], row["type"], row["location"], row["branch"],
                      tuple(cfg.get("include") or ()), tuple(cfg.get("exclude") or ()), pages)


def _holds_secret(path: Path) -> bool:
    """Whether an index run would skip this file as ``secret`` by its content."""
    from rag.sources.ignore import holds_secret
    from rag.sources.reading import read_regular_file

    try:
        return holds_secret(read_regular_file(path))
    except OSError:
        return False  # (the run records it as a file error)


def folder_source(folder: Path, name: str | None = None, include: tuple[str, ...] = (),
                  exclude: tuple[str, ...] = ()) -> SourceSpec:
    """An ad hoc local source: ``folder`` (absolute), named after it unless ``name``."""
    return SourceSpec(name or default_source_name(str(folder)), "local", str(folder), None, include, exclude)


def git_source(url: str, branch: str | None = None, name: str | None = None, include: tuple[str, ...] = (),
               exclude: tuple[str, ...] = ()) -> SourceSpec:
    """An ad hoc git source, named after the repository unless ``name``."""
    return SourceSpec(name or default_source_name(url), "git", url, branch, include, exclude)


def confluence_source(base_url: str, spaces: tuple[str, ...], cql: str | None, name: str,
                      flavor: str | None = None) -> SourceSpec:
    """An ad hoc Confluence source: the pages of ``spaces`` and/or those ``cql`` finds."""
    if not (spaces or cql):
        raise RagError("say which pages to index: --space KEY (repeatable) and/or --cql QUERY")
    return SourceSpec(name, "confluence", base_url.rstrip("/"), pages=ConfluencePages(spaces, cql, flavor))


def default_source_name(location: str) -> str:
    """A source name from a folder path or git URL: its last part, made name-safe."""
    last = location.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", last).strip("-._")
    if not name:
        raise RagError(f"cannot derive a source name from {location!r}; pass --name")
    return name


def known_languages(given: list[str]) -> list[str]:
    """The languages ``given`` names (``ts``, ``Python``, ``golang``, ``c++``), or an error listing
    the valid names: a filter no chunk can match would silently find nothing."""
    from rag.languages.detection import language_name, language_names

    names = [language_name(g) for g in given]
    unknown = [g for g, name in zip(given, names, strict=True) if name is None]
    if unknown:
        raise RagError(f"unknown language {', '.join(map(repr, unknown))}; use a name such as python, "
                       "typescript, javascript, go, cpp, markdown, text, or a file extension (ts, py); "
                       f"all names: {', '.join(sorted(language_names()))}")
    return sorted({n for n in names if n is not None})


def search_result(hit: Any) -> SearchResult:
    """A ``rag.search.SearchHit`` as both front ends show it."""
    return SearchResult(
        chunk_id=hit.chunk_id, source_name=hit.source_name, path=hit.path, source_type=hit.source_type,
        language=hit.language, absolute_path=hit.absolute_path, url=hit.url, fqns=hit.fqns,
        header_paths=hit.header_paths, contextual_text=hit.contextual_text,
        start_line=hit.coordinates.get("startLine"), end_line=hit.coordinates.get("endLine"),
        coordinates=Coordinates.model_validate(hit.coordinates), snippet=hit.content[:SNIPPET_CHARS],
        scores=Scores(bm25=hit.bm25, vector=hit.vector, score=hit.score, fusion=hit.fusion, rerank=hit.rerank,
                      bm25_rank=hit.bm25_rank, vector_rank=hit.vector_rank),
    )


def providers(config: RagConfig) -> Providers:
    """Which embedding and rerank providers the config sets up, and whether each has what it needs."""
    from rag.providers import model_languages

    emb = config.embeddings
    if emb.provider == "local":
        embeddings = EmbeddingProviderInfo(provider="local", model=emb.local.model, configured=True,
                                           languages=model_languages(emb))
    elif emb.provider in ("jina", "openai"):
        remote = emb.jina if emb.provider == "jina" else emb.openai
        keyless = emb.provider == "openai" and remote.base_url != "https://api.openai.com/v1"
        embeddings = EmbeddingProviderInfo(provider=emb.provider, model=remote.model,
                                           configured=remote.api_key is not None or keyless)
    else:
        embeddings = EmbeddingProviderInfo(provider="none", model=None, configured=False)
    rr = config.reranker
    if rr.provider == "jina":
        from rag.providers.rerank_http import JINA_RERANK_URL

        own_url = (rr.jina.base_url or JINA_RERANK_URL).strip().rstrip("/") == JINA_RERANK_URL
        # Jina's own endpoint needs a key (the config's or JINA_API_KEY); another server may need none.
        has_key = rr.jina.api_key is not None or (own_url and bool(os.environ.get("JINA_API_KEY")))
        reranker = ProviderInfo(provider="jina", model=rr.jina.model, configured=has_key or not own_url)
    elif rr.provider == "local":
        reranker = ProviderInfo(provider="local", model=rr.local.model, configured=True)
    else:
        reranker = ProviderInfo(provider="none", model=None, configured=False)
    return Providers(embeddings=embeddings, reranker=reranker)


def _source_text(row: dict[str, Any]) -> SourceText:
    """A ``rag.excerpt`` row (read_chunk, read_file_range)."""
    return SourceText(source_name=row["source_name"], path=row["path"], source_type=row["source_type"],
                      language=row["language"], start_line=row["start_line"], end_line=row["end_line"],
                      total_lines=row["total_lines"], content=row["content"], truncated=row["truncated"],
                      metadata=row["metadata"], contextual_text=row["contextual_text"])


@contextmanager
def closing_documents(documents: ConfluenceDocuments | None) -> Iterator[ConfluenceDocuments | None]:
    """A Confluence source's documents, their HTTP client closed at the end (None: a folder's)."""
    try:
        yield documents
    finally:
        if documents is not None:
            documents.close()


@contextmanager
def database_errors() -> Iterator[None]:
    """psycopg errors leave as the package's own (``rag.db.rag_error``)."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        from rag import db

        raise db.rag_error(exc) from exc

"""The service's foundation: the configuration, the database connection and the models, each
made on first use and then kept, and the schema (``rag init``).

One shared connection serves the short calls under a lock (MCP tools run on worker threads); an
index run opens its own, since it holds its source's lock for minutes. A connection lost on the
way is re-opened; an embedded server stopped meanwhile is started again. Every database failure
leaves as a ``RagError`` (``database_errors``; ``rag.db.rag_error`` is the one translation).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Self, TypeVar

from rag import sqlapi
from rag.config import LoadedConfig, RagConfig, load_config
from rag.errors import DatabaseError, ProviderError, first_line
from rag.hints import Interface
from rag.schemas import ConfigOutput, InitOutput, LocalModel, WatchStatus

if TYPE_CHECKING:
    from rag.db import Conn, DatabaseTarget
    from rag.providers import Embedder
    from rag.providers.llm import OpenAIChatModel
    from rag.providers.rerankers import Reranker

log = logging.getLogger(__name__)

T = TypeVar("T")
# The variables the hosted providers read their keys from when the config names none, and
# Confluence sources their credentials from (shown masked by rag config).
API_KEY_VARIABLES = ("JINA_API_KEY", "OPENAI_API_KEY", "CONFLUENCE_API_TOKEN", "CONFLUENCE_TOKEN")


class ServiceCore:
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
            try:
                self._ensure_schema(conn)
            except BaseException:  # (a failed upgrade or re-posting: the connection is nobody's)
                conn.close()
                raise
        return conn

    def _ensure_schema(self, conn: Conn) -> None:
        """Zero setup: the first connection installs or upgrades the schema when it is missing or
        from another version (``rag init``'s install, under its lock, so first runs may race)."""
        from rag import db, lemmas

        if not db.schema_is_current(conn):
            target = self.target()
            print(f"rag: installing the local-rag schema in {target.masked_url} (first use or upgrade)",
                  file=sys.stderr, flush=True)
            db.install_schema(target)
        db.apply_languages(conn, self.config.search.languages)
        lemmas.apply(conn, self.config.search.lemmas, self.config.search.languages)
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

    def __enter__(self) -> Self:
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
        from rag import db, lemmas

        target = self.target()
        with database_errors():
            report = db.install_schema(target)
            with db.connect(target) as conn:
                db.apply_languages(conn, self.config.search.languages)
                lemmas.apply(conn, self.config.search.lemmas, self.config.search.languages)
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


@contextmanager
def database_errors() -> Iterator[None]:
    """psycopg errors leave as the package's own (``rag.db.rag_error``)."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        from rag import db

        raise db.rag_error(exc) from exc

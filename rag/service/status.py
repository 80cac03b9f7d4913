"""The service's ``rag status``: the database, the providers, embedding coverage, index runs,
the sources watched and the configured sources whose index was made with another definition."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rag import __version__, sqlapi
from rag.config import RagConfig
from rag.errors import RagError
from rag.schemas import (
    ActiveRun,
    ConfigChange,
    ConfigInfo,
    Coverage,
    DatabaseInfo,
    EmbeddingProviderInfo,
    GitCommit,
    GraphCounts,
    IndexingInfo,
    LastRun,
    ProviderInfo,
    Providers,
    StatusOutput,
    WatchedBy,
)
from rag.service.catalog import SourceCatalog
from rag.sources.registry import catalog_source

if TYPE_CHECKING:
    from rag.db import Conn


class Status(SourceCatalog):
    """What ``rag status`` shows."""

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
            specs = [catalog_source(r) for r in indexed]
            for spec, row in zip(specs, indexed, strict=True):
                commit = self.source(spec).describe(row["commit_sha"]).commit
                if commit is not None:
                    git_sources.append(commit)
            config_changes.extend(self._config_changes(specs))
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

"""The service's index runs: one run of a source (``rag.indexer`` over the documents its
``Source`` resolves to), what a run would do changing nothing (a dry run), and what the LLM
of contextual chunk text would be asked."""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from rag import sqlapi
from rag.config import SourceSpec
from rag.errors import ConfigError, DatabaseError, UnexpectedDatabaseError
from rag.hints import Hint
from rag.schemas import DryRunOutput, FileError, FileWarning, IndexOutput
from rag.service.catalog import SourceCatalog
from rag.service.core import database_errors

if TYPE_CHECKING:
    from rag.contextual import ContextWriter
    from rag.db import Conn
    from rag.runs import Reporter
    from rag.sources.base import Documents
    from rag.sources.scan import ScannedFile


class Indexing(SourceCatalog):
    """Index runs and dry runs of sources."""

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

        with self.source(spec).resolve(sync=fetch) as resolved:
            warnings = self._same_folder_warnings(spec)
            embedder = self.embedder()
            context_writer = self.context_writer()
            # Its own connection: the run holds the source's advisory lock until it ends.
            try:
                with database_errors(), self.new_connection() as conn:
                    summary = indexer.index_source(
                        conn, spec, Path(resolved.root), embedder, self.config.chunk_settings(), force=force,
                        reporter=reporter, paths=paths, context_writer=context_writer,
                        documents=resolved.documents, model_languages=self.model_languages())
                    if resolved.commit is not None:
                        sqlapi.record_commit(conn, spec.name, resolved.commit)
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

    def dry_run(self, spec: SourceSpec, *, verbose: bool = False) -> DryRunOutput:
        """What an index run of ``spec`` would read, changing nothing; a file the run would refuse
        as binary by its content is a file error here too. ``verbose``: every skipped path.
        With ``indexing.context: llm`` it counts the LLM requests the run would make: a remote
        source's new and changed documents are fetched (not stored) to count them."""
        writer = self.context_writer()
        source = self.source(spec)
        with source.resolve(sync=False) as resolved:
            preview = source.dry_run(resolved.documents)
            plan = self._plan(spec, preview.files)
            counted = ([f for f in preview.files if plan.get(f.path) in ("new", "changed")] if preview.fetched
                       else preview.files)
            calls = (None if writer is None
                     else self._contextual_calls(writer.model_id, resolved.documents, counted))
        skipped = preview.skipped
        folders = {reason: n for reason, paths in skipped.items()
                   if (n := sum(p.endswith("/") for p in paths))}  # (folders are not walked)
        out = DryRunOutput(source=spec.name, root=resolved.root, files=[f.path for f in preview.files],
                           skipped={reason: len(paths) for reason, paths in sorted(skipped.items())},
                           skipped_folders=dict(sorted(folders.items())),
                           skipped_paths=dict(sorted(skipped.items())) if verbose else None,
                           file_errors=[FileError(**problem) for problem in preview.problems],
                           contextual_calls=calls)
        return out.model_copy(update=_plan_counts(plan))

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


def _plan_counts(plan: dict[str, str]) -> dict[str, int]:
    """How many files a plan (path -> action) has of each action, as DryRunOutput counts them."""
    actions = list(plan.values())
    return {action: actions.count(action) for action in ("new", "changed", "moved", "unchanged", "deleted")}

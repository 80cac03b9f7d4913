"""One index run of one source: scan → ask SQL what changed → chunk → store → LLM context → embed the rest.

A source is read through its ``Documents`` (``rag.sources.base``): a folder's files
(``rag.sources.folder.Folder``, also a git clone's), or a remote source's documents (a
Confluence selection's pages, ``rag.sources.confluence.pages.ConfluenceDocuments``), each listed
with a path, a size and an mtime that change when the document does.

The decisions (which files changed, which content hashes lack a vector) and the
atomic replacement of a file's chunks are SQL functions (``sql/020_runs.sql``, ``022_storing.sql``);
this module moves data between them, the chunkers and the embedder. Files are
stored in batches (``rag.storing``), each one transaction, so a run killed at any point leaves
every file fully old or fully new and the next run finishes the job.
"""

import gc
import hashlib
import time
from collections.abc import Collection, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from rag import db, lemmas, sqlapi
from rag.config import ChunkSettings, SourceSpec
from rag.errors import FileGoneError, FileUnreadableError, RagError, SourceBusyError
from rag.providers import Embedder, vector_literal
from rag.runs import PhaseDeadline, Reporter, RunSummary, SilentReporter
from rag.secrets import mask_connection
from rag.sources.base import Documents
from rag.sources.folder import Folder
from rag.sources.ignore import holds_secret
from rag.sources.scan import ScannedFile, ScanResult
from rag.storing import Batched, Writers, file_json, meanwhile

if TYPE_CHECKING:
    from rag.contextual import ContextWriter

BATCH_FILES = 64  # files per replace_files transaction, at most
# ... and JSON bytes per batch: a batch is one jsonb value, which PostgreSQL
# caps at 256 MB (binary; small chunks' numbers make it up to ~1.5x the text).
BATCH_BYTES = 32 * 2**20
EMBED_BATCH = 512  # chunk texts fetched, embedded and stored per round
# A first index of at least this many files into an empty corpus loads postings
# without their key and builds it at the end (rag.begin_bulk_load); for fewer
# files the saving is under a second.
BULK_MIN_FILES = 1000


# Chunking allocates millions of short-lived objects (syntax nodes, chunks, code
# graph rows): with Python's default (a collection every 700 allocations) the
# cyclic collector took about a quarter of chunking Django (median of 3,
# interleaved: 10.0 -> 6.9 s without the graph, 17.2 -> 13.2 s with it).
_GC_THRESHOLD = 50_000


@contextmanager
def _fewer_collections() -> Iterator[None]:
    previous = gc.get_threshold()
    gc.set_threshold(_GC_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def index_source(
    conn: db.Conn,
    spec: SourceSpec,
    root: Path,
    embedder: Embedder,
    settings: ChunkSettings,
    *,
    force: bool = False,
    reporter: Reporter | None = None,
    paths: Collection[str] | None = None,
    context_writer: "ContextWriter | None" = None,
    documents: Documents | None = None,
    model_languages: list[str] | None = None,
) -> RunSummary:
    """Bring the stored index of ``spec`` (files under ``root``, or ``documents``) up to date;
    with ``paths`` (relative files or folders, e.g. those a watcher saw change) only what lies
    at or under them. ``context_writer``: the LLM that gives chunks contextual text; None strips
    any they have. ``model_languages``: what the embedder reads (None: any); texts in others are
    keyword-indexed only, and counted as ``unreadable``."""
    report = reporter or SilentReporter()
    started = time.monotonic()
    summary = RunSummary(spec.name)
    scope = sorted(set(paths)) if paths is not None else None
    source = documents if documents is not None else Folder(root, spec, settings)
    scanned = source.scan(scope)
    summary.files_found = len(scanned.files)
    summary.skipped = {reason: len(paths) for reason, paths in scanned.skipped.items()}
    summary.errors.extend(scanned.problems())
    report.scanned(summary.files_found, summary.skipped)

    source_id = sqlapi.upsert_source(conn, spec.name, spec.type, spec.location, spec.branch,
                                     {"include": list(spec.include), "exclude": list(spec.exclude),
                                      **(spec.pages.as_config() if spec.pages is not None else {})})
    db.ensure_keyword_data(conn)  # (begin_run would too, but could not VACUUM after)
    db.ensure_graph_data(conn)  # (begin_run would too, silently)
    try:
        summary.run_id = sqlapi.begin_run(conn, source_id)
    except psycopg.errors.LockNotAvailable as exc:
        raise SourceBusyError(str(db.rag_error(exc))) from None

    status = "failed"
    try:
        with _fewer_collections():
            _run(conn, source_id, source, scanned, scope, embedder, settings, force, summary, report,
                 context_writer, model_languages)
        status = "succeeded"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except Exception as exc:
        summary.errors.append({"error": run_failure(exc)})  # the record says why it failed
        raise
    finally:
        summary.status = status
        summary.seconds = time.monotonic() - started
        if not conn.closed:
            summary.chunks_total = sqlapi.finish_run(conn, summary.run_id, status, summary.counts(),
                                                     summary.errors + summary.warnings)
    return summary


def _run(
    conn: db.Conn,
    source_id: int,
    source: Documents,
    scanned: ScanResult,
    scope: list[str] | None,
    embedder: Embedder,
    settings: ChunkSettings,
    force: bool,
    summary: RunSummary,
    report: Reporter,
    context_writer: "ContextWriter | None",
    model_languages: list[str] | None,
) -> None:
    by_path = {f.path: f for f in scanned.files}
    plan = sqlapi.plan_files(conn, source_id, [planned(f) for f in scanned.files], force, scope)
    todo = [(by_path[row["path"]], row["action"], row["old_sha256"])
            for row in plan if row["action"] in ("new", "changed", "moved")]
    deleted = [row["path"] for row in plan if row["action"] == "deleted"]
    summary.unchanged = sum(1 for row in plan if row["action"] == "unchanged")
    report.planned(len(todo), summary.unchanged, len(deleted))
    source.prefetch([file for file, action, _ in todo if action != "moved"])

    bulk = len(todo) >= BULK_MIN_FILES and sqlapi.begin_bulk_load(conn)
    try:
        touched, withheld = _store_changed(conn, source_id, source, todo, settings, force, summary, report)
        deleted += withheld  # stored before it held a secret, or before it was gone
    except BaseException:
        if bulk and not conn.closed:
            sqlapi.end_bulk_load(conn)
        raise
    # The code graph's references. A first index resolves them on a second
    # connection (nothing to delete first there, normally) once the postings
    # key is built, a parallel sort on every core: meanwhile this connection's
    # work takes one (counting terms, the heads index, vacuum). Django's
    # references then add 0.0-0.25 s to the end of its first index, not 0.8.
    aside = bool(bulk) and not deleted
    with ExitStack() as resolving:
        if bulk:
            with conn.transaction():  # (the terms counted before the key shows)
                keyed = sqlapi.add_postings_key(conn)
                if aside:
                    resolving.enter_context(meanwhile(conn, lambda own: sqlapi.resolve_refs(own, source_id)))
                if keyed:
                    sqlapi.count_term_stats(conn)
            sqlapi.end_bulk_load(conn)  # (releases the load's lock)
        if touched:
            sqlapi.touch_files(conn, source_id, touched)
        if deleted:
            summary.deleted = len(deleted)
            summary.chunks_removed += sqlapi.delete_files(conn, source_id, deleted)
        if summary.chunks_added or summary.chunks_removed:
            sqlapi.ensure_heads_index(conn)
        if not aside:
            sqlapi.resolve_refs(conn, source_id)
        if bulk:
            # All postings are new: until autovacuum comes, every index-only read
            # of one would fetch its row too (Django's first searches: p95 36 -> 23 ms).
            db.vacuum_postings(conn)
    _contextualize(conn, source_id, context_writer, summary, report, settings.phase_timeout)
    if embedder.dimensions:
        _embed_missing(conn, source_id, embedder, summary, report, settings.phase_timeout, model_languages)
        sqlapi.refresh_file_vectors(conn, source_id, embedder.model_id)  # (rag.search's files arm)


def _store_changed(
    conn: db.Conn,
    source_id: int,
    source: Documents,
    todo: list[tuple[ScannedFile, str, str | None]],
    settings: ChunkSettings,
    force: bool,
    summary: RunSummary,
    report: Reporter,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Read, chunk and store the new and changed files; returns those whose content did not change,
    and the paths of stored files that now hold a secret (skipped as ``secret``) or that the
    source says are gone (a page the token may no longer read)."""
    touched: list[dict[str, Any]] = []
    withheld: list[str] = []
    batch: list[Batched] = []
    batch_bytes = chunk_count = files_chunked = 0
    deadline = PhaseDeadline("storing files", settings.phase_timeout)
    # With Russian lemmas on, the batch's words get theirs before it is stored (rag/lemmas.py).
    texts: list[str] | None = [] if sqlapi.keyword_lemmas(conn) else None

    def submit() -> None:
        if texts:
            lemmas.fill(conn, texts)
            texts.clear()
        writer.submit(source_id, batch)

    with Writers(conn) as writer:
        for scanned_file, action, old_sha in todo:
            deadline.check()
            if action == "moved":  # (its text is stored: only its place changed)
                read = _reread(conn, source_id, source, scanned_file)
            else:
                read = _read(source, scanned_file, summary, withheld if action == "changed" else None)
            if read is None:
                continue
            data, sha = read
            if holds_secret(data):
                summary.files_found -= 1
                summary.skipped["secret"] = summary.skipped.get("secret", 0) + 1
                if action == "changed":
                    withheld.append(scanned_file.path)
                continue
            if action == "changed" and sha == old_sha and not force:
                touched.append({"path": scanned_file.path, "size": scanned_file.size,
                                "mtimeNs": scanned_file.mtime_ns})
                summary.unchanged += 1
                continue
            if action == "new":
                summary.new += 1
            else:
                summary.changed += 1
            chunked = source.chunk(data, scanned_file, settings)
            if chunked.error:
                summary.errors.append({"path": scanned_file.path, "error": chunked.error})
            summary.warnings.extend({"path": scanned_file.path, "warning": w} for w in chunked.warnings)
            stored = file_json(scanned_file, sha, chunked, summary.errors)
            if batch and batch_bytes + len(stored) > BATCH_BYTES:
                submit()
                batch, batch_bytes = [], 0
            batch.append(stored)
            batch_bytes += len(stored)
            if texts is not None:
                texts.extend(c.indexed_text for c in chunked.chunks if lemmas.has_cyrillic(c.indexed_text))
            chunk_count += len(chunked.chunks)
            files_chunked += 1
            if len(batch) >= BATCH_FILES:
                submit()
                batch, batch_bytes = [], 0
        if batch:
            submit()
        report.chunked(chunk_count, files_chunked)
        summary.chunks_added, summary.chunks_removed = writer.totals()
    return touched, withheld


def planned(scanned_file: ScannedFile) -> dict[str, Any]:
    """A scanned file as ``rag.plan_files`` compares it."""
    planned: dict[str, Any] = {"path": scanned_file.path, "size": scanned_file.size,
                               "mtimeNs": scanned_file.mtime_ns}
    if scanned_file.place is not None:
        planned["ancestors"] = list(scanned_file.place)
    return planned


def _reread(conn: db.Conn, source_id: int, source: Documents,
            scanned_file: ScannedFile) -> tuple[bytes, str] | None:
    """A moved document from its stored text, not fetched again."""
    stored = sqlapi.stored_documents(conn, source_id, [scanned_file.path]).get(scanned_file.path)
    if stored is None or stored["content"] is None:
        return None  # (gone meanwhile: the next run sees it as new)
    data = source.reread(scanned_file, stored["content"], stored["metadata"] or {})
    return data, hashlib.sha256(data).hexdigest()


def _read(
    source: Documents, scanned_file: ScannedFile, summary: RunSummary, removed: list[str] | None = None
) -> tuple[bytes, str] | None:
    """The file's bytes and sha256; None when it cannot be read (its error recorded). A file the
    source says is gone (FileGoneError) joins ``removed`` when given (its stored version leaves)."""
    try:
        data = source.read(scanned_file)
    except FileGoneError as exc:
        if removed is None:
            summary.errors.append({"path": scanned_file.path, "error": str(exc)})
        else:
            summary.errors.append({"path": scanned_file.path, "error": f"{exc}; removed from the index"})
            removed.append(scanned_file.path)
        return None
    except FileUnreadableError as exc:
        summary.errors.append({"path": scanned_file.path, "error": str(exc)})
        return None
    return data, hashlib.sha256(data).hexdigest()


def _contextualize(
    conn: db.Conn,
    source_id: int,
    context_writer: "ContextWriter | None",
    summary: RunSummary,
    report: Reporter,
    phase_timeout: float | None,
) -> None:
    """The source's chunks given (or stripped of) contextual text before they are embedded, so
    that the vectors are of the text BM25 sees."""
    from rag.contextual import contextualize_source

    before = summary.contextualized + summary.contextual_reused
    contextualize_source(conn, source_id, context_writer, summary, report,
                         PhaseDeadline("contextual text", phase_timeout))
    if summary.contextualized + summary.contextual_reused > before:
        sqlapi.ensure_heads_index(conn)  # (the chunks' lengths changed)


def _embed_missing(
    conn: db.Conn,
    source_id: int,
    embedder: Embedder,
    summary: RunSummary,
    report: Reporter,
    phase_timeout: float | None = None,
    model_languages: list[str] | None = None,
) -> None:
    """Embed every indexed text (context, then content) of the source that has no vector for this model yet
    and is in a language it reads (``model_languages``; None: any).

    Identical text already embedded anywhere (another file, source or run) is
    reused; chunks left unembedded by a model switch or a killed run are caught up.
    Texts the model cannot read are left to the keyword arm (a vector of them would be
    noise, and embedding them costs most of a first index of a Russian wiki).
    """
    model = embedder.model_id
    missing = sqlapi.count_chunks_without_embedding(conn, source_id, model, model_languages)
    if model_languages is not None:
        summary.unreadable = sqlapi.count_chunks_without_embedding(conn, source_id, model) - missing
    stored_vectors = sqlapi.source_vector_count(conn, source_id) - summary.unreadable
    summary.reused = stored_vectors - missing
    if not missing:
        if stored_vectors:  # (a run killed before its end left them unindexed)
            sqlapi.ensure_vector_index(conn, embedder.model_id)
        return
    report.embedding_started(missing)
    deadline = PhaseDeadline("embedding", phase_timeout)
    while True:
        deadline.check()
        rows = sqlapi.chunks_without_embedding(conn, source_id, model, EMBED_BATCH, model_languages)
        if not rows:
            # Built once the first vectors are in (faster than growing it row by row).
            sqlapi.ensure_vector_index(conn, embedder.model_id)
            return
        vectors = embedder.embed_documents([r["content"] for r in rows], report.embedded)
        sqlapi.store_embeddings(conn, embedder.model_id, embedder.dimensions,
                                [r["content_hash"] for r in rows], list(_vector_literals(vectors)))
        summary.embedded += len(rows)


def _vector_literals(vectors: list[list[float]]) -> Iterator[str]:
    for vector in vectors:
        yield vector_literal(vector)


def run_failure(exc: BaseException) -> str:
    """One line saying why a run stopped, fit for the run record (secrets masked)."""
    if isinstance(exc, RagError):
        text = str(exc)
    elif isinstance(exc, psycopg.Error):
        text = str(db.rag_error(exc))
    else:
        text = f"{type(exc).__name__}: {exc}"
    return mask_connection(text.strip().splitlines()[0])


"""The ``rag`` command line: typer commands that parse their arguments, ask the service
(``rag.service.RagService``) and format its answers as text or ``--json``.

Errors of the package (``RagError``, database errors included) become one line on
stderr and exit code 1; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer import _click  # typer carries its own click
from typer.core import TyperGroup

from rag.errors import RagError, UnexpectedDatabaseError

# Commands import what they use when they run: `rag mcp` must answer its first
# request as fast as a bare MCP server, without the indexer, psycopg or rich.
if TYPE_CHECKING:
    from pydantic import BaseModel

    from rag.config import ChunkSettings, SourceSpec
    from rag.search import SearchHit, SearchRequest
    from rag.service import RagService


class _FriendlyErrors(TyperGroup):
    """Turns RagError and unexpected database errors into ``error: ...`` and exit 1
    unless ``--debug`` was given."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            state = ctx.obj if isinstance(ctx.obj, CliState) else None
            message = _one_line(exc)
            if message is None or (state is not None and state.debug):
                raise
            from rag.secrets import mask_connection

            typer.echo(f"error: {mask_connection(message)}", err=True)
            raise typer.Exit(1) from None


def _one_line(exc: Exception) -> str | None:
    """The message for an error we can explain, None for a bug (shown as a traceback)."""
    if "psycopg" in sys.modules:  # not imported: no database error can have happened
        import psycopg

        if isinstance(exc, psycopg.Error):
            from rag import db

            exc = db.rag_error(exc)
    if isinstance(exc, UnexpectedDatabaseError):
        return f"{exc} (run with --debug for the details)"
    if isinstance(exc, RagError):
        return str(exc)
    return None


@dataclass
class CliState:
    config_path: str | None
    debug: bool
    _service: RagService | None = None

    @property
    def service(self) -> RagService:
        """The one service of this command, made when the command first needs it."""
        if self._service is None:
            from rag.service import RagService

            self._service = RagService(self.config_path)
        return self._service

    def close(self) -> None:
        if self._service is not None:
            self._service.close()


app = typer.Typer(
    cls=_FriendlyErrors,
    no_args_is_help=True,
    add_completion=True,  # typer's --install-completion; `rag --help` measured no slower with it
    help="Semantic search over your code and docs, for you and your AI coding agents.",
)
db_app = typer.Typer(cls=_FriendlyErrors, no_args_is_help=True, help="The database connection.")
app.add_typer(db_app, name="db")


def _print_version(value: bool) -> None:
    if value:
        from rag import __version__

        typer.echo(f"local-rag {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    ctx: typer.Context,
    config: Annotated[
        str | None,
        typer.Option("--config", "-c", help="Config file (else RAG_CONFIG, ./rag.config.yaml, "
                     "~/.config/rag/config.yaml, built-in defaults)."),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", help="Print the version and exit.", is_eager=True, callback=_print_version)] = False,
) -> None:
    ctx.obj = CliState(config_path=config, debug=debug)
    ctx.call_on_close(ctx.obj.close)


def _state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    assert isinstance(obj, CliState)
    return obj


@app.command()
def init(ctx: typer.Context) -> None:
    """Create or upgrade the database schema and prepare the local model; safe to run again.

    Example: rag init
    """
    report = _state(ctx).service.init()
    typer.echo(f"database:   {report.url} ({report.origin})")
    typer.echo(f"schema:     {report.schema_version} ({report.migrations_applied} migrations applied now)")
    typer.echo(f"PostgreSQL: {report.postgres_version}")
    typer.echo(f"pgvector:   {report.pgvector_version}")
    local = report.local_model
    if local is not None:
        if local.runtime == "sentence-transformers":
            where = "sentence-transformers (torch)"
        else:
            where = f"ONNX Runtime, {local.file or 'kept in memory only: the models folder is not writable'}"
        typer.echo(f"model:      {local.model} on {where}")


@app.command()
def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (what the MCP status tool answers).")
                       ] = False,
) -> None:
    """Show the version, connection, schema version and what is indexed.

    Example: rag status --json
    """
    out = _state(ctx).service.status(strict=True)
    if as_json:
        _echo_json(out)
        return
    database, last = out.database, out.indexing.last_indexed_at
    typer.echo(f"local-rag:    {out.version}")
    typer.echo(f"database:     {database.url} ({database.origin})")
    typer.echo(f"schema:       {database.schema_version}")
    typer.echo(f"PostgreSQL:   {database.postgres_version}, pgvector {database.pgvector_version}")
    typer.echo(f"sources:      {database.total_sources}")
    typer.echo(f"files:        {database.total_files}")
    typer.echo(f"chunks:       {database.total_chunks}")
    typer.echo(f"embeddings:   {database.total_embeddings}")
    typer.echo(f"last indexed: {last.isoformat(timespec='seconds') if last else 'never'}")
    for git in out.git_sources:
        typer.echo(f"git {git.name}: {git.branch or 'default branch'} @{git.commit_sha or 'not indexed yet'}")
    for cov in out.embedding_coverage:
        typer.echo(f"embeddings {cov.model}: {cov.embedded_chunks:,}/{cov.total_chunks:,} chunks")
    for watched in out.indexing.watched:
        synced = watched.last_sync_at.isoformat(timespec="seconds") if watched.last_sync_at else "never"
        typer.echo(f"watched:      {watched.source} by pid {watched.pid}, last sync {synced}")
    run = out.indexing.last_run
    if run is not None:
        from rag.progress import plural

        typer.echo(
            f"last run:     {run.source} {run.status} at {run.started_at.isoformat(timespec='seconds')} "
            f"(+{run.chunks_added:,} -{run.chunks_removed:,} chunks, {plural(run.errors, 'error')})"
        )
    for g in out.graph:
        typer.echo(f"code graph {g.source}: {g.symbols:,} definitions, {g.refs:,} references "
                   f"({g.resolved:,} resolved, {g.ambiguous:,} ambiguous, {g.unresolved:,} unresolved"
                   + (f", {g.pending:,} pending" if g.pending else "")
                   + (f", {g.modules:,} whole-module imports" if g.modules else "")
                   + f"; {g.dynamic:,} calls through dynamic dispatch)")


@app.command("config")
def show_config(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print the resolved configuration and where it came from, secrets masked, and which
    provider API keys the environment holds.

    Example: rag --config ~/rag.yaml config
    """
    import yaml

    out = _state(ctx).service.config_info()
    if as_json:
        _echo_json(out)
        return
    where = f"{out.path} ({out.origin})" if out.path else out.origin
    typer.echo(f"# configuration from {where}")
    keys = ", ".join(f"{var}={value}" for var, value in out.environment_api_keys.items()) or "none"
    typer.echo(f"# API keys in the environment: {keys}")
    typer.echo(yaml.safe_dump(out.config, sort_keys=False, allow_unicode=True), nl=False)


@db_app.command("url")
def db_url(ctx: typer.Context) -> None:
    """Print the database connection URL (starts the embedded server if needed).

    Example: psql "$(rag db url)"
    """
    typer.echo(_state(ctx).service.target().url)


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded PostgreSQL server (it starts again on the next command).

    Example: rag db stop
    """
    from rag import embedded

    stopped = embedded.stop()
    typer.echo("embedded server stopped" if stopped else "embedded server was not running")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(ctx: typer.Context) -> None:
    """Open psql on the database; extra arguments go to psql.

    Example: rag psql -c "SELECT * FROM rag.status()"
    """
    from rag import embedded

    url = _state(ctx).service.target().url
    binary = str(embedded.psql_binary())
    sys.stdout.flush()
    os.execv(binary, [binary, url, *ctx.args])


@app.command()
def index(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(
        help="A source from the config or the database (default: the source rooted here).")] = None,
    all_sources: Annotated[bool, typer.Option(
        "--all", help="Every source in the config and in the database.")] = False,
    path: Annotated[str | None, typer.Option("--path", help="Index this folder ad hoc.")] = None,
    git: Annotated[str | None, typer.Option("--git", help="Index this git repository ad hoc.")] = None,
    branch: Annotated[str | None, typer.Option(
        "--branch", help="Git branch (with --git; default: the one used before, else the remote's).")] = None,
    source_name: Annotated[
        str | None, typer.Option("--name", help="Source name for --path/--git (default: folder/repo name).")
    ] = None,
    include: Annotated[list[str] | None, typer.Option(
        "--include", help="Only paths matching this glob (--path/--git; repeatable; kept with the source).")
    ] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Skip paths matching this glob (--path/--git; repeatable; kept with the source).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Re-chunk every file (embeddings are still reused).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be indexed; change nothing.")
    ] = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="With --dry-run: list every skipped path with its reason.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary per source.")] = False,
) -> None:
    """Index a source: only new and changed files are chunked, only new text is embedded.

    Example: rag index --path ~/code/my-project --name my-project --exclude "*.min.js"
    """
    from rag.progress import TerminalReporter

    service = _state(ctx).service
    specs = _sources_to_index(service, name, all_sources, path, git, branch, source_name,
                              tuple(include or ()), tuple(exclude or ()))
    if dry_run:
        for spec in specs:
            _dry_run(service, spec, as_json, verbose)
        return
    for spec in specs:
        with TerminalReporter(spec.name, quiet=as_json) as reporter:
            summary = service.index(spec, force=force, reporter=reporter)
            reporter.finished(summary)
        if as_json:
            _echo_json(summary)


def _sources_to_index(
    service: RagService, name: str | None, all_sources: bool, path: str | None, git: str | None,
    branch: str | None, source_name: str | None, include: tuple[str, ...], exclude: tuple[str, ...],
) -> list[SourceSpec]:
    from rag.service import folder_source, git_source

    chosen = [bool(name), all_sources, bool(path), bool(git)]
    if sum(chosen) > 1:
        raise RagError("say what to index: a source NAME, --all, --path PATH or --git URL (one of them)")
    if branch and not git:
        raise RagError("--branch goes with --git")
    if source_name and not (path or git):
        raise RagError("--name goes with --path or --git; a configured source is named by NAME")
    if (include or exclude) and not (path or git):
        raise RagError("--include/--exclude go with --path or --git; an indexed source keeps its own "
                       "(a configured one: set include/exclude in the config)")
    if name:
        spec = service.known_source(name)
        if spec is None:
            known = ", ".join(service.known_source_names()) or "none yet"
            raise RagError(f"no source {name!r} in the config or the database (known: {known}); "
                           "index a folder with --path or a repository with --git")
        return [spec]
    if all_sources:
        specs = service.every_source()
        if not specs:
            raise RagError("no sources yet, in the config or the database; use --path or --git")
        return specs
    if path:
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise RagError(f"--path {path}: not a directory")
        return [service.remembered(folder_source(folder, source_name, include, exclude))]
    if git:
        return [service.remembered(git_source(git, branch, source_name, include, exclude))]
    here = Path.cwd().resolve()
    spec = service.source_at(here)
    if spec is None:
        raise RagError(f"{here} is not the root of an indexed source; run `rag index --path .` to index it, "
                       "or give a source NAME, --all or --git URL")
    return [spec]


def _dry_run(service: RagService, spec: SourceSpec, as_json: bool, verbose: bool) -> None:
    from rag.progress import plural

    out = service.dry_run(spec, verbose=verbose)
    if as_json:
        _echo_json(out)
        return
    for path in out.files:
        typer.echo(path)
    typer.echo(f"# {spec.name}: {plural(len(out.files), 'file')} would be indexed from {out.root}", err=True)
    for reason, count in out.skipped.items():
        typer.echo(f"#   skipped ({reason}): {count:,}", err=True)
        for path in (out.skipped_paths or {}).get(reason, []):
            typer.echo(f"#     {path}", err=True)
    for problem in out.file_errors:
        typer.echo(f"#   error: {problem.path}: {problem.error}", err=True)


@app.command()
def watch(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(
        help="Sources to watch (default: every source in the config or the database).")] = None,
    path: Annotated[str | None, typer.Option("--path", help="Watch this folder ad hoc.")] = None,
    source_name: Annotated[str | None, typer.Option(
        "--name", help="Source name for --path (default: the folder name).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Keep sources fresh: re-index the files that change, as they change, until Ctrl-C.

    Prints one line per sync (app: +3 -1 chunks, 2 files, 0.4 s). Git sources are fetched
    every indexing.git.pollInterval seconds and synced when their branch moved.

    Example: rag watch --path ~/code/app --name app
    """
    import signal

    from rag.service import folder_source
    from rag.watcher import Watcher, describe

    service = _state(ctx).service
    if path and names:
        raise RagError("give source NAMEs or --path DIR, not both")
    if source_name and not path:
        raise RagError("--name goes with --path; a known source is named by NAME")
    if path:
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise RagError(f"--path {path}: not a directory")
        specs = [folder_source(folder, source_name)]
    else:
        specs = service.sources_to_watch(names or ())
        if not specs:
            raise RagError("no sources to watch; index one first (rag index --path DIR) "
                           "or use --path DIR")
    service.embedder()  # a model that cannot load fails now, not at the first edit

    def emit(event: Any) -> None:
        typer.echo(json.dumps(event.model_dump(mode="json", by_alias=True), ensure_ascii=False)
                   if as_json else describe(event))

    watcher = Watcher(service, specs, emit, git_poll_s=service.config.indexing.git.poll_interval)
    # SIGTERM stops it as Ctrl-C does: a sync under way ends between two per-file transactions.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    global _exit_at_once
    _exit_at_once = True


@app.command("list")
def list_sources(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (what MCP list_sources answers).")
                       ] = False,
) -> None:
    """List indexed sources with type, location, files, chunks and last index time.

    Example: rag list --json
    """
    out = _state(ctx).service.list_sources()
    if as_json:
        _echo_json(out)
        return
    sources = out.sources
    if not sources:
        typer.echo("no sources indexed yet; try: rag index --path . --name my-project")
        return
    typer.echo(f"{'NAME':<24} {'TYPE':<5} {'FILES':>7} {'CHUNKS':>8}  {'LAST INDEXED':<19}  LOCATION")
    for s in sources:
        last = s.last_indexed_at.strftime("%Y-%m-%d %H:%M:%S") if s.last_indexed_at else "never"
        where = s.path + (f" ({s.branch})" if s.branch else "")
        where += f" @{s.commit_sha[:12]}" if s.commit_sha else ""
        typer.echo(f"{s.name:<24} {s.type:<5} {s.file_count:>7,} {s.chunk_count:>8,}  {last:<19}  {where}")


@app.command()
def remove(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Source name.")]) -> None:
    """Remove a source with its files and chunks (embeddings stay for reuse; see rag gc).

    Example: rag remove my-project
    """
    out = _state(ctx).service.remove_source(name)
    typer.echo(f"removed {out.name}: {out.removed_chunks:,} chunks"
               + (f"; deleted its clone {out.deleted_clone}" if out.deleted_clone else ""))


@app.command()
def gc(ctx: typer.Context) -> None:
    """Delete embeddings that no chunk uses any more.

    Example: rag gc
    """
    typer.echo(f"pruned {_state(ctx).service.gc().pruned_embeddings:,} unused embeddings")


@app.command()
def chunk(
    ctx: typer.Context,
    paths: Annotated[
        list[Path], typer.Argument(help="Files or folders (folders are scanned as sources are).")
    ],
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per chunk, content included.")
    ] = False,
    max_tokens: Annotated[int | None, typer.Option(help="Default: indexing.chunkSize.maxTokens.")] = None,
    overlap: Annotated[int | None, typer.Option(help="Default: indexing.chunkSize.overlap.")] = None,
) -> None:
    """Show how files are cut into chunks: lines, type, fqn or headerPath, tokens.

    Example: rag chunk rag/db.py README.md --json
    """
    from rag.chunking.dispatcher import chunk_file
    from rag.chunking.passages import chunk_passages

    settings = _state(ctx).service.config.chunk_settings()
    limit = max_tokens or settings.max_tokens
    window_overlap = settings.overlap if overlap is None else overlap
    if limit < 1 or window_overlap < 0 or window_overlap >= limit:
        raise RagError("--max-tokens must be positive and --overlap between 0 and max-tokens - 1")
    failed = 0
    for file, shown in _files_to_chunk(paths, settings):
        result = chunk_file(file, shown, max_tokens=limit, overlap=window_overlap)
        for warning in result.warnings:
            typer.echo(f"warning: {shown}: {warning}", err=True)
        if result.error:
            failed += 1
            typer.echo(f"error: {shown}: {result.error}", err=True)
        for piece in result.chunks:
            if as_json:
                typer.echo(json.dumps({**piece.metadata, "context": piece.context,
                                       "contentHash": piece.content_hash, "tokens": piece.tokens,
                                       "passageEnds": [p.end for p in chunk_passages(piece)],
                                       "content": piece.content},
                                      ensure_ascii=False))
            else:
                typer.echo(_describe_chunk(piece.metadata, piece.tokens))
    if failed:  # every file was shown; the exit code says some could not be chunked
        raise typer.Exit(1)


def _files_to_chunk(paths: list[Path], settings: ChunkSettings) -> Iterator[tuple[Path, str]]:
    from rag import indexer
    from rag.service import folder_source

    for given in paths:
        if given.is_dir():
            spec = folder_source(given.resolve(), given.name or "folder")
            for scanned in indexer.scan(given, spec, settings).files:
                yield scanned.abs_path, str(given / scanned.path)
        elif given.is_file():
            yield given, str(given)
        else:
            raise RagError(f"{given}: no such file or folder")


def _describe_chunk(meta: dict[str, Any], tokens: int) -> str:
    lines = f"{meta['path']}:{meta.get('startLine', '?')}-{meta.get('endLine', '?')}"
    kind = meta.get("fragmentType") or meta.get("sourceType", "")
    name = meta.get("fqn") or meta.get("headerPath") or ""
    if "sections" in meta:  # merged sections: under the path they share
        name = f"{name} ({len(meta['sections'])} sections)".strip()
    if "pageStart" in meta:
        name = f"{name} pages {meta['pageStart']}-{meta['pageEnd']}".strip()
    return f"{lines:<40} {kind:<10} {tokens:>5} tok  {name}"


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="What to look for, in words or identifiers.")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=100,
                                              help="Results (default: search.finalTopK).")] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="Only this source (repeatable).")
    ] = None,
    source_type: Annotated[list[str] | None, typer.Option(
        "--type", help="code, markdown, text or pdf (repeatable).")] = None,
    language: Annotated[list[str] | None, typer.Option(
        "--lang", help="A language, alias or extension: python, py, ts, golang, c++ (repeatable).")] = None,
    path_prefix: Annotated[str | None, typer.Option("--path-prefix", help="e.g. src/api/")] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the reranker.")] = False,
    per_file: Annotated[int | None, typer.Option(
        "--per-file", min=1,
        help="Chunks of one file before the rest of it ranks lower (default: search.perFile).")] = None,
    include_tests: Annotated[bool, typer.Option(
        "--include-tests", help="Rank tests and fixtures at full weight (default: demoted).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    batch: Annotated[Path | None, typer.Option(
        "--batch", help='JSON lines {"id", "query"} in; one JSON line per query out.')] = None,
) -> None:
    """Hybrid search (BM25 + vectors, fused by RRF or by scores, optionally reranked).

    Example: rag search "where is the embedded server started" --type code -k 5
    """
    from rag.schemas import SOURCE_TYPES
    from rag.search import SearchRequest

    if (query is None) == (batch is None):
        raise RagError("give a QUERY or --batch FILE (one of them)")
    for kind in source_type or []:
        if kind not in SOURCE_TYPES:
            raise RagError(f"--type {kind}: choose one of {', '.join(SOURCE_TYPES)}")
    service = _state(ctx).service

    def request(text: str) -> SearchRequest:
        return SearchRequest(text, top_k, source or None, source_type or None, language or None,
                             path_prefix, rerank=not no_rerank, per_file=per_file,
                             include_tests=include_tests)

    if batch is not None:
        _search_batch(service, batch, request)
        return
    assert query is not None
    if as_json:
        out = service.search(request(query))
        _warn(out.warnings)
        _echo_json(out, exclude={"warnings"})
    else:
        response = service.search_response(request(query))
        _warn(response.warnings)
        _print_hits(query, response.hits)


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)




@app.command()
def read(
    ctx: typer.Context,
    what: Annotated[str, typer.Argument(
        help="A chunkId from search results, or a file path as search shows it.")],
    source: Annotated[str | None, typer.Option("--source", help="The source holding the path.")] = None,
    lines: Annotated[str | None, typer.Option(
        "--lines", help="START-END, START- or START (with a path).")] = None,
    section: Annotated[str | None, typer.Option(
        "--section", help='A markdown section, e.g. "# Guide > ## Install" (with a path).')] = None,
    context: Annotated[int, typer.Option("--context", "-C", min=0, max=500,
                                         help="Extra lines before and after.")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print indexed text: a chunk by its id, or lines or a section of an indexed file.

    Example: rag read src/api/auth.py --lines 40-80
    """
    service = _state(ctx).service
    if what.isdigit():
        if source or lines or section:
            raise RagError("a chunk id already names the lines to read; drop --source, --lines and --section")
        out = service.read_source(chunk_id=int(what), context=context)
    else:
        first, last = _line_range(lines)
        out = service.read_source(source=source, path=what, start_line=first, end_line=last,
                                  header_path=section, context=context)
    if as_json:
        _echo_json(out)
        return
    typer.echo(f"# {out.source_name}: {out.path}:{out.start_line}-{out.end_line} of {out.total_lines}"
               + (" (truncated)" if out.truncated else ""), err=True)
    typer.echo(out.content)


def _line_range(lines: str | None) -> tuple[int | None, int | None]:
    if lines is None:
        return None, None
    match = re.fullmatch(r"\s*(\d+)\s*(?:(-)\s*(\d*)\s*)?", lines)
    if not match or int(match[1]) < 1:
        raise RagError(f"--lines {lines}: give START-END, START- or START (line numbers from 1)")
    first = int(match[1])
    if match[2] is None:
        return first, first
    return first, int(match[3]) if match[3] else None


@app.command("eval")
def evaluate_retrieval(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSON lines of {id, query, relevant: [...]} (see README).")],
    mode: Annotated[list[str] | None, typer.Option(
        "--mode", help="bm25, vector, hybrid, hybrid+rerank (repeatable; default: all).")] = None,
    source: Annotated[str | None, typer.Option("--source", help="Search only this source.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Measure retrieval quality: Recall@1/5/10, MRR@10, nDCG@10 per search mode, side by side.

    Example: rag eval tests/eval/local_rag.jsonl --source local-rag
    """
    from rag import evaluation
    from rag.search import Searcher

    service = _state(ctx).service
    cases = evaluation.load_cases(file)
    modes = evaluation.check_modes(mode or evaluation.MODES)
    embedder, reranker = service.embedder(), service.reranker()
    result = service.with_db(lambda conn: evaluation.evaluate(
        Searcher(conn, service.config.search, embedder, reranker), cases, modes, source=source))
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
    else:
        typer.echo(evaluation.format_table(result.metrics, result.notes, title=str(file)))


def _search_batch(service: RagService, batch: Path, request: Callable[[str], SearchRequest]) -> None:
    try:
        lines = batch.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RagError(f"--batch {batch}: cannot read ({exc.strerror})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            query_id, text = item["id"], item["query"]
        except (ValueError, KeyError, TypeError):
            raise RagError(f'{batch}:{number}: expected a JSON object with "id" and "query"') from None
        try:
            results = service.search(request(str(text))).results
            out: dict[str, Any] = {"id": query_id, "results": [
                r.model_dump(mode="json", by_alias=True, exclude={"snippet"}) for r in results]}
        except RagError as exc:
            out = {"id": query_id, "error": str(exc).splitlines()[0]}
        typer.echo(json.dumps(out, ensure_ascii=False))


def _echo_json(model: BaseModel, **dump: Any) -> None:
    """One model as one line of JSON, formatted as every ``--json`` line is."""
    typer.echo(json.dumps(model.model_dump(mode="json", by_alias=True, **dump), ensure_ascii=False))


def _print_hits(query: str, hits: list[SearchHit]) -> None:
    from rich.console import Console
    from rich.text import Text

    if not hits:
        typer.echo("no results")
        return
    console = Console(highlight=False, soft_wrap=True)
    words = [w for w in re.split(r"\W+", query) if len(w) > 2]
    for number, hit in enumerate(hits, 1):
        where = f"{hit.path}:{hit.coordinates.get('startLine', '?')}-{hit.coordinates.get('endLine', '?')}"
        names = ", ".join(hit.fqns or ())  # a merged chunk: every name it holds
        label = names or hit.coordinates.get("fqn") or hit.coordinates.get("headerPath") or ""
        scores = [f"rrf {hit.rrf:.4f}"]
        if hit.bm25_rank:
            scores.append(f"bm25 #{hit.bm25_rank} {hit.bm25:.2f}")
        if hit.vector_rank:
            scores.append(f"vector #{hit.vector_rank} {hit.vector:.3f}")
        if hit.rerank is not None:
            scores.append(f"rerank {hit.rerank:.3f}")
        header = Text(f"{number}. ", style="bold")
        header.append(where, style="bold cyan")
        kind = ", ".join(k for k in (hit.source_name, hit.source_type, hit.language) if k)
        header.append(f"  {label}  [{kind}]  {', '.join(scores)}")
        console.print(header)
        if hit.abs_path:
            console.print(Text(f"   {hit.abs_path}", style="dim"))
        snippet = Text("\n".join("   " + line for line in hit.content.strip().splitlines()[:6]))
        snippet.highlight_words(words, style="bold yellow", case_sensitive=False)
        console.print(snippet)


@app.command()
def mcp(
    ctx: typer.Context,
    config: Annotated[str | None, typer.Option(
        "--config", "-c", help="Config file for the server (same as the global --config).")] = None,
) -> None:
    """Serve the MCP tools (search, read_source, the code graph, status, index, ...) on stdio.

    Claude Code and Cursor start it on demand; logs go to stderr (RAG_LOG_LEVEL).

    Example: claude mcp add local-rag -- rag mcp --config ~/.config/rag/config.yaml
    """
    from rag.mcp_server import serve  # lazy: the server must answer its first request fast

    serve(config or _state(ctx).config_path)


# Set by `rag watch` once everything is written: Python's own teardown with the local model
# loaded takes ~2 s (torch), and a watcher must stop within one.
_exit_at_once = False


def main() -> None:
    try:
        app()
    except SystemExit as done:
        if not _exit_at_once:
            raise
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(done.code if isinstance(done.code, int) else 0)


# `rag graph …` lives in its own module; imported last, as it uses this one's helpers.
from rag.cli_graph import graph_app  # noqa: E402

app.add_typer(graph_app, name="graph")

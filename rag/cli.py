"""The ``rag`` command line: typer commands over the SQL functions and the Python pipeline.

Errors of the package (``RagError``) become one line on stderr and exit code 1;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer import _click  # typer carries its own click
from typer.core import TyperGroup

from rag.config import LoadedConfig, load_config
from rag.errors import RagError

# Commands import what they use when they run: `rag mcp` must answer its first
# request as fast as a bare MCP server, without the indexer, psycopg or rich.
if TYPE_CHECKING:
    from rag import db, indexer
    from rag.config import RagConfig
    from rag.search import Searcher, SearchHit


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
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(1) from None


def _one_line(exc: Exception) -> str | None:
    """The message for an error we can explain, None for a bug (shown as a traceback)."""
    if isinstance(exc, RagError):
        return str(exc)
    import psycopg  # only now: `rag mcp` and `rag --help` start without it

    if isinstance(exc, psycopg.Error):
        reason = exc.diag.message_primary or str(exc).strip().splitlines()[0]
        if isinstance(exc, (psycopg.errors.InvalidSchemaName, psycopg.errors.UndefinedFunction,
                            psycopg.errors.UndefinedTable)):
            # A database never initialised, or initialised by an older version.
            return f"database: {reason}; run `rag init` to install or update the local-rag schema"
        return f"database: {reason} (run with --debug for the details)"
    return None


@dataclass
class CliState:
    config_path: str | None
    debug: bool
    _loaded: LoadedConfig | None = None
    _target: db.DatabaseTarget | None = None

    @property
    def loaded(self) -> LoadedConfig:
        if self._loaded is None:
            self._loaded = load_config(self.config_path)
        return self._loaded

    @property
    def target(self) -> db.DatabaseTarget:
        from rag import db

        if self._target is None:
            self._target = db.resolve_target(self.loaded.config.database)
        return self._target


app = typer.Typer(
    cls=_FriendlyErrors,
    no_args_is_help=True,
    add_completion=False,
    help="Semantic search over your code and docs, for you and your AI coding agents.",
)
db_app = typer.Typer(cls=_FriendlyErrors, no_args_is_help=True, help="The database connection.")
app.add_typer(db_app, name="db")


@app.callback()
def _main(
    ctx: typer.Context,
    config: Annotated[
        str | None,
        typer.Option("--config", "-c", help="Config file (else RAG_CONFIG, ./rag.config.yaml, "
                     "~/.config/rag/config.yaml, built-in defaults)."),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
) -> None:
    ctx.obj = CliState(config_path=config, debug=debug)


def _state(ctx: typer.Context) -> CliState:
    obj = ctx.find_root().obj
    assert isinstance(obj, CliState)
    return obj


@app.command()
def init(ctx: typer.Context) -> None:
    """Create or upgrade the database schema; safe to run again.

    Example: rag init
    """
    from rag import db

    state = _state(ctx)
    report = db.install_schema(state.target)
    typer.echo(f"database:   {state.target.masked_url} ({state.target.origin})")
    typer.echo(f"schema:     {report.schema_version} ({report.migrations_applied} migrations applied now)")
    typer.echo(f"PostgreSQL: {report.postgres_version}")
    typer.echo(f"pgvector:   {report.pgvector_version}")


@app.command()
def status(ctx: typer.Context) -> None:
    """Show the connection, schema version and what is indexed.

    Example: rag status
    """
    from rag import db

    state = _state(ctx)
    row = db.status(state.target)
    last = row["last_indexed_at"]
    typer.echo(f"database:     {state.target.masked_url} ({state.target.origin})")
    typer.echo(f"schema:       {row['schema_version']}")
    typer.echo(f"PostgreSQL:   {row['postgres_version']}, pgvector {row['pgvector_version']}")
    typer.echo(f"sources:      {row['sources']}")
    typer.echo(f"files:        {row['files']}")
    typer.echo(f"chunks:       {row['chunks']}")
    typer.echo(f"embeddings:   {row['embeddings']}")
    typer.echo(f"last indexed: {last.isoformat(timespec='seconds') if last else 'never'}")
    for cov in row["coverage"]:
        typer.echo(f"embeddings {cov['model']}: {cov['embedded_chunks']:,}/{cov['total_chunks']:,} chunks")
    for run in row["runs"][:1]:
        counts = run["counts"]
        typer.echo(
            f"last run:     {run['source_name']} {run['status']} at "
            f"{run['started_at'].isoformat(timespec='seconds')} "
            f"(+{counts.get('chunksAdded', 0):,} -{counts.get('chunksRemoved', 0):,} chunks, "
            f"{counts.get('errors', 0)} errors)"
        )


@app.command("config")
def show_config(ctx: typer.Context) -> None:
    """Print the resolved configuration and where it came from, secrets masked.

    Example: rag --config ~/rag.yaml config
    """
    import yaml

    from rag.config import masked_dump

    loaded = _state(ctx).loaded
    where = f"{loaded.path} ({loaded.origin})" if loaded.path else loaded.origin
    typer.echo(f"# configuration from {where}")
    typer.echo(yaml.safe_dump(masked_dump(loaded.config), sort_keys=False, allow_unicode=True), nl=False)


@db_app.command("url")
def db_url(ctx: typer.Context) -> None:
    """Print the database connection URL (starts the embedded server if needed).

    Example: psql "$(rag db url)"
    """
    typer.echo(_state(ctx).target.url)


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

    url = _state(ctx).target.url
    binary = str(embedded.psql_binary())
    sys.stdout.flush()
    os.execv(binary, [binary, url, *ctx.args])


@app.command()
def index(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="A source from the config.")] = None,
    all_sources: Annotated[bool, typer.Option("--all", help="Every source in the config.")] = False,
    path: Annotated[str | None, typer.Option("--path", help="Index this folder ad hoc.")] = None,
    git: Annotated[str | None, typer.Option("--git", help="Index this git repository ad hoc.")] = None,
    branch: Annotated[str | None, typer.Option("--branch", help="Git branch (with --git).")] = None,
    source_name: Annotated[
        str | None, typer.Option("--name", help="Source name for --path/--git (default: folder/repo name).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Re-chunk every file (embeddings are still reused).")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be indexed; change nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary per source.")] = False,
) -> None:
    """Index a source: only new and changed files are chunked, only new text is embedded.

    Example: rag index --path ~/code/my-project --name my-project
    """
    from rag import db, indexer, runtime
    from rag.progress import TerminalReporter

    state = _state(ctx)
    config = state.loaded.config
    specs = _sources_to_index(config, name, all_sources, path, git, branch, source_name)
    settings = runtime.chunk_settings(config)
    if dry_run:
        for spec in specs:
            _dry_run(spec, runtime.source_root(config, spec, sync=False), settings, as_json)
        return
    embedder = runtime.make_configured_embedder(config.embeddings)
    with db.connect(state.target) as conn:
        for spec in specs:
            root = runtime.source_root(config, spec, sync=True)
            with TerminalReporter(spec.name, quiet=as_json) as reporter:
                summary = indexer.index_source(
                    conn, spec, root, embedder, settings, force=force, reporter=reporter
                )
                reporter.finished(summary)
            if as_json:
                typer.echo(json.dumps({"source": spec.name, "runId": summary.run_id,
                                       "status": summary.status, "seconds": round(summary.seconds, 3),
                                       "chunksTotal": summary.chunks_total, **summary.counts(),
                                       "fileErrors": summary.errors}))


def _sources_to_index(
    config: RagConfig, name: str | None, all_sources: bool, path: str | None,
    git: str | None, branch: str | None, source_name: str | None,
) -> list[indexer.SourceSpec]:
    from rag import indexer, runtime

    chosen = [bool(name), all_sources, bool(path), bool(git)]
    if sum(chosen) != 1:
        raise RagError("say what to index: a source NAME, --all, --path PATH or --git URL (one of them)")
    if branch and not git:
        raise RagError("--branch goes with --git")
    if source_name and not (path or git):
        raise RagError("--name goes with --path or --git; a configured source is named by NAME")
    if name:
        return [runtime.configured_source(config, name)]
    if all_sources:
        if not config.sources:
            raise RagError("no sources in the config; add some under sources: or use --path/--git")
        return [runtime.spec_from_config(s) for s in config.sources]
    if path:
        folder = Path(path).expanduser().resolve()
        if not folder.is_dir():
            raise RagError(f"--path {path}: not a directory")
        folder_name = source_name or runtime.default_source_name(str(folder))
        return [indexer.SourceSpec(folder_name, "local", str(folder))]
    assert git is not None
    return [indexer.SourceSpec(source_name or runtime.default_source_name(git), "git", git, branch)]


def _dry_run(spec: indexer.SourceSpec, root: Path, settings: indexer.ChunkSettings, as_json: bool) -> None:
    from rag import indexer

    scanned = indexer.scan(root, spec, settings)
    skipped = {reason: len(paths) for reason, paths in sorted(scanned.skipped.items())}
    if as_json:
        typer.echo(json.dumps({"source": spec.name, "root": str(root),
                               "files": [f.path for f in scanned.files], "skipped": skipped}))
        return
    for f in scanned.files:
        typer.echo(f.path)
    typer.echo(f"# {spec.name}: {len(scanned.files):,} files would be indexed from {root}", err=True)
    for reason, count in skipped.items():
        typer.echo(f"#   skipped ({reason}): {count:,}", err=True)


@app.command("list")
def list_sources(ctx: typer.Context) -> None:
    """List indexed sources with type, location, files, chunks and last index time.

    Example: rag list
    """
    from rag import db

    with db.connect(_state(ctx).target) as conn:
        rows = conn.execute("SELECT * FROM rag.list_sources(max_rows => 100000)").fetchall()
    if not rows:
        typer.echo("no sources indexed yet; try: rag index --path . --name my-project")
        return
    typer.echo(f"{'NAME':<24} {'TYPE':<5} {'FILES':>7} {'CHUNKS':>8}  {'LAST INDEXED':<19}  LOCATION")
    for r in rows:
        last = r["last_indexed_at"].strftime("%Y-%m-%d %H:%M:%S") if r["last_indexed_at"] else "never"
        where = r["location"] + (f" ({r['branch']})" if r["branch"] else "")
        typer.echo(f"{r['name']:<24} {r['type']:<5} {r['files']:>7,} {r['chunks']:>8,}  {last:<19}  {where}")


@app.command()
def remove(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Source name.")]) -> None:
    """Remove a source with its files and chunks (embeddings stay for reuse; see rag gc).

    Example: rag remove my-project
    """
    import psycopg

    from rag import db

    with db.connect(_state(ctx).target) as conn:
        try:
            row = conn.execute("SELECT rag.remove_source(%s) AS n", (name,)).fetchone()
        except (psycopg.errors.NoDataFound, psycopg.errors.LockNotAvailable) as exc:
            raise RagError(exc.diag.message_primary or str(exc)) from None
    assert row is not None
    typer.echo(f"removed {name}: {row['n']:,} chunks")


@app.command()
def gc(ctx: typer.Context) -> None:
    """Delete embeddings that no chunk uses any more.

    Example: rag gc
    """
    from rag import db

    with db.connect(_state(ctx).target) as conn:
        row = conn.execute("SELECT rag.gc() AS n").fetchone()
    assert row is not None
    typer.echo(f"pruned {row['n']:,} unused embeddings")


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
    from rag import runtime
    from rag.chunking.dispatcher import chunk_file

    settings = runtime.chunk_settings(_state(ctx).loaded.config)
    limit = max_tokens or settings.max_tokens
    window_overlap = settings.overlap if overlap is None else overlap
    if limit < 1 or window_overlap < 0 or window_overlap >= limit:
        raise RagError("--max-tokens must be positive and --overlap between 0 and max-tokens - 1")
    for file, shown in _files_to_chunk(paths, settings):
        result = chunk_file(file, shown, max_tokens=limit, overlap=window_overlap)
        for warning in result.warnings:
            typer.echo(f"warning: {shown}: {warning}", err=True)
        if result.error:
            typer.echo(f"error: {shown}: {result.error}", err=True)
        for piece in result.chunks:
            if as_json:
                typer.echo(json.dumps({**piece.metadata, "contentHash": piece.content_hash,
                                       "tokens": piece.tokens, "content": piece.content},
                                      ensure_ascii=False))
            else:
                typer.echo(_describe_chunk(piece.metadata, piece.tokens))


def _files_to_chunk(paths: list[Path], settings: indexer.ChunkSettings) -> Iterator[tuple[Path, str]]:
    from rag import indexer

    for given in paths:
        if given.is_dir():
            spec = indexer.SourceSpec(given.name or "folder", "local", str(given.resolve()))
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
    language: Annotated[list[str] | None, typer.Option("--lang", help="e.g. python (repeatable).")] = None,
    path_prefix: Annotated[str | None, typer.Option("--path-prefix", help="e.g. src/api/")] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the reranker.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    batch: Annotated[Path | None, typer.Option(
        "--batch", help='JSON lines {"id", "query"} in; one JSON line per query out.')] = None,
) -> None:
    """Hybrid search (BM25 + vectors, fused by RRF, optionally reranked).

    Example: rag search "where is the embedded server started" --type code -k 5
    """
    import psycopg

    from rag import db, runtime
    from rag.search import Searcher, SearchRequest

    if (query is None) == (batch is None):
        raise RagError("give a QUERY or --batch FILE (one of them)")
    state = _state(ctx)
    config = state.loaded.config
    for kind in source_type or []:
        if kind not in SOURCE_TYPES:
            raise RagError(f"--type {kind}: choose one of {', '.join(SOURCE_TYPES)}")
    embedder = runtime.make_configured_embedder(config.embeddings)
    reranker = runtime.make_configured_reranker(config.reranker)
    with db.connect(state.target) as conn:
        searcher = Searcher(conn, config.search, embedder, reranker)

        def request(text: str) -> SearchRequest:
            return SearchRequest(text, top_k, source or None, source_type or None, language or None,
                                 path_prefix, rerank=not no_rerank)

        if batch is not None:
            _search_batch(searcher, batch, request)
            return
        assert query is not None
        try:
            response = searcher.search(request(query))
        except psycopg.errors.InvalidParameterValue as exc:
            raise RagError(exc.diag.message_primary or str(exc)) from None
    for warning in response.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if as_json:
        typer.echo(json.dumps({"query": query, "results": [_hit_json(h, snippet=True) for h in response.hits],
                               "totalCandidates": response.total_candidates}, ensure_ascii=False))
    else:
        _print_hits(query, response.hits)


SOURCE_TYPES = ("code", "markdown", "text", "pdf")


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
    from rag import db, evaluation, runtime
    from rag.search import Searcher

    state = _state(ctx)
    config = state.loaded.config
    cases = evaluation.load_cases(file)
    modes = evaluation.check_modes(mode or evaluation.MODES)
    with db.connect(state.target) as conn:
        searcher = Searcher(conn, config.search, runtime.make_configured_embedder(config.embeddings),
                            runtime.make_configured_reranker(config.reranker))
        result = evaluation.evaluate(searcher, cases, modes, source=source)
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
    else:
        typer.echo(evaluation.format_table(result.metrics, result.notes, title=str(file)))


def _search_batch(searcher: Searcher, batch: Path, request: Any) -> None:
    import psycopg

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
            response = searcher.search(request(str(text)))
            out = {"id": query_id, "results": [_hit_json(h, snippet=False) for h in response.hits]}
        except (RagError, psycopg.errors.InvalidParameterValue) as exc:
            out = {"id": query_id, "error": str(exc).splitlines()[0]}
        typer.echo(json.dumps(out, ensure_ascii=False))


def _hit_json(hit: SearchHit, *, snippet: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "chunkId": hit.chunk_id, "sourceName": hit.source_name, "path": hit.path,
        "sourceType": hit.source_type, "startLine": hit.coordinates.get("startLine"),
        "endLine": hit.coordinates.get("endLine"), "coordinates": hit.coordinates,
        "scores": {"bm25": hit.bm25, "vector": hit.vector, "rrf": hit.rrf, "rerank": hit.rerank},
    }
    if snippet:
        out["snippet"] = hit.content[:500]
    return out


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
        label = hit.coordinates.get("fqn") or hit.coordinates.get("headerPath") or ""
        scores = [f"rrf {hit.rrf:.4f}"]
        if hit.bm25_rank:
            scores.append(f"bm25 #{hit.bm25_rank} {hit.bm25:.2f}")
        if hit.vector_rank:
            scores.append(f"vector #{hit.vector_rank} {hit.vector:.3f}")
        if hit.rerank is not None:
            scores.append(f"rerank {hit.rerank:.3f}")
        header = Text(f"{number}. ", style="bold")
        header.append(where, style="bold cyan")
        header.append(f"  {label}  [{hit.source_name}, {hit.source_type}]  {', '.join(scores)}")
        console.print(header)
        snippet = Text("\n".join("   " + line for line in hit.content.strip().splitlines()[:6]))
        snippet.highlight_words(words, style="bold yellow", case_sensitive=False)
        console.print(snippet)


@app.command()
def mcp(
    ctx: typer.Context,
    config: Annotated[str | None, typer.Option(
        "--config", "-c", help="Config file for the server (same as the global --config).")] = None,
) -> None:
    """Serve the MCP tools (search, read_source, list_sources, status, index, remove_source) on stdio.

    Claude Code and Cursor start it on demand; logs go to stderr (RAG_LOG_LEVEL).

    Example: claude mcp add local-rag -- rag mcp --config ~/.config/rag/config.yaml
    """
    from rag.mcp_server import serve  # lazy: the server must answer its first request fast

    serve(config or _state(ctx).config_path)


def main() -> None:
    app()


# `rag graph …` lives in its own module; imported last, as it uses this one's helpers.
from rag.cli_graph import graph_app  # noqa: E402

app.add_typer(graph_app, name="graph")

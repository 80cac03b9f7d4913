"""The install and its database: ``rag init``, ``rag status``, ``rag config``, ``rag psql``,
``rag db url`` and ``rag db stop``."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from rag.cli.root import FriendlyErrors, app, echo_json, state

db_app = typer.Typer(cls=FriendlyErrors, no_args_is_help=True, help="The database connection.")
app.add_typer(db_app, name="db")


@app.command()
def init(
    ctx: typer.Context,
    roles: Annotated[bool, typer.Option(
        "--roles", help="Also make the roles rag_reader / rag_writer and the row-level security that "
                        "shows a reader only its granted sources (rag serve; needs CREATEROLE).")] = False,
) -> None:
    """Create or upgrade the database schema and prepare the local model; safe to run again.

    Example: rag init --roles
    """
    service = state(ctx).service
    report = service.init()
    if roles:
        made = service.create_roles()
        typer.echo(f"roles:      rag_reader, rag_writer ({'made now' if made else 'already there'}; "
                   "privileges and row-level security applied)")
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
    out = state(ctx).service.status(strict=True)
    if as_json:
        echo_json(out)
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
    model = out.providers.embeddings
    if model.provider != "none":
        reads = ", ".join(model.languages) if model.languages is not None else "any language"
        typer.echo(f"model:        {model.provider} {model.model} (reads {reads})")
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
            f"last run:     {run.source} {run.status} at "
            f"{(run.finished_at or run.started_at).isoformat(timespec='seconds')} "
            f"(+{run.chunks_added:,} -{run.chunks_removed:,} chunks, {plural(run.errors, 'error')})"
        )
    for change in out.config_changes:
        typer.echo(f"config:       source {change.source} differs from its index "
                   f"({'; '.join(change.changes)}); {change.apply}")
    for g in out.graph:
        if not (g.symbols or g.refs or g.awaiting_rebuild):
            continue  # (documents only: no code graph to speak of)
        typer.echo(f"code graph {g.source}: {g.symbols:,} definitions, {g.refs:,} references "
                   f"({g.resolved:,} resolved, {g.ambiguous:,} ambiguous, {g.unresolved:,} unresolved"
                   + (f", {g.pending:,} pending" if g.pending else "")
                   + (f", {g.modules:,} whole-module imports" if g.modules else "")
                   + f"; {g.dynamic:,} calls through dynamic dispatch)"
                   + (f"; being rebuilt after a database crash: {g.awaiting_rebuild:,} code files wait "
                      "(the next graph call or index run reads them)" if g.awaiting_rebuild else ""))


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

    out = state(ctx).service.config_info()
    if as_json:
        echo_json(out)
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
    typer.echo(state(ctx).service.target().url)


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

    url = state(ctx).service.target().url
    binary = str(embedded.psql_binary())
    sys.stdout.flush()
    os.execv(binary, [binary, url, *ctx.args])

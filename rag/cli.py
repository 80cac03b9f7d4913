"""The ``rag`` command line: typer commands over the SQL functions and the Python pipeline.

Errors of the package (``RagError``) become one line on stderr and exit code 1;
``--debug`` shows the traceback instead.
"""

import os
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer
import yaml
from typer import _click  # typer carries its own click
from typer.core import TyperGroup

from rag import db, embedded
from rag.config import LoadedConfig, load_config, masked_dump
from rag.errors import RagError


class _FriendlyErrors(TyperGroup):
    """Turns RagError into ``error: ...`` and exit 1 unless ``--debug`` was given."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RagError as exc:
            state = ctx.obj if isinstance(ctx.obj, CliState) else None
            if state is not None and state.debug:
                raise
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from None


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


@app.command("config")
def show_config(ctx: typer.Context) -> None:
    """Print the resolved configuration and where it came from, secrets masked.

    Example: rag --config ~/rag.yaml config
    """
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
    stopped = embedded.stop()
    typer.echo("embedded server stopped" if stopped else "embedded server was not running")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(ctx: typer.Context) -> None:
    """Open psql on the database; extra arguments go to psql.

    Example: rag psql -c "SELECT * FROM rag.status()"
    """
    url = _state(ctx).target.url
    binary = str(embedded.psql_binary())
    sys.stdout.flush()
    os.execv(binary, [binary, url, *ctx.args])


def main() -> None:
    app()

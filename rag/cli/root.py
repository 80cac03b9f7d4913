"""The root of the ``rag`` command line: the typer ``app`` with its global options, the state
each command reaches through ``state(ctx)`` (the config path and one ``RagService``, made when
first needed), error handling, and ``main``. The modules beside this one add the commands.

Errors of the package (``RagError``, database errors included) become one line on
stderr and exit code 1; ``--debug`` shows the traceback instead. Ctrl-C is one line and
exit code 130.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer import _click  # typer carries its own click
from typer.core import TyperGroup, TyperOption

from rag.cli.failures import error_line, one_line

# Commands import what they use when they run: `rag mcp` must answer its first
# request as fast as a bare MCP server, without the indexer, psycopg or rich.
if TYPE_CHECKING:
    from pydantic import BaseModel

    from rag.service import RagService


def _flag_display_type(self: TyperOption, ctx: _click.Context) -> str | None:
    return None if self.is_flag else _option_display_type(self, ctx)


# typer 0.29's help labels every flag (--debug, --json) <bool>, as if it took a value.
_option_display_type = TyperOption.display_type_rich
TyperOption.display_type_rich = _flag_display_type  # type: ignore[method-assign]


class FriendlyErrors(TyperGroup):
    """Turns RagError and unexpected database errors into ``error: ...`` and exit 1
    unless ``--debug`` was given."""

    def invoke(self, ctx: _click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C: one line, the shell's exit code for SIGINT
            typer.echo("interrupted", err=True)
            raise typer.Exit(130) from None
        except Exception as exc:
            cli_state = ctx.obj if isinstance(ctx.obj, CliState) else None
            message = one_line(exc)
            if message is None or (cli_state is not None and cli_state.debug):
                raise
            typer.echo(error_line(message), err=True)
            raise typer.Exit(1) from None


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
    cls=FriendlyErrors,
    no_args_is_help=True,
    add_completion=True,  # typer's --install-completion; `rag --help` measured no slower with it
    help="Semantic search over your code and docs, for you and your AI coding agents.",
)


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


def state(ctx: typer.Context) -> CliState:
    """The state of the running command (any subcommand's context reaches the root's)."""
    obj = ctx.find_root().obj
    assert isinstance(obj, CliState)
    return obj


def echo_json(model: BaseModel, **dump: Any) -> None:
    """One model as one line of JSON, formatted as every ``--json`` line is."""
    typer.echo(json.dumps(model.model_dump(mode="json", by_alias=True, **dump), ensure_ascii=False))


# Set by `rag watch` once everything is written: Python's own teardown with the local model
# loaded takes ~2 s (torch), and a watcher must stop within one.
_exit_at_once = False


def exit_at_once() -> None:
    """End the process as soon as the command returns, skipping Python's teardown."""
    global _exit_at_once
    _exit_at_once = True


def main() -> None:
    try:
        app()
    except SystemExit as done:
        if not _exit_at_once:
            raise
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(done.code if isinstance(done.code, int) else 0)

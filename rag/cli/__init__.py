"""The ``rag`` command line: typer commands that parse their arguments, ask the service
(``rag.service.RagService``) and format its answers as text or ``--json``.

``rag.cli.root`` holds the typer ``app``, the global options, the per-command state and the
error handling; each module beside it adds its commands to that app when imported, and is
imported (by the first use of ``rag.cli.app``) in the order ``rag --help`` lists them.
Commands import what they use when they run: ``rag mcp`` must answer its first request as fast
as a bare MCP server. So ``main`` serves a plain ``rag mcp`` (alone, or with one ``--config``
before or after ``mcp``) without typer: building the typer app of every command cost ~50 ms of
its start-up's CPU (#55, decision 032). Any other form (``--help``, ``--debug``, ``--config=``)
goes through typer's ``mcp`` command, which serves the same way.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

__all__ = ["app", "main"]

_CONFIG_OPTIONS = ("--config", "-c")


def plain_mcp(args: list[str]) -> list[str] | None:
    """``rag mcp``'s arguments as ``python -m rag.mcp_server`` takes them when ``args`` are one of
    ``mcp``, ``mcp --config PATH``, ``--config PATH mcp`` (or ``-c``); None for anything else."""
    match args:
        case ["mcp"]:
            return []
        case ["mcp", option, path] | [option, path, "mcp"] if (
                option in _CONFIG_OPTIONS and not path.startswith("-")):
            return ["--config", path]
    return None


def _app() -> typer.Typer:
    # isort: off
    from rag.cli import admin, index, watch, sources, chunk, search, ask, read, evaluate, mcp, serve, graph  # noqa: F401
    # isort: on
    from rag.cli.root import app

    return app


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer app with every command (tests, docs/gen_cli.py)
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The ``rag`` script."""
    served = plain_mcp(sys.argv[1:])
    if served is None:
        _app()
        from rag.cli.root import main as typer_main

        typer_main()
        return
    from rag.mcp_server import main as serve

    serve(served)

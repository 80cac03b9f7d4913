"""The ``rag`` command line: typer commands that parse their arguments, ask the service
(``rag.service.RagService``) and format its answers as text or ``--json``.

``rag.cli.root`` holds the typer ``app``, the global options, the per-command state and the
error handling; each module beside it adds its commands to that app when imported, and is
imported here in the order ``rag --help`` lists them. Commands import what they use when they
run: ``rag mcp`` must answer its first request as fast as a bare MCP server.
"""

# isort: off
from rag.cli import admin, index, watch, sources, chunk, search, ask, read, evaluate, mcp, serve, graph  # noqa: F401
# isort: on
from rag.cli.root import app, main

__all__ = ["app", "main"]

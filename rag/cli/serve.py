"""``rag serve``: the team server of ``rag.serve`` (MCP over HTTP, the JSON API, the search page)."""

from __future__ import annotations

from typing import Annotated

import typer

from rag.cli.root import app, state


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; other than loopback only with tokens configured.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8765,
) -> None:
    """Serve search to a team over HTTP: MCP at /mcp, a JSON API at /v1, a search page at /.

    Tokens come from RAG_SERVE_TOKENS or the file serve.tokensFile names (never the command
    line); without any the server answers on loopback only. SIGTERM lets requests in flight
    finish. Logs, one line per request, go to stderr (RAG_LOG_LEVEL).

    Example: RAG_SERVE_TOKENS='[{"name": "ci", "token": "…", "scope": "read"}]' rag serve --host 0.0.0.0
    """
    from rag.serve import serve as run

    run(state(ctx).config_path, host, port)

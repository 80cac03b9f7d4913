"""``rag mcp``: the MCP server of ``rag.mcp_server`` on stdio."""

from __future__ import annotations

from typing import Annotated

import typer

from rag.cli.root import app, state


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

    serve(config or state(ctx).config_path)

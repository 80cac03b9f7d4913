"""``rag serve``: local-rag as a team server over HTTP — MCP, a JSON API and a search page.

``rag.serve.app`` assembles the Starlette application; ``access`` the tokens; ``sessions``
each request's view of the service (its token's database role, its deadline); ``api`` the
``/v1`` endpoints; ``openapi`` their description; ``page/`` the search page. ``serve`` below
runs it with uvicorn, which on SIGTERM stops accepting, lets the requests in flight finish
(up to ``serve.deadline``) and then stops.
"""

from __future__ import annotations

import logging
import os

from rag.errors import ConfigError

log = logging.getLogger("rag.serve")

DEFAULT_PORT = 8765


def serve(config_path: str | None, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Run the server until SIGTERM or Ctrl-C. Tokens, limits and the log come from the config
    (``serve``) and ``RAG_SERVE_TOKENS``; a bad one stops it before it listens, in one line."""
    import uvicorn

    from rag.config import load_config
    from rag.mcp_server import configure_logging, log_level
    from rag.serve.access import check_bind, load_tokens
    from rag.serve.app import create_app
    from rag.service import RagService

    level = log_level()
    loaded = load_config(config_path)
    settings = loaded.config.serve
    tokens = load_tokens(settings, loaded.path.parent if loaded.path else None)
    check_bind(host, tokens)
    if not 0 < port < 65536:
        raise ConfigError(f"--port {port}: use 1-65535")
    configure_logging(level)
    service = RagService(config_path, loaded=loaded)
    app = create_app(service, tokens, settings, host=host)
    os.environ.setdefault("RAG_MCP_PRELOAD", "0")
    try:
        uvicorn.run(app, host=host, port=port, log_config=None, access_log=False, lifespan="on",
                    timeout_graceful_shutdown=int(settings.deadline) + 1, server_header=False)
    finally:
        service.close()

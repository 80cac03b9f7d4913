"""A server over a RagService driven through the MCP SDK's in-memory client, for
the MCP tests (``tests/test_mcp.py``, ``tests/graph/test_mcp_graph.py``)."""

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client
from mcp_types import CallToolResult

from rag.config import LoadedConfig, RagConfig
from rag.mcp_server import build_server
from rag.service import RagService


def loaded_config(data: dict[str, Any] | None = None) -> LoadedConfig:
    return LoadedConfig(RagConfig.model_validate(data or {}), None, "test")


class Harness:
    """A server over a RagService; ``call`` runs one tool through a fresh in-memory client session."""

    def __init__(self, service: RagService) -> None:
        self.service = service
        self.server = build_server(service, preload=False)

    def session(self, body: Callable[[Client], Awaitable[Any]]) -> Any:
        async def run() -> Any:
            async with Client(self.server) as client:
                return await body(client)

        return anyio.run(run)

    def call(self, tool: str, args: dict[str, Any] | None = None, **kwargs: Any) -> CallToolResult:
        async def body(client: Client) -> CallToolResult:
            return await client.call_tool(tool, args or {}, **kwargs)

        result: CallToolResult = self.session(body)
        return result

    def ok(self, tool: str, args: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        result = self.call(tool, args, **kwargs)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        # The text block carries the same JSON, for clients that read only text.
        assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
        structured: dict[str, Any] = result.structured_content
        return structured

    def error(self, tool: str, args: dict[str, Any] | None = None) -> str:
        result = self.call(tool, args)
        assert result.is_error, result.structured_content
        text: str = result.content[0].text  # type: ignore[union-attr]
        assert text.startswith(f"Error executing tool {tool}: ")
        return text.removeprefix(f"Error executing tool {tool}: ")

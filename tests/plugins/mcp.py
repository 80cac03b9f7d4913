"""The MCP test project and a harness that runs MCP tools through the SDK's in-memory client.

``make_harness`` is a fixture (this module is a plugin of tests/conftest.py); ``Harness``,
``make_project`` and the project's texts are imported by the modules that test MCP tools or
read the project back. The MCP SDK is imported only when a harness is built: it takes
seconds, and every test run loads this module.
"""

import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from rag.config import LoadedConfig, RagConfig
from rag.service import RagService

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult

GUIDE = "# Guide\n\nIntro line.\n\n## Streams\n\nCombine the latest values.\nMore about streams.\n\n## Other\n\nTail.\n"
STREAM_TS = (
    "import { merge } from './merge';\n"
    "\n"
    "export function combineLatest(a: Stream, b: Stream): Stream {\n"
    "  return merge(a, b);\n"
    "}\n"
    "\n"
    "export const answer = 42;\n"
)


def make_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "stream.ts").write_text(STREAM_TS)
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text(GUIDE)
    return root


def loaded_config(data: dict[str, Any] | None = None) -> LoadedConfig:
    return LoadedConfig(RagConfig.model_validate(data or {}), None, "test")


class Harness:
    """A server over a RagService; ``call`` runs one tool through a fresh in-memory client session."""

    def __init__(self, service: RagService) -> None:
        from rag.mcp_server import build_server

        self.service = service
        self.server = build_server(service, preload=False)

    def session(self, body: "Callable[[Client], Awaitable[Any]]") -> Any:
        from mcp import Client

        async def run() -> Any:
            async with Client(self.server) as client:
                return await body(client)

        return anyio.run(run)

    def call(self, tool: str, args: dict[str, Any] | None = None, **kwargs: Any) -> "CallToolResult":
        async def body(client: "Client") -> "CallToolResult":
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


@pytest.fixture
def make_harness() -> Iterator[Callable[..., Harness]]:
    """Harnesses whose database connections are closed after the test."""
    made: list[Harness] = []

    def make(config: dict[str, Any] | None = None, **kwargs: Any) -> Harness:
        made.append(Harness(RagService(loaded=loaded_config(config), **kwargs)))
        return made[-1]

    yield make
    for h in made:
        h.service.close()

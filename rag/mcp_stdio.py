"""The MCP server's stdin: every line reaches the SDK as JSON it can parse.

JSON allows ``\\ud800`` escapes that name half of a UTF-16 surrogate pair; the
SDK's parser rejects such a line as a whole, so the request got no reply at
all. Here a lone surrogate escape becomes ``\\ufffd`` (the replacement
character) before the SDK sees the line: the request is answered, with that
one character replaced. Valid pairs and escaped backslashes are left alone.
"""

import io
import re
import sys
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

# Each backslash escape, consumed left to right so "\\\\ud800" (an escaped
# backslash, then text) is never read as an escape; a valid pair is one match.
_ESCAPE = re.compile(r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)")
_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def replace_lone_surrogates(line: str) -> str:
    """``line`` with every escaped lone surrogate replaced by ``\\ufffd``."""
    if "\\u" not in line:
        return line
    return _ESCAPE.sub(lambda m: "\\ufffd" if _LONE_SURROGATE.fullmatch(m[0]) else m[0], line)


class _RepairedLines(io.TextIOWrapper):
    """stdin as UTF-8 text whose lines pass through ``replace_lone_surrogates``."""

    def readline(self, size: int = -1, /) -> str:  # type: ignore[override]  # as typeshed's own
        return replace_lone_surrogates(super().readline(size))


async def serve_stdio(server: Any) -> None:
    """``MCPServer.run_stdio_async`` with the repaired stdin."""
    stdin = anyio.wrap_file(_RepairedLines(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

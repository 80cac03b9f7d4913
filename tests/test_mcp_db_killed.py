"""The database killed under a running MCP server (`rag mcp` over stdio, the SDK's
client): every call answers with a result or a clear error, never an internal one,
however many calls (and an index run's own connection) start the server again at once."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import keyword_project
from mcp import Client, StdioServerParameters

pytestmark = [pytest.mark.slow, pytest.mark.db]  # `rag mcp` and an embedded server of its own

RAG = str(Path(sys.executable).parent / "rag")


def kill_postmaster(pgdata: Path) -> None:
    pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    for _ in range(200):  # until reaped: a zombie still counts as running
        if not Path(f"/proc/{pid}").exists():
            return
        time.sleep(0.1)


def test_every_call_answers_clearly_after_the_database_is_killed(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("RAG_HOME", str(home))
    monkeypatch.delenv("RAG_DATABASE_URL", raising=False)
    cfg, root = keyword_project(tmp_path)
    rag_cli = [RAG, "--config", str(cfg)]
    answers: list[tuple[str, bool, str]] = []  # (tool, is_error, text)
    try:
        subprocess.run([*rag_cli, "index", "--path", str(root), "--name", "p"], check=True,
                       capture_output=True, timeout=300)
        params = StdioServerParameters(command=RAG, args=["mcp", "--config", str(cfg)], env=dict(os.environ))
        calls: list[tuple[str, dict[str, Any]]] = [
            ("index", {"source": "p"}), ("search", {"query": "combine_latest"}), ("status", {}),
            ("list_sources", {}), ("find_symbol", {"name": "combine_latest"}), ("search", {"query": "a + b"}),
        ]

        async def session() -> None:
            async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
                first = await client.call_tool("search", {"query": "combine_latest"})
                assert not first.is_error, first.content

                async def call(tool: str, args: dict[str, Any]) -> None:
                    result = await client.call_tool(tool, args)
                    answers.append((tool, result.is_error, result.content[0].text))  # type: ignore[union-attr]

                for _ in range(3):
                    await anyio.to_thread.run_sync(kill_postmaster, home / "pgdata")
                    async with anyio.create_task_group() as calling:
                        for tool, args in calls:
                            calling.start_soon(call, tool, args)
                last = await client.call_tool("search", {"query": "combine_latest"})
                assert not last.is_error, last.content

        anyio.run(session)
    finally:
        subprocess.run([RAG, "db", "stop"], capture_output=True, timeout=120)
    assert len(answers) == 3 * 6
    # (a clear error could only be a start slower than pg_ctl's 10 s on a loaded machine)
    assert [a for a in answers if a[1] and ("internal error" in a[2] or "AssertionError" in a[2])] == []

"""`rag mcp` as Claude Code and Cursor run it: a subprocess speaking JSON-RPC on stdin/stdout.

The SDK's stdio client drives a real session against a real database; a raw
session checks that stdout carries nothing but protocol; the official MCP
Inspector CLI (npm) drives the server when npx can fetch it.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers import keyword_project
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from rag import db
from rag.cli import app

pytestmark = pytest.mark.slow  # `rag mcp` subprocesses

RAG = str(Path(sys.executable).parent / "rag")
REAL_NPM_CACHE = os.environ.get("NPM_CONFIG_CACHE") or str(Path.home() / ".npm")  # before HOME is isolated
INSPECTOR = os.environ.get("RAG_MCP_INSPECTOR_PACKAGE", "@modelcontextprotocol/inspector@0.21.1")


@pytest.fixture
def indexed(tmp_path: Path, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A keyword-only index (no model in the server process) of a small project; returns the config."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    cfg = tmp_path / "rag.yaml"
    cfg.write_text("embeddings: {provider: none}\n")
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "stream.ts").write_text(
        "export function combineLatest(a: Stream, b: Stream): Stream {\n  return merge(a, b);\n}\n")
    result = CliRunner().invoke(app, ["--config", str(cfg), "index", "--path", str(root), "--name", "proj"])
    assert result.exit_code == 0, result.stderr
    return cfg


def test_stdio_session_with_the_sdk_client(indexed: Path, tmp_path: Path) -> None:
    other_dir = tmp_path / "elsewhere"  # a global registration starts the server in any folder
    other_dir.mkdir()
    params = StdioServerParameters(command=RAG, args=["mcp", "--config", str(indexed)],
                                   env=dict(os.environ), cwd=str(other_dir))

    async def session() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=120) as client:  # initialize
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == {
                "search", "read_source", "list_sources", "status", "index", "remove_source", "find_symbol",
                "traverse_graph"}
            found = await client.call_tool("search", {"query": "combineLatest", "topK": 3})
            assert not found.is_error and found.structured_content
            hit = found.structured_content["results"][0]
            assert hit["path"] == "src/stream.ts" and hit["sourceName"] == "proj"
            read = await client.call_tool("read_source", {"chunkId": hit["chunkId"]})
            assert not read.is_error and read.structured_content
            assert read.structured_content["content"].startswith("export function combineLatest")
            bad = await client.call_tool("read_source", {"path": "/etc/passwd"})
            assert bad.is_error
            status = await client.call_tool("status", {})
            assert status.structured_content and status.structured_content["config"]["path"] == str(indexed)

    anyio.run(session)


@pytest.mark.db  # an embedded server of its own
def test_the_server_survives_a_stop_of_the_embedded_database(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`rag db stop` while the server runs: the next call starts the embedded server again."""
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home"))
    cfg, root = keyword_project(tmp_path)
    rag_cli = [RAG, "--config", str(cfg)]
    try:
        subprocess.run([*rag_cli, "init"], check=True, capture_output=True, timeout=300)
        subprocess.run([*rag_cli, "index", "--path", str(root), "--name", "p"], check=True,
                       capture_output=True, timeout=300)
        params = StdioServerParameters(command=RAG, args=["mcp", "--config", str(cfg)], env=dict(os.environ))

        async def session() -> None:
            async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
                first = await client.call_tool("search", {"query": "combine_latest"})
                assert not first.is_error
                stopped = await anyio.to_thread.run_sync(lambda: subprocess.run(
                    [RAG, "db", "stop"], capture_output=True, text=True, timeout=120))
                assert stopped.stdout.strip() == "embedded server stopped"
                again = await client.call_tool("search", {"query": "combine_latest"})
                assert not again.is_error, again.content
                assert again.structured_content and again.structured_content["results"][0]["path"] == "m.py"
                status = await client.call_tool("status", {})
                assert status.structured_content and status.structured_content["database"]["connected"]

        anyio.run(session)
    finally:
        subprocess.run([RAG, "db", "stop"], capture_output=True, timeout=120)


def rpc(method: str, params: dict[str, Any] | None = None, id_: int | None = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id_ is not None:
        message["id"] = id_
    return json.dumps(message) + "\n"


INITIALIZE = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "test", "version": "0"}}, 1)


def exchange(command: list[str], requests: list[str], env: dict[str, str],
             timeout: float = 300) -> tuple[list[dict[str, Any]], str, int]:
    """Send requests one by one, each after the previous reply (the server drops calls still
    running when stdin closes); then close stdin. Returns every stdout line parsed, stderr, exit code."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdin and proc.stdout
    lines: list[dict[str, Any]] = []
    try:
        for request in requests:
            proc.stdin.write(request)
            proc.stdin.flush()
            wanted = json.loads(request).get("id")
            while wanted is not None:
                line = proc.stdout.readline()
                assert line, "the server closed stdout"
                lines.append(json.loads(line))  # every line is JSON-RPC, nothing else
                if lines[-1].get("id") == wanted:
                    break
        proc.stdin.close()
        lines.extend(json.loads(line) for line in proc.stdout.read().splitlines())
        code = proc.wait(timeout=timeout)
        stderr = proc.stderr.read() if proc.stderr else ""
    finally:
        proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()
    return lines, stderr, code


def test_stdout_carries_protocol_only_and_logs_go_to_stderr(indexed: Path) -> None:
    requests = [INITIALIZE, rpc("notifications/initialized"), rpc("tools/list", {}, 2),
                rpc("tools/call", {"name": "search", "arguments": {"query": "combineLatest"}}, 3),
                rpc("tools/call", {"name": "read_source", "arguments": {"chunkId": 987654}}, 4),
                rpc("tools/call", {"name": "index", "arguments": {"path": "/no/such/dir"}}, 5)]
    env = {**os.environ, "RAG_LOG_LEVEL": "INFO"}
    replies, stderr, code = exchange([RAG, "mcp", "--config", str(indexed)], requests, env)
    assert code == 0, stderr
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    by_id = {r["id"]: r for r in replies if "id" in r}
    assert by_id[1]["result"]["serverInfo"]["name"] == "local-rag"
    assert len(by_id[2]["result"]["tools"]) == 8
    assert by_id[3]["result"]["structuredContent"]["results"][0]["path"] == "src/stream.ts"
    assert by_id[4]["result"]["isError"] is True
    assert "chunk 987654 is not in the index" in by_id[4]["result"]["content"][0]["text"]
    assert "is not a directory" in by_id[5]["result"]["content"][0]["text"]
    assert "local-rag 0.1.0 MCP server on stdio; config: " + str(indexed) in stderr
    assert "Traceback" not in stderr


def test_a_lone_surrogate_escape_still_gets_a_reply(indexed: Path) -> None:
    # json.dumps writes the lone surrogate as the escape "\\ud800", as a client in JavaScript would.
    call = rpc("tools/call", {"name": "search", "arguments": {"query": "combine\ud800Latest"}}, 3)
    assert "\\ud800" in call
    proc = subprocess.Popen([RAG, "mcp", "--config", str(indexed)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin and proc.stdout
    watchdog = threading.Timer(120, proc.kill)  # before the fix no reply came: fail, do not hang
    watchdog.start()
    try:
        proc.stdin.write(INITIALIZE + rpc("notifications/initialized") + call + rpc("tools/list", {}, 4))
        proc.stdin.flush()
        replies: dict[int, dict[str, Any]] = {}
        while not {3, 4} <= replies.keys():
            line = proc.stdout.readline()
            assert line, f"the server closed stdout after replying to {sorted(replies)}"
            reply = json.loads(line)
            replies[reply.get("id")] = reply
        assert not replies[3]["result"]["isError"]
    finally:
        watchdog.cancel()
        proc.kill()
        proc.wait()
        proc.stdin.close()
        proc.stdout.close()


def test_missing_config_named_by_env_stops_the_server(tmp_path: Path) -> None:
    env = {**os.environ, "RAG_CONFIG": str(tmp_path / "gone.yaml")}
    done = subprocess.run([RAG, "mcp"], input=INITIALIZE, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"error: config file {tmp_path / 'gone.yaml'} (from RAG_CONFIG) does not exist; " \
        "fix the path or drop it to use ./rag.config.yaml or the built-in defaults\n"


def _inspector(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed (the MCP Inspector runs on Node.js)")
    command = [npx, "--yes", "-p", INSPECTOR, "mcp-inspector", "--cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600,
                          env={**env, "NPM_CONFIG_CACHE": REAL_NPM_CACHE, "NPM_CONFIG_UPDATE_NOTIFIER": "false"})


def test_the_official_inspector_cli_drives_the_server(indexed: Path, rag_db: db.DatabaseTarget) -> None:
    # The inspector passes its own small environment to the server, plus -e pairs; it keeps
    # --config for itself, so the config comes through RAG_CONFIG here.
    server = ["-e", f"RAG_DATABASE_URL={rag_db.url}", "-e", f"HOME={os.environ['HOME']}",
              "-e", f"RAG_CONFIG={indexed}", RAG, "mcp"]
    listed = _inspector(*server, "--method", "tools/list", env=dict(os.environ))
    if listed.returncode != 0 and "npm" in listed.stderr and ("ENOTFOUND" in listed.stderr
                                                              or "ETIMEDOUT" in listed.stderr):
        pytest.skip(f"the inspector could not be fetched from npm: {listed.stderr.strip()[-300:]}")
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} >= {"search", "read_source", "status"}
    called = _inspector(*server, "--method", "tools/call", "--tool-name", "search",
                        "--tool-arg", "query=combineLatest", env=dict(os.environ))
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["structuredContent"]["results"][0]["path"] == "src/stream.ts"

"""Ctrl-C (#42.22): `rag index` and the MCP server stopped mid-run say so in one line, exit 130
(the server: at once, quietly), and leave no CancelledError tracebacks; the data stays intact."""

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import RAG, rag_process, rows

from rag import db

pytestmark = pytest.mark.slow  # `rag` processes indexing a few thousand files


def _interruptible() -> None:
    """In the child before exec: SIGINT at its default, so Python installs its handler even when
    the tests run as a background job (which starts with SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def make_tree(root: Path, files: int = 3000) -> Path:
    for i in range(files):
        folder = root / f"pkg{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i}.py").write_text(
            "".join(f"def handler_{i}_{j}(x):\n    '''Handle case {j} of {i}.'''\n    return x + {j}\n\n\n"
                    for j in range(12)))
    return root


def interrupt_when(proc: "subprocess.Popen[str]", marker: str, until: Callable[[], bool]) -> list[str]:
    """The stderr lines up to ``marker``; SIGINT once ``until`` holds after it."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if marker in line:
            break
    deadline = time.monotonic() + 60
    while not until():
        assert proc.poll() is None and time.monotonic() < deadline, "".join(seen)
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    return seen


def list_tools(proc: "subprocess.Popen[str]") -> None:
    """initialize, initialized and tools/list over the server's stdio, each reply awaited."""
    assert proc.stdin is not None and proc.stdout is not None
    for number, (method, params) in enumerate([
            ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                            "clientInfo": {"name": "test", "version": "0"}}),
            ("notifications/initialized", None), ("tools/list", {})]):
        message: dict[str, object] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message |= {"id": number, "params": params}
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        if params is not None:
            assert json.loads(proc.stdout.readline())["id"] == number


def test_ctrl_c_during_rag_index(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = make_tree(tmp_path / "big")
    proc = subprocess.Popen([RAG, "index", "--path", str(root), "--name", "big"], cwd=tmp_path, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "RAG_DATABASE_URL": rag_db.url}, preexec_fn=_interruptible)
    # Once its first files are stored, not after a fixed wait: under load a wait could outlast the run.
    seen = interrupt_when(proc, "Changed:", lambda: bool(rows(rag_db, "SELECT 1 FROM rag.files LIMIT 1")))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, "".join(seen) + err
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert err.strip().splitlines()[-1] == (
        "interrupted: the files of big stored so far are kept; rag index big goes on from there")
    [run] = rows(rag_db, "SELECT status FROM rag.index_runs")
    assert run["status"] == "interrupted"
    again = rag_process("index", "big", database=rag_db, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.files")[0]["n"] == 3000


def watching_server(root: Path, name: str, rag_db: db.DatabaseTarget) -> "subprocess.Popen[str]":
    """``rag mcp`` keeping the folder ``root`` (source ``name``) fresh, keyword-only."""
    cfg = root.parent / "mcp.yaml"
    cfg.write_text("embeddings: {provider: none}\nmcp: {watch: true}\n"
                   f"sources:\n  - {{name: {name}, type: local, path: {root}}}\n")
    return subprocess.Popen([RAG, "mcp", "--config", str(cfg)], cwd=root.parent, text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "RAG_DATABASE_URL": rag_db.url}, preexec_fn=_interruptible)


def test_ctrl_c_stops_the_mcp_server_mid_sync(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    proc = watching_server(make_tree(tmp_path / "big"), "big", rag_db)
    list_tools(proc)  # the watch and its catch-up sync start once the server has answered
    deadline = time.monotonic() + 60
    while not rows(rag_db, "SELECT 1 FROM rag.chunks LIMIT 1"):  # the catch-up sync is storing files
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    started = proc.stderr.readline() + proc.stderr.readline() if proc.stderr else ""
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert len(err.strip().splitlines()) <= 1, started + err

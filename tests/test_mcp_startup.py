"""The MCP server's start-up does nothing that can wait (#42.8): the watch's catch-up sync
starts once the first request is answered, not while the client waits for it."""

import os
import subprocess
import time
from pathlib import Path

import pytest
from helpers import RAG, rows
from test_interrupts import list_tools, make_tree

from rag import db

pytestmark = pytest.mark.slow  # a `rag mcp` process


def test_the_catch_up_sync_waits_for_the_first_answer(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    root = make_tree(tmp_path / "proj", files=20)
    cfg = tmp_path / "mcp.yaml"
    cfg.write_text("embeddings: {provider: none}\nmcp: {watch: true}\n"
                   f"sources:\n  - {{name: proj, type: local, path: {root}}}\n")
    proc = subprocess.Popen([RAG, "mcp", "--config", str(cfg)], cwd=tmp_path, text=True, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "RAG_DATABASE_URL": rag_db.url})
    try:
        time.sleep(4)  # a server that synced at start would have begun by now
        assert rows(rag_db, "SELECT 1 FROM rag.index_runs") == []
        list_tools(proc)
        deadline = time.monotonic() + 30
        while not rows(rag_db, "SELECT 1 FROM rag.index_runs WHERE status = 'succeeded'"):
            assert time.monotonic() < deadline, "the catch-up sync never ran"
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.communicate()

"""Start-up does nothing that can wait (#42.8): the MCP server's catch-up sync starts once the
first request is answered, not while the client waits for it; a search process imports no
HTTP client it will not use."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import RAG, rows
from test_interrupts import list_tools, make_tree, watching_server

from rag import db

pytestmark = pytest.mark.slow  # a `rag mcp` process


def test_the_catch_up_sync_waits_for_the_first_answer(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    proc = watching_server(make_tree(tmp_path / "proj", files=20), "proj", rag_db)
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


def test_a_keyword_only_search_process_imports_no_http_client(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    """httpx (a third of a second of every start on a loaded machine) only for a hosted provider."""
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    probe = ("import runpy, sys\nsys.argv = ['rag', 'search', 'anything', '--json']\n"
             f"try:\n    runpy.run_path({RAG!r}, run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print('httpx imported' if 'httpx' in sys.modules else 'no httpx', file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RAG_DATABASE_URL": rag_db.url})
    assert done.stderr.strip().splitlines()[-1] == "no httpx", done.stderr

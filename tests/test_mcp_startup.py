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
from rag.cli import plain_mcp

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


# What a first answer of `rag mcp` must not wait for: typer's app of every command (~50 ms of
# CPU, #55), the database driver, the model's runtime, the chunkers, the watcher.
HEAVY = ("typer", "httpx", "psycopg", "psycopg_pool", "numpy", "onnxruntime", "tokenizers", "pathspec",
         "tree_sitter", "tree_sitter_language_pack", "rag.db", "rag.providers", "rag.indexer", "rag.search",
         "rag.chunking", "rag.graph", "rag.watcher", "rag.terminal")


@pytest.mark.parametrize("args", [["mcp"], ["mcp", "--config", "rag.config.yaml"],
                                  ["-c", "rag.config.yaml", "mcp"]])
def test_rag_mcp_answers_tools_list_without_the_heavy_modules(tmp_path: Path, args: list[str]) -> None:
    """The `rag` script up to the first tools/list answer (stdio replaced by one list_tools)."""
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: local}\nmcp: {watch: false}\n")
    probe = ("import runpy, sys\n"
             f"sys.argv = ['rag', *{args!r}]\n"
             "import rag.mcp_server\n"
             "async def first_answer(server):\n"
             "    print(len(await server.list_tools()), 'tools', file=sys.stderr)\n"
             "rag.mcp_server.serve_stdio = first_answer\n"
             f"try:\n    runpy.run_path({RAG!r}, run_name='__main__')\nexcept SystemExit:\n    pass\n"
             f"print(sorted(m for m in sys.modules if m in {HEAVY!r} or m.startswith('rag.providers.')),"
             " file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "RAG_HOME": str(tmp_path / "home"), "RAG_MCP_PRELOAD": "0"})
    lines = done.stderr.strip().splitlines()
    assert lines[-2] == "8 tools", done.stderr
    assert lines[-1] == "[]", done.stderr


@pytest.mark.parametrize(("args", "expected"), [
    (["mcp"], []),
    (["mcp", "--config", "x.yaml"], ["--config", "x.yaml"]),
    (["-c", "x.yaml", "mcp"], ["--config", "x.yaml"]),
    (["mcp", "--help"], None),
    (["--debug", "mcp"], None),
    (["mcp", "--config=x.yaml"], None),
    (["mcp", "-c", "--debug"], None),
    (["mcp", "-c", "x.yaml", "--debug"], None),
    (["search", "mcp"], None),
])
def test_only_a_plain_rag_mcp_skips_typer(args: list[str], expected: list[str] | None) -> None:
    assert plain_mcp(args) == expected

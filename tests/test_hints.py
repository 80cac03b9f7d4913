"""Hints in the user's words (#42.3, #42.4): an error or warning names the next step as the
interface that raised it says it: a command on the CLI, a tool call over MCP, a SQL call in psql."""

from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from helpers import rag_process
from plugins.mcp import Harness, make_project

from rag import db
from rag.hints import Hint, from_sql


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    return make_project(tmp_path / "proj")


def test_search_before_indexing_says_what_list_says(rag_db: db.DatabaseTarget, project: Path) -> None:
    listed = rag_process("list", database=rag_db, cwd=project.parent)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.strip() == "no sources indexed yet; try: rag index --path . --name my-project"
    searched = rag_process("search", "combine streams", database=rag_db, cwd=project.parent)
    assert searched.returncode == 0, searched.stderr
    assert searched.stderr.strip() == f"warning: {listed.stdout.strip()}"
    assert "vectors" not in searched.stderr


def test_search_before_indexing_over_mcp_names_the_index_tool(
        rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch, make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    out = make_harness({"embeddings": {"provider": "none"}}).ok("search", {"query": "combine streams"})
    assert out["results"] == []
    assert out["warnings"] == ['no sources indexed yet; try: index(path="/path/to/project")']


def test_cli_errors_name_commands_and_options(rag_db: db.DatabaseTarget, project: Path) -> None:
    copy = make_project(project.parent / "copy")
    for folder in (project, copy):
        assert rag_process("index", "--path", str(folder), database=rag_db, cwd=project.parent).returncode == 0

    def error(*args: str) -> str:
        done = rag_process(*args, database=rag_db, cwd=project.parent)
        assert done.returncode == 1 and done.stdout == ""
        return done.stderr.strip()

    assert error("graph", "callers", "NoSuchThing") == (
        "error: symbol 'NoSuchThing': no such definition; try: rag graph find NoSuchThing")
    assert error("read", "src/nope.ts", "--source", "proj") == (
        "error: path 'src/nope.ts' is not in the index of source 'proj'; only indexed files can be read; "
        "rag list shows the sources")
    assert error("read", "src/stream.ts") == (
        "error: path 'src/stream.ts' is in several sources (copy, proj); pass --source")


def test_mcp_errors_name_tools_and_arguments(
        rag_db: db.DatabaseTarget, project: Path, monkeypatch: pytest.MonkeyPatch,
        make_harness: Callable[..., Harness]) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    harness = make_harness({"embeddings": {"provider": "none"}})
    harness.ok("index", {"path": str(project)})
    harness.ok("index", {"path": str(make_project(project.parent / "copy"))})
    assert harness.error("traverse_graph", {"symbol": "NoSuchThing"}) == (
        "symbol 'NoSuchThing': no such definition; try: find_symbol(name=\"NoSuchThing\")")
    assert harness.error("read_source", {"path": "src/nope.ts", "source": "proj"}).endswith(
        "only indexed files can be read; list_sources shows the sources")
    assert harness.error("read_source", {"path": "src/stream.ts"}).endswith(
        "is in several sources (copy, proj); pass source")


def test_sql_errors_carry_the_sql_hint(rag_db: db.DatabaseTarget) -> None:
    with psycopg.connect(rag_db.url, autocommit=True) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("SELECT * FROM rag.traverse('No''Such', ARRAY['calls'], 'in', 1)")
    assert raised.value.diag.message_hint == "try: rag.find_symbols('No''Such')"
    assert from_sql(raised.value.diag.message_hint) == Hint("find_symbol", "No'Such")

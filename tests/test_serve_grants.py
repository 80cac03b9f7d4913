"""Grants enforced by PostgreSQL (sql/070_access.sql): a role of rag_reader granted one source
sees no row of another, through the rag.* functions or a direct SELECT, and writes nothing."""

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fakes import HashEmbedder
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from rag import db, sqlapi
from rag.config import LoadedConfig, RagConfig
from rag.service import RagService, folder_source

READER = "rag_test_reader_alpha"

# Every table whose rows belong to a source, with how to tell the source of a row.
SOURCE_ROWS = {
    "sources": "SELECT name FROM rag.sources",
    "files": "SELECT s.name FROM rag.files f JOIN rag.sources s ON s.id = f.source_id",
    "chunks": "SELECT s.name FROM rag.chunks c JOIN rag.sources s ON s.id = c.source_id",
    "symbols": "SELECT s.name FROM rag.symbols x JOIN rag.sources s ON s.id = x.source_id",
    "postings": "SELECT s.name FROM rag.postings p JOIN rag.chunks c ON c.id = p.chunk_id "
                "JOIN rag.sources s ON s.id = c.source_id",
}


def two_sources(tmp_path: Path, target: db.DatabaseTarget) -> None:
    """Sources alpha and beta, each a Python file defining a function of its own name."""
    service = RagService(loaded=LoadedConfig(RagConfig(), None, "test"), embedder=HashEmbedder(8))
    service._target = target
    for name in ("alpha", "beta"):
        root = tmp_path / name
        root.mkdir()
        (root / f"{name}.py").write_text(f"def {name}_secret_handler(x):\n    return 'shared words {name}'\n")
        service.index(folder_source(root, name))
    service.close()


@pytest.fixture
def reader(rag_db: db.DatabaseTarget, tmp_path: Path) -> Iterator[tuple[psycopg.Connection[dict[str, object]],
                                                                        dict[str, list[int]]]]:
    """A connection running as a reader granted alpha only, and every chunk id per source."""
    two_sources(tmp_path, rag_db)
    with db.connect(rag_db) as owner:
        assert sorted(sqlapi.create_roles(owner)) in ([], ["rag_reader", "rag_writer"])
        assert sqlapi.grant_sources(owner, READER, ["alpha"]) == 1
        ids = {name: [r["id"] for r in owner.execute(
            "SELECT c.id FROM rag.chunks c JOIN rag.sources s ON s.id = c.source_id WHERE s.name = %s",
            (name,))] for name in ("alpha", "beta")}
    conn = psycopg.connect(rag_db.url, autocommit=True, row_factory=dict_row)
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(READER)))
    yield conn, ids
    conn.close()


def test_a_direct_select_shows_only_the_granted_source(reader: tuple) -> None:
    conn, _ = reader
    for table, query in SOURCE_ROWS.items():
        names = {r["name"] for r in conn.execute(query.encode())}
        assert names <= {"alpha"}, table
        assert names == {"alpha"} or table == "symbols", table
    assert conn.execute("SELECT count(*) AS n FROM rag.chunks WHERE content LIKE '%beta%'").fetchone()["n"] == 0
    assert [r["role_name"] for r in conn.execute("SELECT role_name FROM rag.source_grants")] == [READER]


def test_the_functions_return_no_row_of_another_source(reader: tuple) -> None:
    conn, ids = reader
    hits = conn.execute("SELECT * FROM rag.search('secret handler shared words')").fetchall()
    assert hits and {h["source_name"] for h in hits} == {"alpha"}
    assert [r["name"] for r in sqlapi.list_sources(conn)] == ["alpha"]
    assert sqlapi.status(conn)["sources"] == 1
    assert sqlapi.read_chunk(conn, ids["alpha"][0], 0)["source_name"] == "alpha"
    with pytest.raises(psycopg.Error):
        sqlapi.read_chunk(conn, ids["beta"][0], 0)
    with pytest.raises(psycopg.Error, match="beta"):
        sqlapi.read_file_range(conn, "beta", "beta.py", None, None, None, 0)
    with pytest.raises(psycopg.Error):
        sqlapi.read_file_range(conn, None, "beta.py", None, None, None, 0)


def test_a_login_role_in_the_reader_role_connects_and_sees_alpha_only(reader, rag_db: db.DatabaseTarget) -> None:
    """A person's own login, granted the reader role, connecting straight to the database."""
    owner, _ = reader
    login = "rag_test_person"
    owner.execute("RESET ROLE")
    owner.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))
    owner.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'person-pw' IN ROLE {}").format(
        sql.Identifier(login), sql.Identifier(READER)))
    try:
        url = make_conninfo(rag_db.url, user=login, password="person-pw")  # (a server may ask for one)
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as person:
            assert person.execute("SELECT current_user AS me").fetchone()["me"] == login
            names = {r["source_name"] for r in person.execute("SELECT * FROM rag.search('secret handler')")}
            assert names == {"alpha"}
            assert [r["name"] for r in person.execute("SELECT name FROM rag.sources")] == ["alpha"]
            assert {r["name"] for r in person.execute(SOURCE_ROWS["chunks"].encode())} == {"alpha"}
    finally:  # (it owns nothing; DROP OWNED BY would need its privileges on a server as a non-superuser)
        owner.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(login)))


def test_a_reader_writes_nothing_and_runs_no_bookkeeping(reader: tuple) -> None:
    conn, _ = reader
    for statement in ("SELECT rag.remove_source('alpha')", "DELETE FROM rag.chunks",
                      "SELECT rag.grant_sources('rag_test_reader_alpha', NULL)",
                      "SELECT rag.create_roles()", "UPDATE rag.sources SET name = 'x'"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement.encode())
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("SELECT query FROM rag.query_embeddings")


def test_rag_init_roles_makes_the_roles(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    from helpers import keyword_project, rag_process

    config, _ = keyword_project(tmp_path)
    done = rag_process("--config", str(config), "init", "--roles", database=rag_db)
    assert done.returncode == 0, done.stderr
    assert "roles:      rag_reader, rag_writer (" in done.stdout
    with db.connect(rag_db) as conn:
        assert sqlapi.roles_applied(conn)
        assert sqlapi.create_roles(conn) == []  # again: nothing to make, the grants re-applied

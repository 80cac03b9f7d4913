"""Any PostgreSQL ≥ 15 with pgvector, not only the embedded one (#49): what a team's or a managed
server does differently — a role that is not a superuser, pgvector in another schema, a search
path without ``public``, a server without pgvector.

An administrator is needed to set these up: the test server's own role when it is a superuser
(the embedded server), else ``RAG_TEST_SUPERUSER_URL`` (`make test-external` gives one).
"""

import os
import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from helpers import keyword_project, rag_process
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from test_service import make_service

from rag import db
from rag.search import SearchRequest
from rag.service import folder_source


def on_database(url: str, dbname: str, **changes: str) -> str:
    params = conninfo_to_dict(url)
    params.update(dbname=dbname, **changes)
    return make_conninfo("", **params)


@pytest.fixture
def team_role(superuser_url: str) -> Iterator[tuple[str, str]]:
    """A role as a team's server gives local-rag: no superuser, owner of an empty database without
    pgvector, its search path set to a schema that does not exist. Yields (its URL, the admin's
    URL on that database)."""
    admin = superuser_url
    role, dbname, password = f"rag_team_{uuid.uuid4().hex[:8]}", f"rag_team_{uuid.uuid4().hex[:8]}", \
        secrets.token_hex(8)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(role),
                                                                        sql.Literal(password)))
        conn.execute(sql.SQL("ALTER ROLE {} SET search_path = team_schema").format(sql.Identifier(role)))
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
            sql.Identifier(dbname), sql.Identifier(role)))
    try:
        yield on_database(admin, dbname, user=role, password=password), on_database(admin, dbname)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


def test_a_role_that_is_not_a_superuser_is_told_the_one_statement_to_ask_for(
        team_role: tuple[str, str], tmp_path: Path) -> None:
    url, admin = team_role
    target = db.DatabaseTarget(url, "test")
    refused = rag_process("init", database=target)
    assert refused.returncode != 0
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert "ask an administrator to run `CREATE EXTENSION vector;`" in refused.stderr

    with psycopg.connect(admin, autocommit=True) as conn:  # what the administrator runs, once
        conn.execute("CREATE EXTENSION vector")
    done = rag_process("init", database=target)
    assert done.returncode == 0, done.stderr

    # The role's own search path (a schema that does not exist) changes nothing.
    config, root = keyword_project(tmp_path)
    indexed = rag_process("--config", str(config), "index", "--path", str(root), database=target)
    assert indexed.returncode == 0, indexed.stderr
    found = rag_process("--config", str(config), "search", "combine_latest", database=target)
    assert found.returncode == 0 and "m.py:1-2" in found.stdout, found.stderr


def test_pgvector_in_another_schema_serves_hybrid_search(superuser_url: str, tmp_path: Path) -> None:
    """Managed services put extensions in a schema of their own (``extensions``)."""
    name = f"rag_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(sql.Identifier(name)))
    try:
        url = on_database(superuser_url, name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA extensions")
            conn.execute("CREATE EXTENSION vector SCHEMA extensions")
        target = db.DatabaseTarget(url, "test")
        db.install_schema(target)
        root = tmp_path / "proj"
        root.mkdir()
        (root / "stream.ts").write_text("export function combineLatest(a, b) {\n  return a;\n}\n")
        service = make_service(target)
        try:
            service.index(folder_source(root))
            hits = service.search(SearchRequest("combineLatest", 3)).results
        finally:
            service.close()
        assert hits and hits[0].path == "stream.ts"
        assert hits[0].scores.vector_rank == 1  # the vector arm ran, through extensions.<=>
    finally:
        with psycopg.connect(superuser_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_a_server_without_pgvector_is_named_in_one_line() -> None:
    url = os.environ.get("RAG_TEST_NO_VECTOR_URL")
    if not url:
        pytest.skip("no server without pgvector here; `make test-external` starts Debian's PostgreSQL 15 "
                    "when it is installed")
    refused = rag_process("init", database=db.DatabaseTarget(url, "RAG_DATABASE_URL"))
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "has no pgvector extension" in refused.stderr

"""Test fixtures: a real PostgreSQL for every test that touches SQL, never a mock.

Backend: ``RAG_TEST_DATABASE_URL`` (a server where we may create databases) if
set, else a testcontainers pgvector container when a Docker engine answers,
else the embedded server in a temporary ``RAG_HOME``. It starts when the first
test needs a database, so pure tests run without one; those that take a
database fixture are marked ``db`` (``pytest -m "not db"`` skips them). Each
test gets its own database, cloned from a template that already has the schema
installed. Fixtures shared by several test modules live in ``plugins/``.
"""

import gc
import importlib.util
import os
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from rag import db, embedded
from rag.chunking import markdown
from rag.chunking.lines import Lines

pytest_plugins = ["plugins.mcp", "plugins.llm", "plugins.serve"]

TEMPLATE_DB = "rag_test_template"
DATABASE_FIXTURES = {"template_db", "rag_db", "empty_db", "superuser_url"}


@dataclass
class Backend:
    name: str
    admin_url: str  # a URL to a maintenance database on the server
    version: str
    cleanup: Any = None

    def url_for(self, dbname: str) -> str:
        params = conninfo_to_dict(self.admin_url)
        params["dbname"] = dbname
        return make_conninfo("", **params)


_backend: Backend | None = None


def _docker_answers() -> bool:
    try:
        import docker

        client = docker.from_env(timeout=3)
        try:
            client.ping()
        finally:
            client.close()  # an unclosed socket warns at exit, and warnings are errors
        return True
    except Exception:
        pass
    # docker-py leaves the socket of a connection nobody answered open:
    # collected now (its traceback gone), quietly, its warning cannot fail
    # whichever test runs at the next garbage collection (warnings are errors).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    return False


def _start_backend() -> Backend:
    url = os.environ.get("RAG_TEST_DATABASE_URL")
    if url:
        return Backend("RAG_TEST_DATABASE_URL", url, _server_version(url))
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        container = PostgresContainer("pgvector/pgvector:pg17", driver=None).start()
        url = container.get_connection_url()
        return Backend("testcontainers", url, _server_version(url), container.stop)
    home = Path(tempfile.mkdtemp(prefix="rag-test-home-"))
    os.environ["RAG_HOME"] = str(home)
    try:
        url = embedded.embedded_url()
    finally:
        del os.environ["RAG_HOME"]

    def stop() -> None:
        os.environ["RAG_HOME"] = str(home)
        try:
            embedded.stop()
        finally:
            del os.environ["RAG_HOME"]
            shutil.rmtree(home, ignore_errors=True)

    return Backend("embedded", url, _server_version(url), stop)


def _server_version(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT current_setting('server_version'), "
            "(SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"
        ).fetchone()
    assert row is not None
    return f"PostgreSQL {row[0]}, pgvector {row[1]}"


def backend() -> Backend:
    global _backend
    if _backend is None:
        _backend = _start_backend()
    return _backend


def pytest_report_header() -> str:
    configured = ("RAG_TEST_DATABASE_URL" if os.environ.get("RAG_TEST_DATABASE_URL")
                  else "testcontainers if Docker answers, else embedded")
    return f"database backend: {configured}, started by the first test that needs it"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _backend is not None:
        terminalreporter.write_line(f"database backend: {_backend.name} ({_backend.version})")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Marks ``db`` every test that takes a database fixture, directly or through another fixture;
    skips, saying so, the tests of the torch extra where it is not installed (`make test-torch`)."""
    no_torch = importlib.util.find_spec("sentence_transformers") is None
    skip = pytest.mark.skip(reason="needs the torch extra (sentence-transformers); run: make test-torch")
    for item in items:
        if DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.db)
        if no_torch and item.get_closest_marker("torch"):
            item.add_marker(skip)


def pytest_sessionfinish() -> None:
    if _backend is not None and _backend.cleanup is not None:
        _backend.cleanup()


def create_database(name: str, template: str | None = None) -> str:
    """Create a database with Unicode-aware case folding; returns its URL. ``RAG_TEST_TEMPLATE``
    (`make test-external`) names the server's template database holding pgvector, whose collation
    the test databases keep: a role that is not a superuser cannot create the extension."""
    template = template or os.environ.get("RAG_TEST_TEMPLATE", "template0")
    b = backend()
    with psycopg.connect(b.admin_url, autocommit=True) as conn:
        locale = sql.SQL("")
        if template == "template0":
            if conn.info.server_version >= 170000:
                locale = sql.SQL(" LOCALE_PROVIDER builtin BUILTIN_LOCALE 'C.UTF-8'")
            else:
                locale = sql.SQL(" LOCALE_PROVIDER icu ICU_LOCALE 'und' LOCALE 'C'")
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} ENCODING 'UTF8'").format(
                sql.Identifier(name), sql.Identifier(template)
            )
            + locale
        )
    return b.url_for(name)


def drop_database(name: str) -> None:
    with psycopg.connect(backend().admin_url, autocommit=True) as conn:
        for attempt in range(10):
            try:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
                return
            except psycopg.errors.InsufficientPrivilege:  # (a role that is not a superuser, and an
                if attempt == 9:                            # autovacuum worker in the database: it ends soon)
                    raise
                time.sleep(1)


@pytest.fixture(scope="session")
def template_db() -> Iterator[str]:
    """A database with the schema installed, cloned by every ``rag_db``."""
    name = f"{TEMPLATE_DB}_{uuid.uuid4().hex[:8]}"
    url = create_database(name)
    db.install_schema(db.DatabaseTarget(url, "test"))
    yield name
    drop_database(name)


@pytest.fixture
def empty_db() -> Iterator[db.DatabaseTarget]:
    """A fresh database without the local-rag schema."""
    name = f"rag_test_{uuid.uuid4().hex[:12]}"
    url = create_database(name)
    yield db.DatabaseTarget(url, "test")
    drop_database(name)


@pytest.fixture
def rag_db(template_db: str) -> Iterator[db.DatabaseTarget]:
    """A fresh database with the schema installed."""
    name = f"rag_test_{uuid.uuid4().hex[:12]}"
    url = create_database(name, template=template_db)
    yield db.DatabaseTarget(url, "test")
    drop_database(name)


@pytest.fixture(scope="module")
def rag_dbs(template_db: str) -> Iterator[Callable[[], db.DatabaseTarget]]:
    """Fresh databases with the schema installed, as many as a test module asks
    for (``rag_dbs()``), dropped after the module."""
    names: list[str] = []

    def make() -> db.DatabaseTarget:
        name = f"rag_test_{uuid.uuid4().hex[:12]}"
        names.append(name)
        return db.DatabaseTarget(create_database(name, template=template_db), "test")

    yield make
    for name in names:
        drop_database(name)


@pytest.fixture
def superuser_url() -> str:
    """A URL for an administrator of the test server: its own role when that is a superuser (the
    embedded server), else ``RAG_TEST_SUPERUSER_URL`` (`make test-external`); skips without one."""
    url = os.environ.get("RAG_TEST_SUPERUSER_URL") or backend().admin_url
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if not (row and row[0]):
        pytest.skip("needs an administrator: the test server's role is not a superuser and "
                    "RAG_TEST_SUPERUSER_URL is unset")
    return url


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's config, database URL or home directory."""
    for var in ("RAG_CONFIG", "RAG_DATABASE_URL", "RAG_HOME", "JINA_API_KEY", "OPENAI_API_KEY", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    # Models load from disk only: a test that wants the hub serves a fake one (fake_hub.py).
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def sections_unmerged(monkeypatch: pytest.MonkeyPatch) -> None:
    """One chunk per section as the parser finds it, so a test sees section
    boundaries and header paths; merging is tested in test_section_merging.py."""

    def unmerged(lines: Lines, sections: list[markdown.Section], max_tokens: int) -> list[markdown.Section]:
        return sections

    monkeypatch.setattr(markdown, "merge_small_sections", unmerged)

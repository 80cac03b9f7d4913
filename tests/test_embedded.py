"""The zero-setup default: the embedded server, driven through real `rag` processes."""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.db, pytest.mark.slow]  # embedded servers started by `rag` processes

RAG = str(Path(sys.executable).parent / "rag")


@pytest.fixture
def rag_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "raghome"
    yield home
    run(home, "db", "stop")


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["RAG_HOME"] = str(home)
    return subprocess.run(
        [RAG, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_concurrent_first_use_restart_and_data_kept(rag_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["RAG_HOME"] = str(rag_home)
    both = [
        subprocess.Popen([RAG, "init"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in both]
    assert [p.returncode for p in both] == [0, 0], outputs
    assert all("pgvector:   0.8" in out and "PostgreSQL: 18" in out for out, _ in outputs)

    inserted = run(
        rag_home, "psql", "-v", "ON_ERROR_STOP=1", "-c",
        "INSERT INTO rag.sources (name, type, location) VALUES ('kept', 'local', '/x')",
    )
    assert inserted.returncode == 0, inserted.stderr

    stopped = run(rag_home, "db", "stop")
    assert stopped.stdout.strip() == "embedded server stopped"
    assert stopped.stderr == "", "no library warnings on stderr"

    status = run(rag_home, "status")  # starts the server again on demand
    assert status.returncode == 0, status.stderr
    assert "sources:      1" in status.stdout
    assert "(embedded)" in status.stdout


def test_embedded_listens_on_a_socket_only_and_folds_cyrillic(rag_home: Path) -> None:
    out = run(
        rag_home, "psql", "-tA", "-c",
        "SELECT current_setting('listen_addresses') || '|' || lower('ПРИВЕТ Ёж') || '|'"
        " || ('Ёлка' ILIKE 'ёлКА')::text",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "|привет ёж|true"
    url = run(rag_home, "db", "url").stdout.strip()
    assert url.endswith(f"/rag?host={rag_home / 'pgdata'}")
    assert "max_wal_size = '4GB'" in (rag_home / "pgdata" / "postgresql.auto.conf").read_text()


def test_unwritable_data_directory_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = run(blocker / "home", "status")
    assert result.returncode == 1
    assert result.stderr.startswith("error: data directory ")
    assert "set RAG_HOME to a writable directory" in result.stderr
    assert "Traceback" not in result.stderr


def test_keyword_data_emptied_by_a_server_crash_is_rebuilt(rag_home: Path, tmp_path: Path) -> None:
    """rag.postings is unlogged: kill -9 of the server empties it; the next search rebuilds it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "billing.py").write_text("def compute_invoice_total(items):\n    return sum(i.price for i in items)\n")
    (project / "notes.md").write_text("# Shipping\n\nParcels leave the warehouse on Mondays.\n")
    config = tmp_path / "rag.config.yaml"
    config.write_text("embeddings: {provider: none}\n")
    assert run(rag_home, "init").returncode == 0
    indexed = run(rag_home, "--config", str(config), "index", "--path", str(project), "--name", "p")
    assert indexed.returncode == 0, indexed.stderr

    def search() -> str:
        found = run(rag_home, "--config", str(config), "search", "invoice total", "--json")
        assert found.returncode == 0, found.stderr
        return found.stdout

    def postings() -> str:
        out = run(rag_home, "psql", "-tA", "-c", "SELECT count(*) || '|' || md5(string_agg("
                  "term || chunk_id || tf || term_count, ',' ORDER BY term, chunk_id)) FROM rag.postings")
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    before, kept = search(), postings()
    assert "billing.py" in before and not kept.startswith("0|")
    pid = int((rag_home / "pgdata" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    for _ in range(200):  # until reaped: a zombie still counts as running
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)

    emptied = run(rag_home, "psql", "-tA", "-c",
                  "SELECT (SELECT count(*) FROM rag.postings) || '|' || (SELECT count(*) FROM rag.chunks)")
    assert emptied.stdout.strip() == "0|2", emptied.stderr  # crash recovery emptied the unlogged table
    refused = run(rag_home, "psql", "-c", "SELECT * FROM rag.bm25_search('invoice')")
    assert "emptied by a database crash" in refused.stderr
    assert search() == before  # the Searcher rebuilt the postings first
    assert postings() == kept
    visible = run(rag_home, "psql", "-tA", "-c",
                  "SELECT relallvisible = relpages FROM pg_class WHERE oid = 'rag.postings'::regclass")
    assert visible.stdout.strip() == "t"  # vacuumed: read from the index alone

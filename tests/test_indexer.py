"""Index runs against a real database: incremental bookkeeping, reuse, failures, locking."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fakes import HashEmbedder
from helpers import rows

from rag import db
from rag.config import ChunkSettings, SourceSpec
from rag.dispatcher import chunk_bytes
from rag.errors import IndexingError
from rag.indexer import index_source
from rag.providers import NoneEmbedder
from rag.storing import encode_json

SETTINGS = ChunkSettings(max_tokens=200, overlap=20)


def make_project(root: Path, files: int = 5) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (root / f"mod{i}.py").write_text(
            f'"""Module {i}."""\n\n\ndef handler_{i}(x):\n    return x + {i}\n\n\n'
            f"class Service{i}:\n    def run(self):\n        return handler_{i}(1)\n"
        )
    (root / "README.md").write_text("# Project\n\nSome docs.\n\n## Usage\n\nRun it.\n")
    (root / "shared.txt").write_text("the same text in every copy\n")
    return root


def connect(target: db.DatabaseTarget) -> psycopg.Connection[dict[str, Any]]:
    return db.connect(target)


def run(target: db.DatabaseTarget, root: Path, embedder: Any = None, name: str = "proj", **kw: Any) -> Any:
    spec = SourceSpec(name, "local", str(root))
    with connect(target) as conn:
        return index_source(conn, spec, root, embedder or HashEmbedder(), SETTINGS, **kw)


@pytest.mark.usefixtures("sections_unmerged")
def test_first_run_stores_files_chunks_embeddings_and_run(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    embedder = HashEmbedder()
    summary = run(rag_db, root, embedder)
    assert summary.status == "succeeded"
    assert (summary.new, summary.changed, summary.unchanged, summary.deleted) == (7, 0, 0, 0)
    stored = rows(rag_db, "SELECT count(*) AS n FROM rag.chunks")[0]["n"]
    assert summary.chunks_added == summary.chunks_total == stored > 7
    assert summary.embedded == len(set(embedder.embedded_texts)) == len(embedder.embedded_texts)
    coverage = rows(rag_db, "SELECT * FROM rag.embedding_coverage()")
    assert coverage == [{"model": "test@8", "dimensions": 8, "embedded_chunks": stored, "total_chunks": stored}]
    chunk = rows(rag_db, "SELECT c.metadata, f.content FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                         " WHERE f.path = 'mod1.py' ORDER BY c.ordinal LIMIT 1")[0]
    assert chunk["metadata"]["path"] == "mod1.py" and chunk["metadata"]["sourceType"] == "code"
    assert chunk["content"] == (root / "mod1.py").read_text()
    run_row = rows(rag_db, "SELECT * FROM rag.last_runs(1)")[0]
    assert run_row["status"] == "succeeded" and run_row["counts"]["new"] == 7
    assert rows(rag_db, "SELECT last_indexed_at IS NOT NULL AS ok FROM rag.sources")[0]["ok"]


def test_rerun_touch_change_delete(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    run(rag_db, root)
    again = run(rag_db, root)
    assert (again.new, again.changed, again.unchanged, again.embedded) == (0, 0, 7, 0)

    os.utime(root / "mod0.py", ns=(1, 10**18))  # new mtime, same bytes: not re-chunked
    (root / "mod1.py").write_text("def changed():\n    return 42\n")
    (root / "mod2.py").unlink()
    embedder = HashEmbedder()
    third = run(rag_db, root, embedder)
    assert (third.new, third.changed, third.unchanged, third.deleted) == (0, 1, 5, 1)
    assert embedder.embedded_texts and all("changed" in t for t in embedder.embedded_texts)
    assert rows(rag_db, "SELECT mtime_ns FROM rag.files WHERE path = 'mod0.py'")[0]["mtime_ns"] == 10**18
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.files WHERE path = 'mod2.py'")[0]["n"] == 0
    fourth = run(rag_db, root)
    assert (fourth.changed, fourth.unchanged) == (0, 6), "the touched file is skipped unread now"


def test_identical_text_is_embedded_once_across_sources_and_force(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    make_project(tmp_path / "a")
    make_project(tmp_path / "b")
    first = HashEmbedder()
    run(rag_db, tmp_path / "a", first, name="a")
    second = HashEmbedder()
    summary = run(rag_db, tmp_path / "b", second, name="b")
    assert second.embedded_texts == [] and summary.reused == summary.chunks_total
    forced = HashEmbedder()
    again = run(rag_db, tmp_path / "b", forced, name="b", force=True)
    assert again.changed == 7 and forced.embedded_texts == [], "--force re-chunks but reuses vectors"


def test_model_switch_embeds_everything_for_the_new_model(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    run(rag_db, root, NoneEmbedder())
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.embeddings")[0]["n"] == 0
    small = HashEmbedder(4, "small")
    summary = run(rag_db, root, small)
    assert summary.unchanged == 7 and summary.embedded == len(small.embedded_texts) > 0
    run(rag_db, root, HashEmbedder(8, "big"))
    models = rows(rag_db, "SELECT model, embedded_chunks = total_chunks AS full FROM rag.embedding_coverage()")
    assert models == [{"model": "big@8", "full": True}, {"model": "small@4", "full": True}]


def test_a_bad_file_is_recorded_and_does_not_stop_the_run(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path / "p")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    from rag.sources import folder

    real_read = folder.read_regular_file

    def read_bytes(path: Path, **limit: Any) -> bytes:
        if path.name == "mod3.py":
            raise PermissionError(13, "Permission denied")
        return real_read(path, **limit)

    monkeypatch.setattr(folder, "read_regular_file", read_bytes)
    summary = run(rag_db, root)
    assert summary.status == "succeeded"
    errors = {e["path"]: e["error"] for e in summary.errors}
    assert errors["mod3.py"] == "cannot read: Permission denied"
    assert "broken.pdf" in errors
    run_row = rows(rag_db, "SELECT errors, counts FROM rag.last_runs(1)")[0]
    assert {e["path"] for e in run_row["errors"]} == {"mod3.py", "broken.pdf"}
    assert run_row["counts"]["errors"] == 2
    assert rows(rag_db, "SELECT error IS NOT NULL AS e FROM rag.files WHERE path = 'broken.pdf'")[0]["e"]


def test_second_concurrent_run_stops_with_a_clear_message(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    run(rag_db, root)
    with connect(rag_db) as holder:
        source_id = holder.execute("SELECT id FROM rag.sources WHERE name = 'proj'").fetchone()["id"]  # type: ignore[index]
        holder.execute("SELECT rag.begin_run(%s)", (source_id,))
        with pytest.raises(IndexingError) as err:
            run(rag_db, root)
        assert "source 'proj' is being indexed by another process (run" in str(err.value)
    # The holder's connection ended without finish_run: the next run takes over.
    summary = run(rag_db, root)
    assert summary.status == "succeeded"
    statuses = [r["status"] for r in rows(rag_db, "SELECT status FROM rag.index_runs ORDER BY id")]
    assert statuses == ["succeeded", "interrupted", "succeeded"]


KILLED_RUN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from rag import db, indexer, storing
    from rag.config import ChunkSettings, SourceSpec
    from rag.providers import NoneEmbedder

    indexer.BATCH_FILES = 2
    real_store = storing.store_batch
    def slow_store(*args, **kwargs):
        stored = real_store(*args, **kwargs)
        time.sleep(0.05)
        return stored
    storing.store_batch = slow_store
    root = Path(sys.argv[2])
    with db.connect(db.DatabaseTarget(sys.argv[1], "test")) as conn:
        indexer.index_source(conn, SourceSpec("proj", "local", str(root)), root, NoneEmbedder(),
                             ChunkSettings(max_tokens=200, overlap=20))
    """
)


def wait_for_backends_to_exit(target: db.DatabaseTarget) -> None:
    """Until no other client is connected to the test's database: a killed client's backends may
    still commit the statement in flight, so counting before they exit races with them."""
    with db.connect(target) as conn:
        for _ in range(400):
            if not conn.execute("SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
                                " AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchone():
                return
            time.sleep(0.05)
    raise AssertionError("the killed run's backends still there after 20 s")


@pytest.mark.slow
def test_kill_9_leaves_each_file_old_or_new_and_the_next_run_finishes(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "p", files=200)
    run(rag_db, root, NoneEmbedder())
    for i in range(200):  # every file changes: the killed run is replacing old chunks
        (root / f"mod{i}.py").write_text(f"def renamed_{i}():\n    return {i}\n")
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, rag_db.url, str(root)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = rows(rag_db, "SELECT count(*) AS n FROM rag.chunks WHERE content LIKE '%renamed_%'")[0]["n"]
        if done >= 20:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_for_backends_to_exit(rag_db)

    for f in rows(rag_db, "SELECT f.path, f.sha256, f.content FROM rag.files f"):
        data = (root / f["path"]).read_bytes() if (root / f["path"]).exists() else None
        stored = [r["content"] for r in rows(
            rag_db, "SELECT c.content FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                    " WHERE f.path = %s ORDER BY c.ordinal", f["path"])]
        is_new = data is not None and f["sha256"] == hashlib.sha256(data).hexdigest()
        expected_text = data.decode() if is_new and data is not None else f["content"]
        expected = [c.content for c in chunk_bytes(expected_text.encode(), f["path"],
                                                   max_tokens=200, overlap=20).chunks]
        assert stored == expected, f"{f['path']} is neither fully old nor fully new"
    partially = rows(rag_db, "SELECT count(*) AS n FROM rag.chunks WHERE content LIKE '%renamed_%'")[0]["n"]
    assert 20 <= partially < 200, "the kill landed mid-run"

    summary = run(rag_db, root, NoneEmbedder())
    assert summary.status == "succeeded" and summary.changed == 200 - partially
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.chunks WHERE content LIKE '%renamed_%'")[0]["n"] == 200
    statuses = [r["status"] for r in rows(rag_db, "SELECT status FROM rag.index_runs ORDER BY id")]
    assert statuses == ["succeeded", "interrupted", "succeeded"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("SELECT rag.upsert_source('bad name', 'local', '/x')", "source_name 'bad name' must be"),
        ("SELECT rag.upsert_source('a', 'svn', '/x')", "source_type must be local, git or confluence, not 'svn'"),
        ("SELECT rag.upsert_source('proj', 'local', '/elsewhere')", "source 'proj' already indexes local"),
        ("SELECT * FROM rag.plan_files(1, '{}')", "scanned must be a JSON array"),
        ("SELECT rag.store_embeddings('m', 3, ARRAY['a'], ARRAY['[1,2]'])", "every vector must have 3 dimensions"),
        ("SELECT rag.store_embeddings('m', 3, ARRAY['a', 'b'], ARRAY['[1,2,3]'])", "2 content_hashes but 1 vectors"),
        ("SELECT rag.finish_run(1, 'done')", "run_status must be succeeded, failed or interrupted"),
        ("SELECT * FROM rag.replace_files(1, '[{\"path\": \"x\"}]')", "every file needs path, size, mtimeNs and sha256"),
    ],
)
def test_bookkeeping_functions_name_the_bad_argument(
    rag_db: db.DatabaseTarget, tmp_path: Path, call: str, message: str
) -> None:
    run(rag_db, make_project(tmp_path / "p", files=1), NoneEmbedder())
    with pytest.raises(psycopg.Error) as err:
        rows(rag_db, call)
    assert message in str(err.value)


def test_gc_prunes_only_unreferenced_embeddings(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    make_project(tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "only.txt").write_text("only in b\n")
    run(rag_db, tmp_path / "a", name="a")
    run(rag_db, tmp_path / "b", name="b")
    before = rows(rag_db, "SELECT count(*) AS n FROM rag.embeddings")[0]["n"]
    assert rows(rag_db, "SELECT rag.remove_source('b') AS n")[0]["n"] == 1
    assert rows(rag_db, "SELECT rag.gc() AS n")[0]["n"] == 1
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.embeddings")[0]["n"] == before - 1


def wrong_document_frequencies(target: db.DatabaseTarget) -> list[dict[str, Any]]:
    """Terms whose stored df is not their number of postings (a df of 0 counts as no row)."""
    return rows(target, "SELECT coalesce(s.term, p.term) AS term, s.df, p.postings"
                        " FROM (SELECT term, df FROM rag.term_stats WHERE df <> 0) s"
                        " FULL JOIN (SELECT term, count(*) AS postings FROM rag.postings GROUP BY term) p"
                        " ON p.term = s.term WHERE s.df IS DISTINCT FROM p.postings")


def test_parallel_batches_keep_keyword_statistics_exact(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rag.indexer.BATCH_FILES", 2)  # many small batches on both writers at once
    root = make_project(tmp_path / "p", files=60)
    run(rag_db, root, NoneEmbedder())
    for i in range(0, 60, 2):  # half change (their old chunks and postings go), one goes
        (root / f"mod{i}.py").write_text(f"def handler_{i}(y):\n    return y * {i}  # changed\n")
    (root / "mod1.py").unlink()
    second = run(rag_db, root, NoneEmbedder())
    assert (second.changed, second.deleted) == (30, 1)

    stats = rows(rag_db, "SELECT chunks, total_terms FROM rag.corpus_stats")[0]
    actual = rows(rag_db, "SELECT count(*) AS chunks, sum(term_count) AS total_terms FROM rag.chunks")[0]
    assert stats == actual
    assert wrong_document_frequencies(rag_db) == []
    orphans = rows(rag_db, "SELECT count(*) AS n FROM rag.postings p"
                           " WHERE NOT EXISTS (SELECT 1 FROM rag.chunks c WHERE c.id = p.chunk_id)")
    assert orphans[0]["n"] == 0
    lengths = rows(rag_db, "SELECT count(*) AS n FROM rag.postings p JOIN rag.chunks c ON c.id = p.chunk_id"
                           " WHERE p.term_count <> c.term_count")
    assert lengths[0]["n"] == 0

    with connect(rag_db) as conn:
        conn.execute("SELECT rag.remove_source('proj')")
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.postings")[0]["n"] == 0
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.term_stats WHERE df <> 0")[0]["n"] == 0
    assert rows(rag_db, "SELECT chunks, total_terms FROM rag.corpus_stats")[0] == {"chunks": 0, "total_terms": 0}


def test_a_source_being_indexed_cannot_be_removed(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    run(rag_db, make_project(tmp_path / "p"), NoneEmbedder())
    with connect(rag_db) as indexing, connect(rag_db) as other:
        source_id = indexing.execute("SELECT id FROM rag.sources WHERE name = 'proj'").fetchone()["id"]  # type: ignore[index]
        run_id = indexing.execute("SELECT rag.begin_run(%s) AS id", (source_id,)).fetchone()["id"]  # type: ignore[index]
        with pytest.raises(psycopg.errors.LockNotAvailable, match="source 'proj' is being indexed"):
            other.execute("SELECT rag.remove_source('proj')")
        indexing.execute("SELECT rag.finish_run(%s, 'succeeded')", (run_id,))
        assert other.execute("SELECT rag.remove_source('proj') AS n").fetchone()["n"] > 0  # type: ignore[index]


def test_a_failed_batch_stops_the_run_and_marks_it_failed(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag import indexer, storing

    monkeypatch.setattr(indexer, "BATCH_FILES", 1)
    real_store = storing.store_batch
    stored: list[str] = []

    def failing_store(conn: Any, source_id: int, batch: Any) -> tuple[int, int]:
        path = json.loads(batch[0])["path"]
        if path == "mod3.py":
            raise psycopg.errors.DiskFull("could not extend file")
        stored.append(path)
        return real_store(conn, source_id, batch)

    monkeypatch.setattr(storing, "store_batch", failing_store)
    with pytest.raises(psycopg.errors.DiskFull):
        run(rag_db, make_project(tmp_path / "p", files=40), NoneEmbedder())
    assert len(stored) < 40, "chunking stopped soon after the failure"
    assert rows(rag_db, "SELECT status FROM rag.index_runs")[0]["status"] == "failed"
    in_db = {r["path"] for r in rows(rag_db, "SELECT path FROM rag.files")}
    assert in_db == set(stored), "every batch that succeeded is stored whole, the failed one not at all"


class _KeyWatcher:
    """A reporter that notes, once every batch is submitted, whether the postings key exists."""

    def __init__(self, target: db.DatabaseTarget):
        self.target = target
        self.key_while_storing: bool | None = None

    def scanned(self, found: int, skipped: dict[str, int]) -> None: ...
    def planned(self, to_index: int, unchanged: int, deleted: int) -> None: ...
    def embedding_started(self, total: int) -> None: ...
    def embedded(self, count: int) -> None: ...

    def chunked(self, chunks: int, files: int) -> None:
        key = rows(self.target, "SELECT to_regclass('rag.postings_pkey') IS NOT NULL AS k")[0]["k"]
        self.key_while_storing = key


def postings_key(target: db.DatabaseTarget) -> bool:
    return bool(rows(target, "SELECT to_regclass('rag.postings_pkey') IS NOT NULL AS k")[0]["k"])


def test_first_index_loads_postings_without_their_key_then_builds_it(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("rag.indexer.BULK_MIN_FILES", 20)
    monkeypatch.setattr("rag.indexer.BATCH_FILES", 4)
    root = make_project(tmp_path / "p", files=30)
    spec = SourceSpec("proj", "local", str(root))
    watcher = _KeyWatcher(rag_db)
    with connect(rag_db) as conn:
        index_source(conn, spec, root, NoneEmbedder(), SETTINGS, reporter=watcher)
    assert watcher.key_while_storing is False  # an empty corpus: bulk loaded
    assert postings_key(rag_db)
    assert wrong_document_frequencies(rag_db) == []  # not counted while loading, counted at the end
    # The references were resolved meanwhile, on a connection of their own.
    graph = rows(rag_db, "SELECT refs, resolved, pending FROM rag.graph_status()")
    assert graph == [{"refs": 30, "resolved": 30, "pending": 0}]
    visibility = rows(rag_db, "SELECT relpages, relallvisible FROM pg_class WHERE oid = 'rag.postings'::regclass")
    assert visibility[0]["relpages"] > 0
    # Vacuumed: index-only reads stay so (unvacuumed, no page is all-visible). A snapshot taken
    # meanwhile, e.g. autovacuum's ANALYZE of the fresh table, may keep one page's newest rows out.
    assert visibility[0]["relallvisible"] >= visibility[0]["relpages"] - 1
    bulk = rows(rag_db, "SELECT chunk_id, score FROM rag.bm25_search('handler run service', 50)")

    # --force re-stores every file into a corpus that is not empty: the key stays.
    watcher = _KeyWatcher(rag_db)
    with connect(rag_db) as conn:
        index_source(conn, spec, root, NoneEmbedder(), SETTINGS, force=True, reporter=watcher)
    assert watcher.key_while_storing is True
    keyed = rows(rag_db, "SELECT chunk_id, score FROM rag.bm25_search('handler run service', 50)")
    assert len(bulk) == 31  # every module, and the README ("Run it.")
    assert [round(r["score"], 9) for r in keyed] == [round(r["score"], 9) for r in bulk]
    duplicated = rows(rag_db, "SELECT count(*) AS n FROM (SELECT 1 FROM rag.postings"
                              " GROUP BY term, chunk_id HAVING count(*) > 1) d")
    assert duplicated[0]["n"] == 0


def test_a_killed_bulk_load_leaves_the_key_to_the_next_run(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    loader = connect(rag_db)
    assert loader.execute("SELECT rag.begin_bulk_load() AS b").fetchone() == {"b": True}
    with connect(rag_db) as other:
        # Left alone while the loading session lives.
        assert other.execute("SELECT rag.ensure_postings_key() AS e").fetchone() == {"e": False}
    assert not postings_key(rag_db)
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="being loaded by a first index run"):
        rows(rag_db, "SELECT * FROM rag.bm25_search('anything')")
    # Another source indexed meanwhile: its postings go in, their document frequencies wait for the key.
    run(rag_db, make_project(tmp_path / "early"), NoneEmbedder(), name="early")
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.postings")[0]["n"] > 0
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.term_stats")[0]["n"] == 0
    loader.close()  # as if killed: its advisory lock goes with its session
    run(rag_db, make_project(tmp_path / "p"), NoneEmbedder())
    assert postings_key(rag_db)  # rebuilt by the next run's begin_run
    assert wrong_document_frequencies(rag_db) == []
    with connect(rag_db) as conn:  # a corpus that is not empty is never bulk loaded
        assert conn.execute("SELECT rag.begin_bulk_load() AS b").fetchone() == {"b": False}
        assert conn.execute("SELECT rag.ensure_postings_key() AS e").fetchone() == {"e": False}
    assert postings_key(rag_db)


# Hostile trees and failures: what the run record and the summary say.


def test_bad_names_are_per_file_errors_and_their_siblings_are_indexed(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "p")
    open(os.path.join(bytes(root), b"caf\xe9.py"), "wb").close()
    deep = root
    for _ in range(12):
        deep = deep / ("d" * 199)
    deep.mkdir(parents=True)
    (deep / "long.py").write_text("x = 1\n")
    summary = run(rag_db, root)
    assert summary.status == "succeeded" and summary.new == 7
    errors = {e["path"]: e["error"] for e in summary.errors}
    assert "not valid UTF-8" in errors["caf\\xe9.py"]
    assert any("longer than 2048 bytes" in e for e in errors.values())
    recorded = rows(rag_db, "SELECT errors FROM rag.last_runs(1)")[0]["errors"]
    assert {e["path"] for e in recorded} == set(errors)
    again = run(rag_db, root)  # and on every run after
    assert again.status == "succeeded" and again.unchanged == 7


class _SwapToFifo:
    """Between the scan and the reading, replaces a scanned file by a FIFO."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def scanned(self, found: int, skipped: dict[str, int]) -> None:
        self.path.unlink()
        os.mkfifo(self.path)

    def planned(self, to_index: int, unchanged: int, deleted: int) -> None: ...
    def chunked(self, chunks: int, files: int) -> None: ...
    def embedding_started(self, total: int) -> None: ...
    def embedded(self, count: int) -> None: ...


def test_a_fifo_swapped_in_after_the_scan_is_an_error_not_a_hang(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "p")
    signal.alarm(60)  # before the fix, reading the FIFO blocked forever
    try:
        summary = run(rag_db, root, reporter=_SwapToFifo(root / "mod1.py"))
    finally:
        signal.alarm(0)
    assert summary.status == "succeeded" and summary.new == 6
    assert summary.errors == [
        {"path": "mod1.py", "error": "cannot read: no longer a regular file (replaced since the scan)"}
    ]


class _FailingEmbedder(HashEmbedder):
    def embed_documents(self, texts: list[str], progress: Any = None) -> list[list[float]]:
        from rag.errors import ProviderError

        raise ProviderError("openai: no answer within the 60 s deadline after 1 attempt")


def test_a_failed_run_records_why(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    from rag.errors import ProviderError

    with pytest.raises(ProviderError):
        run(rag_db, make_project(tmp_path / "p"), _FailingEmbedder())
    record = rows(rag_db, "SELECT status, errors FROM rag.last_runs(1)")[0]
    assert record["status"] == "failed"
    assert record["errors"] == [{"error": "openai: no answer within the 60 s deadline after 1 attempt"}]


def test_invalid_utf8_content_is_a_warning_in_the_summary_and_the_record(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    root = make_project(tmp_path / "p")
    (root / "latin1.txt").write_bytes(b"caf\xe9 au lait\n")
    summary = run(rag_db, root)
    assert summary.warnings == [
        {"path": "latin1.txt", "warning": "invalid UTF-8 decoded with replacement characters"}
    ]
    record = rows(rag_db, "SELECT errors, counts FROM rag.last_runs(1)")[0]
    assert {"path": "latin1.txt", "warning": "invalid UTF-8 decoded with replacement characters"} in record["errors"]
    assert record["counts"]["warnings"] == 1 and record["counts"]["errors"] == 0


def test_a_run_whose_process_died_is_not_shown_as_running(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    run(rag_db, make_project(tmp_path / "p"))
    with connect(rag_db) as holder:
        source_id = holder.execute("SELECT id FROM rag.sources WHERE name = 'proj'").fetchone()["id"]  # type: ignore[index]
        holder.execute("SELECT rag.begin_run(%s)", (source_id,))
        assert rows(rag_db, "SELECT status FROM rag.last_runs(1)")[0]["status"] == "running"
    # The session (a killed indexer) is gone, its lock with it; no run of the source since.
    assert rows(rag_db, "SELECT status FROM rag.last_runs(1)")[0]["status"] == "interrupted"


class _SlowEmbedder(HashEmbedder):
    def embed_documents(self, texts: list[str], progress: Any = None) -> list[list[float]]:
        time.sleep(0.3)
        return super().embed_documents(texts, progress)


def test_a_phase_that_outlives_its_deadline_fails_the_run_and_says_which(
    rag_db: db.DatabaseTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag import indexer

    monkeypatch.setattr(indexer, "EMBED_BATCH", 2)  # several rounds, each 0.3 s
    root = make_project(tmp_path / "p")
    spec = SourceSpec("proj", "local", str(root))
    settings = ChunkSettings(max_tokens=200, overlap=20, phase_timeout=0.5)
    with connect(rag_db) as conn, pytest.raises(IndexingError) as err:
        index_source(conn, spec, root, _SlowEmbedder(), settings)
    assert str(err.value).startswith("embedding took longer than indexing.phaseTimeout (0.5 s)")
    record = rows(rag_db, "SELECT status, errors FROM rag.last_runs(1)")[0]
    assert record["status"] == "failed" and "phaseTimeout" in record["errors"][0]["error"]
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.files")[0]["n"] == 7, "what was stored is kept"


def test_what_runs_meanwhile_on_its_own_connection_fails_the_run(rag_db: db.DatabaseTarget) -> None:
    from rag.storing import meanwhile

    with (connect(rag_db) as conn, pytest.raises(psycopg.errors.DivisionByZero),
          meanwhile(conn, lambda own: own.execute("SELECT 1 / %s", (0,)))):
        conn.execute("SELECT 1")  # the block goes on meanwhile


def test_batches_go_as_the_same_json_whichever_encoder_takes_them() -> None:
    """orjson encodes batches; what it refuses (a non-string key, a lone surrogate) goes through json."""
    plain = {"path": "é/ü.py", "chunks": [{"content": "x = 1\n", "metadata": {"startLine": 1}}], "graph": None}
    assert json.loads(encode_json(plain)) == plain
    assert encode_json({1: "a"}) == json.dumps({1: "a"}).encode()
    assert encode_json({"text": "\ud800"}) == json.dumps({"text": "\ud800"}).encode()

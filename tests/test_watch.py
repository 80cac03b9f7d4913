"""`rag watch` and the watcher under it: real file-system events in temporary folders,
synced into a real database (keyword-only, so no model is loaded)."""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from typer.testing import CliRunner

from rag import db, watcher
from rag.cli import app as app_cli
from rag.config import SourceSpec
from rag.schemas import WatchEvent
from rag.search import SearchRequest
from rag.service import RagService, folder_source
from rag.sources.scan import scan_paths

TIMEOUT = 20.0  # seconds to wait for an event on a loaded machine


@pytest.fixture
def service(tmp_path: Path, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch) -> Iterator[RagService]:
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    cfg = tmp_path / "rag.config.yaml"
    cfg.write_text("embeddings: {provider: none}\n")
    with RagService(str(cfg)) as svc:
        yield svc


class Running:
    """A watcher on a thread, its events in a queue."""

    def __init__(self, service: RagService, specs: list[SourceSpec], **kwargs: Any) -> None:
        self.events: queue.Queue[WatchEvent] = queue.Queue()
        self.seen: list[WatchEvent] = []
        self.watcher = watcher.Watcher(service, specs, self.events.put, **kwargs)
        self.thread = threading.Thread(target=self.watcher.run, daemon=True)
        self.thread.start()

    def wait(self, match: Callable[[WatchEvent], bool], what: str) -> WatchEvent:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(event)
            if match(event):
                return event
        raise AssertionError(f"no {what} within {TIMEOUT} s; events: {self.seen}")

    def sync(self, source: str = "app") -> WatchEvent:
        return self.wait(lambda e: e.event == "sync" and e.source == source, f"sync of {source}")

    def syncs(self, *sources: str) -> None:
        """Waits for a sync of each source, in whatever order they come."""
        waiting = set(sources)
        while waiting:
            event = self.wait(lambda e: e.event == "sync" and e.source in waiting, f"sync of {sorted(waiting)}")
            waiting.discard(event.source)

    def stop(self) -> None:
        self.watcher.stop()
        self.thread.join(2)
        assert not self.thread.is_alive()


def stored(url: str, source: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT f.path, f.content FROM rag.files f JOIN rag.sources s ON s.id = f.source_id "
            "WHERE s.name = %s", (source,)).fetchall()
    return {path: content for path, content in rows}


def make_app(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text("def answer():\n    return 42\n")
    (root / "README.md").write_text("# App\n\nAn app.\n")
    return root


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return make_app(tmp_path / "app")


def test_plan_files_with_a_scope(rag_db: db.DatabaseTarget) -> None:
    with psycopg.connect(rag_db.url, autocommit=True) as conn:
        source_id = conn.execute("SELECT rag.upsert_source('s', 'local', '/s')").fetchone()[0]
        files = [{"path": p, "size": 1, "mtimeNs": 1, "sha256": "x", "chunks": []}
                 for p in ("a.py", "d/b.py", "d/e/c.py", "dx.py", "other.py")]
        conn.execute("SELECT rag.replace_files(%s, %s)", (source_id, Jsonb(files)))

        def plan(scanned: list[dict[str, object]], scope: list[str] | None) -> set[tuple[str, str]]:
            rows = conn.execute("SELECT path, action FROM rag.plan_files(%s, %s, false, %s)",
                                (source_id, Jsonb(scanned), scope)).fetchall()
            return set(rows)

        # The folder d went away, a.py changed, new.py appeared; other.py and dx.py are outside the scope.
        assert plan([{"path": "a.py", "size": 2, "mtimeNs": 1}, {"path": "new.py", "size": 1, "mtimeNs": 1}],
                    ["a.py", "d", "new.py", "gone.tmp"]) == {
            ("a.py", "changed"), ("new.py", "new"), ("d/b.py", "deleted"), ("d/e/c.py", "deleted")}
        assert plan([{"path": "d/e/c.py", "size": 1, "mtimeNs": 1}], ["d/e"]) == {("d/e/c.py", "unchanged")}
        assert len(plan([], None)) == 5  # no scope: the whole source, as before
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="scope entries must be paths relative"):
            plan([], ["/abs"])


def test_scan_paths_applies_the_rules_of_a_full_scan(app: Path) -> None:
    (app / ".gitignore").write_text("generated/\n*.log\n")
    (app / "generated").mkdir()
    (app / "generated" / "x.py").write_text("x = 1\n")
    (app / "pkg" / "run.log").write_text("log\n")
    (app / "pkg" / ".core.py.swp").write_bytes(b"swap")
    (app / "pkg" / "core.py~").write_text("backup\n")
    (app / "pkg" / "sub").mkdir()
    (app / "pkg" / "sub" / "deep.py").write_text("deep = 1\n")
    result = scan_paths(app, ["generated/x.py", "pkg/run.log", "pkg/.core.py.swp", "pkg/core.py~",
                              "pkg", "pkg/core.py", "missing.py", "node_modules/y.js"])
    assert [f.path for f in result.files] == ["pkg/core.py", "pkg/sub/deep.py"]
    assert result.skipped["gitignore"] == ["generated/", "pkg/run.log"]
    assert sorted(result.skipped["builtin"]) == ["pkg/.core.py.swp", "pkg/core.py~"]


def test_edits_creates_deletes_and_renames_are_synced(service: RagService, app: Path) -> None:
    url = os.environ["RAG_DATABASE_URL"]
    run = Running(service, [folder_source(app, "app")])
    try:
        first = run.sync()
        assert first.full and first.files == 2 and first.chunks_added >= 2
        (app / "pkg" / "core.py").write_text("def answer():\n    return 43\n")
        assert run.sync().files == 1
        assert "43" in stored(url, "app")["pkg/core.py"]
        (app / "pkg" / "new.py").write_text("def zebra():\n    pass\n")
        assert run.sync().chunks_added >= 1
        (app / "pkg" / "new.py").rename(app / "pkg" / "renamed.py")
        run.sync()
        assert "pkg/renamed.py" in stored(url, "app") and "pkg/new.py" not in stored(url, "app")
        (app / "pkg").rename(app / "lib")  # a folder moved: its files go, the new folder's come
        run.sync()
        assert set(stored(url, "app")) == {"README.md", "lib/core.py", "lib/renamed.py"}
        (app / "README.md").unlink()
        event = run.sync()
        assert event.chunks_removed >= 1 and "README.md" not in stored(url, "app")
        hits = service.search_response(SearchRequest("zebra"))
        assert [h.path for h in hits.hits] == ["lib/renamed.py"]
    finally:
        run.stop()
    assert not [e for e in run.seen if e.event == "error"]


def test_an_ignore_file_change_replans_the_source_and_a_burst_is_one_run(service: RagService, app: Path) -> None:
    url = os.environ["RAG_DATABASE_URL"]
    run = Running(service, [folder_source(app, "app")])
    try:
        run.sync()
        (app / ".gitignore").write_text("pkg/\n")
        event = run.sync()
        assert event.full and "pkg/core.py" not in stored(url, "app")
        (app / ".gitignore").unlink()
        run.sync()
        assert "pkg/core.py" in stored(url, "app")

        burst = app / "burst"
        burst.mkdir()
        for i in range(300):
            (burst / f"f{i}.py").write_text(f"def f{i}():\n    return {i}\n")
        synced = 0
        syncs = 0
        while synced < 300:
            synced += run.sync().files
            syncs += 1
        assert synced == 300 and syncs <= 2, "a burst is synced in one run (two if the sync met its tail)"
        assert len([p for p in stored(url, "app") if p.startswith("burst/")]) == 300
    finally:
        run.stop()


@pytest.mark.slow
def test_editor_artefacts_never_produce_errors(service: RagService, app: Path) -> None:
    url = os.environ["RAG_DATABASE_URL"]
    run = Running(service, [folder_source(app, "app")])
    try:
        run.sync()
        core = app / "pkg" / "core.py"
        # Vim: swap file, write test file 4913, backup, then the new text; Emacs lock file;
        # an atomic save: a temporary file renamed over the original.
        (app / "pkg" / ".core.py.swp").write_bytes(b"b0VIM 9.0\0\0")
        (app / "pkg" / "4913").write_text("")
        (app / "pkg" / "4913").unlink()
        (app / "pkg" / "core.py~").write_text(core.read_text())
        (app / "pkg" / ".#core.py").symlink_to("user@host.1234")
        tmp = app / "pkg" / "core.py.tmp.1234"
        tmp.write_text("def answer():\n    return 44\n")
        tmp.rename(core)
        for i in range(20):  # files that appear and vanish within the debounce
            flash = app / f"flash{i}.txt"
            flash.write_text("x")
            flash.unlink()
        (app / "pkg" / ".core.py.swp").unlink()
        run.sync()
        time.sleep(0.5)
        assert set(stored(url, "app")) == {"README.md", "pkg/core.py"}
        assert "44" in stored(url, "app")["pkg/core.py"]
    finally:
        run.stop()
    assert not [e for e in run.seen if e.event == "error" or e.errors]


def test_one_bad_file_is_reported_and_the_rest_synced(service: RagService, app: Path) -> None:
    url = os.environ["RAG_DATABASE_URL"]
    run = Running(service, [folder_source(app, "app")])
    try:
        run.sync()
        (app / "broken.pdf").write_bytes(b"%PDF-1.4 this is no pdf")
        (app / "good.md").write_text("# Good\n\ntext\n")
        event = run.sync()
        assert [e.path for e in event.errors] == ["broken.pdf"]
        assert "broken.pdf" in watcher.describe(event) and "good.md" in stored(url, "app")
    finally:
        run.stop()


def test_a_deleted_folder_is_reported_and_the_others_kept_fresh(service: RagService, tmp_path: Path) -> None:
    url = os.environ["RAG_DATABASE_URL"]
    one, two = make_app(tmp_path / "one"), make_app(tmp_path / "two")
    run = Running(service, [folder_source(one), folder_source(two)])
    try:
        run.syncs("one", "two")  # (their first syncs come in either order)
        moved = tmp_path / "one-moved"
        one.rename(moved)
        missing = run.wait(lambda e: e.event == "missing", "missing folder")
        assert missing.source == "one" and "gone" in (missing.message or "")
        (two / "later.md").write_text("# Later\n")
        run.sync("two")
        assert "later.md" in stored(url, "two")
        moved.rename(one)
        (one / "back.md").write_text("# Back\n")
        back = run.sync("one")
        assert back.full and "back.md" in stored(url, "one")
        assert any(e.event == "watching" and "is back" in (e.message or "") for e in run.seen)
    finally:
        run.stop()


@pytest.mark.slow
def test_a_restarted_watcher_catches_up(service: RagService, app: Path) -> None:
    url = os.environ["RAG_DATABASE_URL"]
    run = Running(service, [folder_source(app, "app")])
    run.sync()
    run.stop()
    (app / "while-stopped.md").write_text("# Missed\n")
    (app / "README.md").unlink()
    run = Running(service, [folder_source(app, "app")])
    try:
        event = run.sync()
        assert event.full and event.files == 2
        assert set(stored(url, "app")) == {"pkg/core.py", "while-stopped.md"}
    finally:
        run.stop()


@pytest.mark.slow
def test_waits_quietly_for_a_concurrent_index_run(service: RagService, app: Path) -> None:
    url = os.environ["RAG_DATABASE_URL"]
    run = Running(service, [folder_source(app, "app")])
    try:
        run.sync()
        with psycopg.connect(url, autocommit=True) as other:
            source_id = other.execute("SELECT id FROM rag.list_sources() WHERE name = 'app'").fetchone()[0]
            run_id = other.execute("SELECT rag.begin_run(%s)", (source_id,)).fetchone()[0]
            (app / "during.md").write_text("# During\n")
            time.sleep(2.5)
            assert "during.md" not in stored(url, "app")
            other.execute("SELECT rag.finish_run(%s, 'succeeded')", (run_id,))
        run.sync()
        assert "during.md" in stored(url, "app")
    finally:
        run.stop()
    assert not [e for e in run.seen if e.event == "error"], "waiting for a lock is silent"


def test_survives_the_database_going_away(service: RagService, app: Path, rag_db: db.DatabaseTarget) -> None:
    """The database refusing connections and dropping them, as a restart does: one message, then syncs."""
    name = psycopg.conninfo.conninfo_to_dict(rag_db.url)["dbname"]
    run = Running(service, [folder_source(app, "app")])
    try:
        run.sync()
        admin_url = psycopg.conninfo.make_conninfo(rag_db.url, dbname="postgres")
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            (app / "offline.md").write_text("# Offline\n")
            error = run.wait(lambda e: e.event == "error", "database error")
            assert "retrying" in (error.message or "")
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        run.sync()
        assert "offline.md" in stored(rag_db.url, "app")
    finally:
        run.stop()
    assert len([e for e in run.seen if e.event == "error"]) == 1, "said once, not per retry"


def test_stat_scan_when_events_cannot_be_had(service: RagService, app: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS watch limit: one message, then a periodic stat scan of the source."""
    import watchfiles._rust_notify

    class LimitReached:
        def __init__(self, *args: object) -> None:
            raise OSError("OS file watch limit reached. about [\"/x\"]")

    monkeypatch.setattr(watchfiles._rust_notify, "RustNotify", LimitReached)
    monkeypatch.setattr(watcher, "STAT_SCAN_S", 0.5)
    run = Running(service, [folder_source(app, "app")])
    try:
        limit = run.wait(lambda e: e.event == "stat-scan", "stat-scan notice")
        assert "max_user_watches" in (limit.message or "")
        run.sync()
        (app / "polled.md").write_text("# Polled\n")
        assert run.sync().files == 1
    finally:
        run.stop()
    assert len([e for e in run.seen if e.event == "stat-scan"]) == 1


@pytest.mark.slow
def test_rag_watch_cli_json_lines_status_and_sigterm(tmp_path: Path, rag_db: db.DatabaseTarget, app: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "rag.config.yaml"
    cfg.write_text("embeddings: {provider: none}\n")
    env = {**os.environ, "RAG_DATABASE_URL": rag_db.url}
    with subprocess.Popen([sys.executable, "-c", "from rag.cli import main; main()", "--config", str(cfg),
                           "watch", "--path", str(app), "--name", "app", "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
        try:
            assert proc.stdout is not None and proc.stderr is not None
            lines = [json.loads(proc.stdout.readline()) for _ in range(2)]
            assert lines[0]["event"] == "watching" and lines[1]["event"] == "sync"
            assert lines[1]["source"] == "app" and lines[1]["files"] == 2
            (app / "cli.md").write_text("# CLI\n")
            line = json.loads(proc.stdout.readline())
            assert line["event"] == "sync" and line["files"] == 1 and line["chunksAdded"] == 1
            # Another process's rag status lists the source as watched, by the watcher's backend.
            monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
            result = CliRunner().invoke(app_cli, ["--config", str(cfg), "status"], catch_exceptions=False)
            assert result.exit_code == 0 and "watched:      app by pid " in result.stdout, result.stdout
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            proc.wait(5)
            assert time.monotonic() - started < 1.0
            assert proc.returncode == 0, proc.stderr.read()
        finally:
            proc.kill()


def test_the_mcp_server_keeps_its_sources_fresh(service: RagService, app: Path, tmp_path: Path) -> None:
    import anyio
    from mcp import Client

    from rag.mcp_server import build_server

    other = make_app(tmp_path / "other")
    service.index(folder_source(other, "other"))  # indexed before: watched from the start
    server = build_server(service, preload=False, watch=True)

    async def session() -> tuple[float, dict[str, object]]:
        async with Client(server) as client:
            indexed = await client.call_tool("index", {"path": str(app), "name": "app"})
            assert not indexed.is_error
            for folder, word in ((app, "quokka"), (other, "wombat")):
                await anyio.sleep(0.5)
                (folder / "pkg" / "core.py").write_text(f"def {word}():\n    return 1\n")
                started = time.monotonic()
                while True:
                    found = await client.call_tool("search", {"query": word})
                    assert found.structured_content is not None
                    if found.structured_content["results"]:
                        break
                    assert time.monotonic() - started < TIMEOUT, f"{word} never became searchable"
                    await anyio.sleep(0.05)
            status = await client.call_tool("status", {})
            assert status.structured_content is not None
            return time.monotonic() - started, status.structured_content

    seconds, status = anyio.run(session)
    assert seconds < 5, "an edit is searchable through the server within seconds (1 s p95 in make bench-watch)"
    watched = {s["name"]: s for s in status["watch"]["sources"]}  # type: ignore[index]
    assert set(watched) == {"app", "other"}
    assert watched["app"]["state"] == "watching" and watched["app"]["lastSyncAt"]
    assert watched["app"]["pendingChanges"] == 0 and watched["other"]["syncs"] >= 1
    assert server.watcher is None and service.watch_status is None, "the session's end stopped the watcher"


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_git_sources_are_fetched_on_an_interval(service: RagService, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from rag.service import git_source

    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home"))
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    git("init", "--bare", "-b", "main", str(remote), cwd=tmp_path)
    git("clone", str(remote), str(work), cwd=tmp_path)
    (work / "lib.py").write_text("def first():\n    pass\n")
    git("add", ".", cwd=work)
    git("commit", "-m", "one", cwd=work)
    git("push", "origin", "HEAD:main", cwd=work)
    run = Running(service, [git_source(f"file://{remote}", "main", "lib")], git_poll_s=0.5)
    try:
        assert run.sync("lib").files == 1
        (work / "more.py").write_text("def second():\n    pass\n")
        git("add", ".", cwd=work)
        git("commit", "-m", "two", cwd=work)
        git("push", "origin", "HEAD:main", cwd=work)
        moved = run.sync("lib")
        assert moved.files == 1 and moved.chunks_added == 1
        assert set(stored(os.environ["RAG_DATABASE_URL"], "lib")) == {"lib.py", "more.py"}
    finally:
        run.stop()
    assert not [e for e in run.seen if e.event == "error"]


def test_a_source_that_cannot_be_synced_is_said_once(service: RagService, tmp_path: Path) -> None:
    one, two = make_app(tmp_path / "one"), make_app(tmp_path / "two")
    service.index(folder_source(one, "taken"))
    run = Running(service, [folder_source(two, "taken"), folder_source(one, "one")])
    try:
        error = run.wait(lambda e: e.event == "error", "the refusal")
        assert error.source == "taken" and "already indexes" in (error.message or "")
        if not any(e.event == "sync" and e.source == "one" for e in run.seen):  # may come first
            run.sync("one")
        (two / "again.md").write_text("# Again\n")
        (one / "later.md").write_text("# Later\n")
        assert run.sync("one").files == 1
    finally:
        run.stop()
    assert len([e for e in run.seen if e.event == "error"]) == 1

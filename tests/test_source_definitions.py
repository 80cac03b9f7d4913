"""A source's definition changes only when the user asks (#42.1), and one folder under two names
is said at index time and never doubles a result list (#42.2)."""

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import rag_process, rows
from plugins.mcp import Harness

from rag import db, watcher
from rag.service import RagService


def make_flask(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def route():\n    return 'flask app'\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_app.py").write_text("def test_route():\n    assert route()\n")
    return root


@pytest.fixture
def flask(tmp_path: Path, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder indexed ad hoc as 'flask' (tests included), and a config that defines 'flask'
    over it without its tests."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    root = make_flask(tmp_path / "flask")
    (tmp_path / "rag.config.yaml").write_text(
        "embeddings: {provider: none}\n"
        f"sources:\n  - {{name: flask, type: local, path: {root}, exclude: ['tests/**']}}\n")
    (tmp_path / "adhoc.yaml").write_text("embeddings: {provider: none}\n")
    indexed = rag_process("--config", str(tmp_path / "adhoc.yaml"), "index", "--path", str(root), "--name", "flask")
    assert indexed.returncode == 0, indexed.stderr
    return root


def indexed_paths(target: db.DatabaseTarget) -> list[str]:
    return [r["path"] for r in rows(target, "SELECT path FROM rag.files ORDER BY path")]


@pytest.fixture
def service(tmp_path: Path, flask: Path) -> Iterator[RagService]:
    with RagService(str(tmp_path / "rag.config.yaml")) as svc:
        yield svc


def test_a_background_sync_keeps_the_indexed_definition(
        service: RagService, flask: Path, rag_db: db.DatabaseTarget) -> None:
    [spec] = service.sources_to_watch()
    assert spec.exclude == ()
    running = watcher.Watcher(service, [spec])
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not running.status().sources[0].syncs:
            assert time.monotonic() < deadline, "the catch-up sync never ran"
            time.sleep(0.05)
    finally:
        running.stop()
        thread.join(5)
    assert indexed_paths(rag_db) == ["src/app.py", "tests/test_app.py"]


def test_status_names_the_command_that_applies_a_changed_definition(
        tmp_path: Path, flask: Path, rag_db: db.DatabaseTarget) -> None:
    done = rag_process("status", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert ("config:       source flask differs from its index (exclude: [] in the index, ['tests/**'] in "
            "the config); rag index flask applies it") in done.stdout.splitlines()
    assert rag_process("index", "flask", cwd=tmp_path).returncode == 0
    assert indexed_paths(rag_db) == ["src/app.py"]
    assert "config:" not in rag_process("status", cwd=tmp_path).stdout


def test_mcp_status_names_the_index_tool(tmp_path: Path, flask: Path, make_harness: Callable[..., Harness]) -> None:
    harness = make_harness({"embeddings": {"provider": "none"},
                            "sources": [{"name": "flask", "type": "local", "path": str(flask), "exclude": ["tests/**"]}]})
    assert harness.ok("status")["configChanges"] == [{
        "source": "flask", "changes": ["exclude: [] in the index, ['tests/**'] in the config"],
        "apply": 'index(source="flask") applies it'}]


def test_one_folder_under_two_names_is_said_and_found_once(
        tmp_path: Path, flask: Path, rag_db: db.DatabaseTarget, make_harness: Callable[..., Harness]) -> None:
    done = rag_process("--config", str(tmp_path / "adhoc.yaml"), "index", "--path", str(flask), "--name", "web")
    assert done.returncode == 0, done.stderr
    assert (f"  Warning: the folder {flask} is also indexed as source 'flask'; searches show its files once; "
            "rag remove web drops this copy") in done.stderr.splitlines()
    found = rag_process("--config", str(tmp_path / "adhoc.yaml"), "search", "route", "--json")
    results = json.loads(found.stdout)["results"]
    assert sorted(r["path"] for r in results) == ["src/app.py", "tests/test_app.py"]
    harness = make_harness({"embeddings": {"provider": "none"}})
    again = harness.ok("index", {"path": str(flask), "name": "web"})
    assert again["warnings"] == [f"the folder {flask} is also indexed as source 'flask'; searches show its "
                                 'files once; remove_source(name="web") drops this copy']
    assert len(harness.ok("search", {"query": "route"})["results"]) == 2


def test_a_subfolder_indexed_under_a_second_name_is_said_and_found_once(
        tmp_path: Path, flask: Path, rag_db: db.DatabaseTarget) -> None:
    """#56: a folder indexed as a subfolder of a first source gave no warning, and search showed
    the same absolute path twice."""
    adhoc = str(tmp_path / "adhoc.yaml")
    done = rag_process("--config", adhoc, "index", "--path", str(flask / "src"), "--name", "web")
    assert done.returncode == 0, done.stderr
    assert (f"  Warning: the folder {flask / 'src'} is also indexed within source 'flask' ({flask}); "
            "searches show its files once; rag remove web drops this copy") in done.stderr.splitlines()
    again = rag_process("--config", adhoc, "index", "flask", "--force")
    assert (f"  Warning: its subfolder {flask / 'src'} is also indexed as source 'web'; searches show its "
            "files once; rag remove web drops this copy") in again.stderr.splitlines()
    found = json.loads(rag_process("--config", adhoc, "search", "route", "--json").stdout)["results"]
    assert sorted(r["absolutePath"] for r in found) == [str(flask / "src" / "app.py"),
                                                        str(flask / "tests" / "test_app.py")]

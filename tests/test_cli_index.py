"""`rag index`, `rag list`, `rag remove`, `rag gc` through the CLI against a real database."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag import db
from rag.cli import app

runner = CliRunner()


@pytest.fixture
def keyword_only(tmp_path: Path, rag_db: db.DatabaseTarget, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config with provider none (no model load) pointed at a fresh database."""
    monkeypatch.setenv("RAG_DATABASE_URL", rag_db.url)
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "home"))
    cfg = tmp_path / "rag.config.yaml"
    cfg.write_text(
        "embeddings: {provider: none}\n"
        f"sources:\n  - {{name: docs, type: local, path: {tmp_path / 'docs'}, include: ['**/*.md']}}\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\nHello.\n")
    (tmp_path / "docs" / "notes.txt").write_text("excluded by include\n")
    return cfg


def rag(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def make_folder(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text("def answer():\n    return 42\n")
    (root / "README.md").write_text("# Demo\n\nA demo project.\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "x.js").write_text("ignored()\n")
    return root


def test_index_path_list_remove_gc(keyword_only: Path, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "demo-project")
    code, out, err = rag("index", "--path", str(folder))
    assert code == 0, err
    assert out == ""
    assert "Indexing demo-project..." in err
    assert "Scanning files: 2 files found (1 excluded by filters)" in err
    assert "Changed: 2 files (0 unchanged, skipped; 0 deleted)" in err
    assert "Total: " in err and "Time: " in err

    code, out, _ = rag("list")
    assert code == 0
    line = next(row for row in out.splitlines() if row.startswith("demo-project"))
    assert line.split()[1:3] == ["local", "2"] and str(folder) in line

    code, out, _ = rag("status")
    assert "files:        2" in out and "last run:     demo-project succeeded" in out

    code, out, _ = rag("remove", "demo-project")
    assert code == 0 and out.startswith("removed demo-project: ")
    code, out, _ = rag("gc")
    assert code == 0 and out == "pruned 0 unused embeddings\n"
    code, out, _ = rag("list")
    assert out.startswith("no sources indexed yet")


def test_index_json_summary_and_configured_source(keyword_only: Path) -> None:
    code, out, err = rag("--config", str(keyword_only), "index", "docs", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["source"] == "docs" and summary["status"] == "succeeded"
    assert summary["new"] == 1 and summary["skipped"] == {"not included": 1}
    assert err == "", "--json keeps the terminal quiet"
    code, out, _ = rag("--config", str(keyword_only), "index", "--all", "--json")
    assert json.loads(out)["unchanged"] == 1


def test_ad_hoc_sources_are_indexed_by_name_all_and_from_their_root(
    keyword_only: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_folder(tmp_path / "adhoc")
    (folder / "pkg" / "gen.min.py").write_text("x = 1\n")
    code, _, err = rag("index", "--path", str(folder), "--exclude", "*.min.py", "--include", "**/*.py",
                       "--include", "*.md", "--json")
    assert code == 0, err
    (folder / "pkg" / "new.py").write_text("def new():\n    return 1\n")
    # By name: the source made with --path, its include/exclude kept with it.
    code, out, err = rag("--config", str(keyword_only), "index", "adhoc", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["new"], summary["unchanged"], summary["skipped"]) == (1, 2, {"builtin": 1, "exclude": 1})
    # --all: the configured source and the one only the database knows.
    code, out, err = rag("--config", str(keyword_only), "index", "--all", "--json")
    assert code == 0, err
    assert [json.loads(line)["source"] for line in out.splitlines()] == ["docs", "adhoc"]
    # No argument in a source's root: that source.
    monkeypatch.chdir(folder)
    code, out, err = rag("--config", str(keyword_only), "index", "--json")
    assert code == 0 and json.loads(out)["source"] == "adhoc", err
    # --path again without the globs keeps them.
    code, out, err = rag("index", "--path", str(folder), "--json")
    assert code == 0 and json.loads(out)["skipped"] == {"builtin": 1, "exclude": 1}, err


def test_dry_run_verbose_names_skipped_paths_and_binary_content(keyword_only: Path, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "p")
    (folder / "blob.py").write_bytes(b"\x00\x01binary with a text name\n")
    code, out, err = rag("index", "--path", str(folder), "--dry-run", "--verbose")
    assert code == 0, err
    assert out.splitlines() == ["README.md", "pkg/core.py"]
    assert "#   skipped (builtin): 1 folder (not walked: its files are not counted)\n#     node_modules/\n" in err
    assert "#   error: blob.py: binary file" in err
    code, out, _ = rag("index", "--path", str(folder), "--dry-run", "--json", "--verbose")
    dry = json.loads(out)
    assert dry["skippedPaths"] == {"builtin": ["node_modules/"]}
    assert {"path": "blob.py", "error": "binary file"} in dry["fileErrors"]
    code, out, err = rag("index", "--path", str(folder), "--json")  # what the real run says of it
    assert {"path": "blob.py", "error": "binary file"} in json.loads(out)["fileErrors"]


def test_dry_run_lists_files_and_skip_reasons_without_writing(keyword_only: Path, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "p")
    code, out, err = rag("index", "--path", str(folder), "--dry-run")
    assert code == 0
    assert out.splitlines() == ["README.md", "pkg/core.py"]
    assert "2 files would be indexed (2 new)" in err and "skipped (builtin): 1 folder (not walked" in err
    assert rag("list")[1].startswith("no sources indexed yet")


def test_dry_run_of_an_unchanged_source_says_nothing_would_be_indexed(keyword_only: Path, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "p")
    assert rag("index", "--path", str(folder))[0] == 0
    (folder / "pkg" / "new.py").write_text("x = 1\n")
    (folder / "README.md").unlink()

    code, out, err = rag("index", "--path", str(folder), "--dry-run")

    assert code == 0 and out.splitlines() == ["pkg/core.py", "pkg/new.py"]
    assert "# p: 1 file would be indexed (1 new, 1 unchanged, 1 deleted)" in err
    dry = json.loads(rag("index", "--path", str(folder), "--dry-run", "--json")[1])
    assert {k: dry[k] for k in ("new", "changed", "moved", "unchanged", "deleted")} == {
        "new": 1, "changed": 0, "moved": 0, "unchanged": 1, "deleted": 1}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["index"], "is not the root of an indexed source; run `rag index --path .` to index it"),
        (["index", "docs", "--path", "."], "say what to index"),
        (["index", "docs", "--include", "*.md"], "--include/--exclude go with --path or --git"),
        (["index", "--path", "/no/such/dir"], "--path /no/such/dir: not a directory"),
        (["index", "ghost"], "no source 'ghost' in the config or the database (known: docs)"),
        (["index", "--path", ".", "--branch", "main"], "--branch goes with --git"),
        (["remove", "ghost"], "source 'ghost' not found; known: none"),
    ],
)
def test_bad_index_arguments_are_one_line(keyword_only: Path, args: list[str], message: str,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = rag("--config", str(keyword_only), *args)
    assert out == ""
    assert code == 1
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_index_git_repository_clones_and_updates(keyword_only: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    work = tmp_path / "work"
    git("init", "--bare", "-b", "main", str(remote), cwd=tmp_path)
    git("clone", str(remote), str(work), cwd=tmp_path)
    (work / "lib.py").write_text("def first():\n    pass\n")
    git("add", ".", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-m", "one", cwd=work)
    git("push", "origin", "HEAD:main", cwd=work)

    code, _, err = rag("index", "--git", f"file://{remote}", "--branch", "main", "--json")
    assert code == 0, err
    assert (tmp_path / "home" / "repos" / "remote" / "lib.py").exists()

    (work / "more.py").write_text("def second():\n    pass\n")
    git("add", ".", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-m", "two", cwd=work)
    git("push", "origin", "HEAD:main", cwd=work)
    code, out, err = rag("index", "--git", f"file://{remote}", "--branch", "main", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["new"], summary["unchanged"]) == (1, 1)
    assert "remote" in rag("list")[1]


def test_a_git_source_keeps_its_branch_records_its_commit_and_goes_with_its_clone(
    keyword_only: Path, tmp_path: Path
) -> None:
    remote, work = tmp_path / "remote.git", tmp_path / "work"
    git("init", "--bare", "-b", "main", str(remote), cwd=tmp_path)
    git("clone", str(remote), str(work), cwd=tmp_path)
    commit = ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-m"]
    (work / "lib.py").write_text("def first():\n    pass\n")
    git("add", ".", cwd=work)
    git(*commit, "one", cwd=work)
    git("push", "origin", "HEAD:main", cwd=work)
    git("checkout", "-b", "feature", cwd=work)
    (work / "feature.py").write_text("def only_on_feature():\n    pass\n")
    git("add", ".", cwd=work)
    git(*commit, "two", cwd=work)
    git("push", "origin", "HEAD:feature", cwd=work)
    feature_sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True,
                                 check=True).stdout.strip()
    url = f"file://{remote}"
    code, _, err = rag("index", "--git", url, "--name", "x", "--branch", "feature", "--json")
    assert code == 0, err
    code, out, err = rag("index", "--git", url, "--name", "x", "--json")  # no --branch: still feature
    assert code == 0, err
    assert (json.loads(out)["unchanged"], json.loads(out)["deleted"]) == (2, 0)
    [listed] = json.loads(rag("list", "--json")[1])["sources"]
    assert (listed["branch"], listed["commitSha"]) == ("feature", feature_sha)
    assert f"@{feature_sha[:12]}" in rag("list")[1]
    assert f"git x: feature @{feature_sha}" in rag("status")[1]
    clone = tmp_path / "home" / "repos" / "x"
    assert clone.is_dir()
    code, out, _ = rag("remove", "x")
    assert code == 0 and f"deleted its clone {clone}" in out and not clone.exists()


def test_a_database_error_is_one_line(keyword_only: Path, tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    with db.connect(rag_db) as conn:  # a schema this version does not expect
        conn.execute("ALTER TABLE rag.postings RENAME COLUMN term_count TO chunk_length")
    result = runner.invoke(app, ["index", "--path", str(make_folder(tmp_path / "p"))])
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: database: column \"term_count\" of relation \"postings\" does not exist")
    assert "Traceback" not in result.stderr and "--debug" in last


@pytest.mark.slow
def test_a_run_with_nothing_changed_never_loads_the_chunkers(keyword_only: Path, tmp_path: Path) -> None:
    """The no-change re-index must start fast: tree-sitter is imported only to chunk a file."""
    folder = make_folder(tmp_path / "demo-project")
    assert rag("index", "--path", str(folder))[0] == 0
    probe = (
        "import sys\n"
        "from rag.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "print(sorted(m for m in sys.modules if m.startswith(('tree_sitter', 'rag.chunking'))))\n"
    )
    args = ["index", "--path", str(folder), "--json"]
    unchanged = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True)
    assert json.loads(unchanged.stdout.splitlines()[0])["unchanged"] == 2
    assert unchanged.stdout.splitlines()[-1] == "[]"

    (folder / "pkg" / "core.py").write_text("def answer():\n    return 43\n")
    changed = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True)
    assert json.loads(changed.stdout.splitlines()[0])["changed"] == 1
    assert "tree_sitter" in changed.stdout.splitlines()[-1], "the probe sees the chunkers once a file changes"

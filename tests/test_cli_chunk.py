"""`rag chunk`: how files are cut, as a table or as JSON lines."""

import json
from pathlib import Path

from typer.testing import CliRunner

from rag.cli import app

runner = CliRunner()

SOURCE = '''import os


class UserService:
    """Finds users."""

    def find_by_id(self, user_id):
        return os.environ.get(user_id)
'''


def test_chunk_table_and_json(tmp_path: Path) -> None:
    (tmp_path / "svc.py").write_text(SOURCE)
    (tmp_path / "doc.md").write_text("# API\n\n## Auth\n\nUse tokens.\n")
    result = runner.invoke(app, ["chunk", "svc.py", "doc.md"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "svc.py:1-8" in result.stdout or "svc.py:4-8" in result.stdout
    assert "doc.md:1-5" in result.stdout and "# API > ## Auth" in result.stdout

    result = runner.invoke(app, ["chunk", "--json", "svc.py"], catch_exceptions=False)
    chunks = [json.loads(line) for line in result.stdout.splitlines()]
    assert chunks and all(c["path"] == "svc.py" and c["sourceType"] == "code" for c in chunks)
    assert any("UserService" in (c.get("fqn") or "") or "UserService" in c.get("fqns", []) for c in chunks)
    assert "".join(c["content"] for c in chunks).count("def find_by_id") >= 1
    assert all(len(c["contentHash"]) == 64 and c["tokens"] > 0 for c in chunks)
    assert all(c["context"] == "\n".join(["svc.py", *([c["fqn"]] if c.get("fqn") else [])]) for c in chunks)
    assert all(c["passageEnds"] == [] for c in chunks), "code has no passage vectors"

    paragraph = " ".join(f"word{i}" for i in range(40))
    (tmp_path / "long.md").write_text(f"# Long\n\n{paragraph}\n\n{paragraph}\n")
    result = runner.invoke(app, ["chunk", "--json", "long.md"], catch_exceptions=False)
    (doc,) = [json.loads(line) for line in result.stdout.splitlines()]
    ends = doc["passageEnds"]
    assert len(ends) == 2 and doc["content"][ends[0]:ends[1]] == f"{paragraph}\n", "where each passage ends"


def test_chunk_folder_uses_the_source_rules(tmp_path: Path) -> None:
    (tmp_path / "p" / "node_modules").mkdir(parents=True)
    (tmp_path / "p" / "node_modules" / "skip.js").write_text("x()\n")
    (tmp_path / "p" / "keep.txt").write_text("kept\n")
    result = runner.invoke(app, ["chunk", "p"], catch_exceptions=False)
    assert "p/keep.txt:1-1" in result.stdout and "skip.js" not in result.stdout


def test_chunk_reports_bad_files_and_arguments(tmp_path: Path) -> None:
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 not really")
    result = runner.invoke(app, ["chunk", "bad.pdf"], catch_exceptions=False)
    assert result.exit_code == 1 and result.stderr.startswith("error: bad.pdf: ")
    (tmp_path / "blob.py").write_bytes(b"\x00\x01\x02 binary")
    (tmp_path / "ok.py").write_text("x = 1\n")
    result = runner.invoke(app, ["chunk", "blob.py", "ok.py"], catch_exceptions=False)
    assert result.exit_code == 1 and result.stderr == "error: blob.py: binary file\n"
    assert "ok.py:1-1" in result.stdout  # every file is still shown
    result = runner.invoke(app, ["chunk", "missing.py"], catch_exceptions=False)
    assert result.exit_code == 1 and result.stderr == "error: missing.py: no such file or folder\n"
    result = runner.invoke(app, ["chunk", "bad.pdf", "--max-tokens", "10", "--overlap", "10"])
    assert result.exit_code == 1 and "--overlap" in result.stderr


def test_chunk_shows_document_sections(tmp_path: Path) -> None:
    fixtures = Path(__file__).parent / "chunking" / "fixtures" / "structured"
    for name in ("guide.rst", "manual.adoc", "page.html", "train.ipynb", "broken.ipynb"):
        (tmp_path / name).write_bytes((fixtures / name).read_bytes())
    names = ["guide.rst", "manual.adoc", "page.html", "train.ipynb", "broken.ipynb"]
    result = runner.invoke(app, ["chunk", *names], catch_exceptions=False)
    assert result.exit_code == 1  # broken.ipynb; the other files are still shown
    rows = [line.split() for line in result.stdout.splitlines()]
    # Each fixture's sections fit the default bound together: one chunk under the path they share.
    assert ["guide.rst:1-45", "text", "188", "tok", "#", "User", "Guide", "(4", "sections)"] in rows
    assert ["manual.adoc:1-29", "text", "80", "tok", "#", "Tool", "Manual", "(4", "sections)"] in rows
    assert ["page.html:10-24", "text", "50", "tok", "#", "Tool", "&", "Friends", "(4", "sections)"] in rows
    assert ["train.ipynb:7-50", "code", "61", "tok", "#", "Training", "(2", "sections)"] in rows
    small = runner.invoke(app, ["chunk", "guide.rst", "--max-tokens", "45"], catch_exceptions=False)
    assert ["guide.rst:27-36", "text", "42", "tok", "#", "User", "Guide", ">", "##", "Installation",
            ">", "###", "Configuration"] in [line.split() for line in small.stdout.splitlines()]
    assert result.stderr.startswith("error: broken.ipynb: invalid notebook JSON: ")

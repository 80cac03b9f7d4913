"""`make demo` indexes this repository and shows no error a newcomer would take for a failure
(#42.7): fixtures broken on purpose are left out by the repository's .ragignore; every other
file chunks without a per-file error (so one that shows up is real)."""

import json
from pathlib import Path

import pytest
from helpers import rag_process

from rag import db
from rag.dispatcher import chunk_bytes

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow  # chunks the whole repository


def test_the_demo_index_of_this_repository_has_no_file_errors(tmp_path: Path, rag_db: db.DatabaseTarget) -> None:
    # (on the test database: a dry run in a fresh home would start an embedded server and leave it running)
    (tmp_path / "none.yaml").write_text("embeddings: {provider: none}\n")
    done = rag_process("--config", str(tmp_path / "none.yaml"), "index", "--path", str(ROOT), "--name",
                       "local-rag", "--dry-run", "--json", "--verbose", database=rag_db)
    assert done.returncode == 0, done.stderr
    dry = json.loads(done.stdout)
    assert dry["fileErrors"] == []
    assert "tests/chunking/fixtures/structured/broken.ipynb" in dry["skippedPaths"]["ragignore"]
    errors = {path: chunked.error for path in dry["files"]
              if (chunked := chunk_bytes((ROOT / path).read_bytes(), path)).error}
    assert errors == {}

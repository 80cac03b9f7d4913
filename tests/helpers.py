"""Small helpers shared by test modules."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from rag import db


def rows(target: db.DatabaseTarget, query: str, *params: Any) -> list[dict[str, Any]]:
    """The rows of one query on ``target``, as dicts, in a connection of its own."""
    with psycopg.connect(target.url, row_factory=dict_row, autocommit=True) as conn:
        return conn.execute(query.encode(), params or None).fetchall()


def keyword_project(tmp_path: Path) -> tuple[Path, Path]:
    """A config without embeddings (no model in a `rag` process) and a one-file project: (config, root)."""
    config = tmp_path / "rag.yaml"
    config.write_text("embeddings: {provider: none}\n")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "m.py").write_text("def combine_latest(a, b):\n    return a + b\n")
    return config, root


RAG = str(Path(sys.executable).parent / "rag")


def rag_process(*args: str, database: db.DatabaseTarget | None = None, cwd: Path | None = None,
                timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """``rag ARGS`` as a user runs it: a process of its own (its stdout and stderr as a terminal
    gets them), on ``database`` when given, with ``env`` added to the test's environment."""
    environment = dict(os.environ, **env)
    if database is not None:
        environment["RAG_DATABASE_URL"] = database.url
    return subprocess.run([RAG, *args], capture_output=True, text=True, timeout=timeout, check=False,
                          env=environment, cwd=cwd)

"""Small helpers shared by test modules."""

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

"""Small helpers shared by test modules."""

from typing import Any

import psycopg
from psycopg.rows import dict_row

from rag import db


def rows(target: db.DatabaseTarget, query: str, *params: Any) -> list[dict[str, Any]]:
    """The rows of one query on ``target``, as dicts, in a connection of its own."""
    with psycopg.connect(target.url, row_factory=dict_row, autocommit=True) as conn:
        return conn.execute(query.encode(), params or None).fetchall()

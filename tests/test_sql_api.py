"""The public SQL API (every ``rag.*`` function not starting with ``_``) against a reviewed snapshot.

``tests/sql_api.txt`` holds each function's name, arguments (names, types, defaults) and result
columns as the catalog shows them. A change there is a change of the interface users call from
psql and Python: it fails here until the snapshot is regenerated and the diff reviewed:

    OVERWRITE_GOLDEN=1 .venv/bin/pytest tests/test_sql_api.py
"""

import os
from pathlib import Path

from psycopg.rows import dict_row

from rag import db

SNAPSHOT = Path(__file__).parent / "sql_api.txt"

# Composite result types (rag.graph_row, rag.excerpt) are spelled out: their columns are the API too.
SIGNATURES = """
SELECT p.proname AS name, pg_get_function_arguments(p.oid) AS arguments,
       pg_get_function_result(p.oid) AS result,
       (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
        FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid
        WHERE t.oid = p.prorettype AND t.typrelid <> 0 AND a.attnum > 0 AND NOT a.attisdropped) AS columns
FROM pg_proc p
WHERE p.pronamespace = 'rag'::regnamespace AND p.proname NOT LIKE '\\_%'
ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)
"""


def api_text(target: db.DatabaseTarget) -> str:
    """One paragraph per public function: ``rag.name(arguments)``, then ``  -> result`` and columns."""
    with db.connect(target) as conn, conn.cursor(row_factory=dict_row) as cur:
        cur.execute("SET search_path = pg_catalog, public")  # rag.* types named with their schema
        rows = cur.execute(SIGNATURES).fetchall()
    parts = []
    for row in rows:
        result = row["result"] + (f" ({row['columns']})" if row["columns"] else "")
        parts.append(f"rag.{row['name']}({row['arguments']})\n  -> {result}\n")
    return "\n".join(parts)


def test_public_sql_functions_match_the_reviewed_snapshot(rag_db: db.DatabaseTarget) -> None:
    current = api_text(rag_db)
    if os.environ.get("OVERWRITE_GOLDEN"):
        SNAPSHOT.write_text(current, encoding="utf-8")
    expected = SNAPSHOT.read_text(encoding="utf-8") if SNAPSHOT.exists() else ""
    assert current == expected, (
        f"the public rag.* functions differ from {SNAPSHOT.name}; if the change is meant, run "
        "OVERWRITE_GOLDEN=1 pytest tests/test_sql_api.py and review the diff")

"""What a run killed at its end leaves is rebuilt by the next run, even one that
changes nothing: the postings key and the heads index of bm25_search, the HNSW
indexes of the vectors."""

from pathlib import Path

import pytest
from fakes import HashEmbedder
from helpers import rows
from psycopg import sql

from rag import db
from rag.config import ChunkSettings, SourceSpec
from rag.indexer import index_source
from rag.providers import Embedder, NoneEmbedder

INDEXES = ("SELECT to_regclass('rag.postings_pkey') IS NOT NULL AS key,"
           " to_regclass('rag.postings_heads_idx') IS NOT NULL AS heads")


def index(target: db.DatabaseTarget, root: Path, embedder: Embedder | None = None) -> None:
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("p", "local", str(root)), root, embedder or NoneEmbedder(),
                     ChunkSettings(max_tokens=200, overlap=20))


@pytest.mark.parametrize(
    "killed",
    [
        # during the key's build (a bulk load's end): neither index is there
        "ALTER TABLE rag.postings DROP CONSTRAINT postings_pkey; DROP INDEX rag.postings_heads_idx",
        # after it, before the heads index
        "DROP INDEX rag.postings_heads_idx",
    ],
    ids=["during-the-key", "before-the-heads"],
)
def test_the_next_run_rebuilds_what_a_killed_run_left_unbuilt(
    rag_db: db.DatabaseTarget, tmp_path: Path, killed: str
) -> None:
    (tmp_path / "notes.md").write_text("# Parcels\n\nParcels leave the warehouse on Mondays.\n")
    (tmp_path / "billing.py").write_text("def invoice_total(items):\n    return sum(items)\n")
    index(rag_db, tmp_path)
    assert rows(rag_db, INDEXES) == [{"key": True, "heads": True}]
    with db.connect(rag_db) as conn:
        conn.execute(killed.encode())
    index(rag_db, tmp_path)  # nothing changed
    assert rows(rag_db, INDEXES) == [{"key": True, "heads": True}]


def test_the_next_run_builds_the_vector_indexes_a_killed_run_left_unbuilt(
    rag_db: db.DatabaseTarget, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("# Parcels\n\nParcels leave the warehouse on Mondays.\n")
    hnsw = "SELECT count(*) AS n FROM pg_indexes WHERE schemaname = 'rag' AND indexdef LIKE '%USING hnsw%'"
    index(rag_db, tmp_path, HashEmbedder())
    assert rows(rag_db, hnsw) == [{"n": 3}]  # the chunks', the passages' and the files'
    with db.connect(rag_db) as conn:  # as if killed after the last vectors, before their indexes
        for name in rows(rag_db, hnsw.replace("count(*) AS n", "indexname")):
            conn.execute(sql.SQL("DROP INDEX rag.{}").format(sql.Identifier(name["indexname"])))
    index(rag_db, tmp_path, HashEmbedder())  # nothing changed, nothing to embed
    assert rows(rag_db, hnsw) == [{"n": 3}]

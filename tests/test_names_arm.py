"""The names arm: code chunks' paths and fqns posted as 'name:' terms beside their text,
searched by rag.bm25_search(names => true) and fused by rag.search as a third arm."""

import math
from pathlib import Path
from typing import Any

import psycopg
from fakes import HashEmbedder
from psycopg.rows import dict_row

from rag import db
from rag.config import ChunkSettings, SourceSpec
from rag.indexer import index_source


def rows(target: db.DatabaseTarget, query: str, *params: Any) -> list[dict[str, Any]]:
    with psycopg.connect(target.url, row_factory=dict_row, autocommit=True) as conn:
        return conn.execute(query.encode(), params or None).fetchall()


def project(target: db.DatabaseTarget, root: Path) -> HashEmbedder:
    """A class named for what it does, code that only uses the words, and a document."""
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "cart.py").write_text(
        "class ShoppingCart:\n    def grand_total(self, items):\n        return sum(i.price for i in items)\n")
    (root / "shop" / "report.py").write_text(
        "def print_report(cart):\n    # the shopping cart's grand total, shopping cart by shopping cart\n"
        "    print('shopping cart grand total', cart)\n")
    (root / "README.md").write_text("# Shopping cart\n\nThe shopping cart adds up a grand total.\n")
    embedder = HashEmbedder()
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("shop", "local", str(root)), root, embedder, ChunkSettings(200, 20))
    return embedder


def names_of(target: db.DatabaseTarget, path: str) -> dict[str, int]:
    found = rows(target, "SELECT p.term, p.tf FROM rag.postings p JOIN rag.chunks c ON c.id = p.chunk_id "
                         "JOIN rag.files f ON f.id = c.file_id WHERE f.path = %s AND p.term LIKE 'name:%%'", path)
    return {r["term"]: r["tf"] for r in found}


def test_code_chunks_post_their_names_documents_do_not(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    project(rag_db, tmp_path / "p")
    names = names_of(rag_db, "shop/cart.py")
    assert set(names) == {"name:shop", "name:cart", "name:py", "name:shopping", "name:shoppingcart"}
    assert names_of(rag_db, "README.md") == {}, "a document has no names arm"
    # The document length is the text's alone: names do not make a chunk longer.
    for chunk in rows(rag_db, "SELECT c.term_count, rag._indexed_text(c.context, c.content) AS text FROM rag.chunks c"):
        assert chunk["term_count"] == rows(rag_db, "SELECT sum(tf) AS n FROM rag.term_frequencies(%s)",
                                           chunk["text"])[0]["n"]


def test_names_arm_is_exact_bm25_over_names(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    project(rag_db, tmp_path / "p")
    for query in ("shopping cart grand total", "report", "cart"):
        top = rows(rag_db, "SELECT chunk_id, score FROM rag.bm25_search(%s, 10, names => true)", query)
        full = rows(rag_db, "SELECT chunk_id, score FROM rag._bm25_exhaustive(%s, names => true)", query)
        assert top == full[:10] and top, query
    ranked = rows(rag_db, "SELECT f.path FROM rag.bm25_search('shopping cart grand total', 10, names => true) b "
                          "JOIN rag.chunks c ON c.id = b.chunk_id JOIN rag.files f ON f.id = c.file_id")
    assert ranked[0]["path"] == "shop/cart.py", "named for it, though report.py says the words more often"
    assert "README.md" not in {r["path"] for r in ranked}


def test_hybrid_search_adds_the_names_arm_by_rank(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    embedder = project(rag_db, tmp_path / "p")
    query = "shopping cart grand total"
    vector = "[" + ",".join(map(str, embedder.embed_query(query))) + "]"

    def scores(weight: float, embedding: str | None = vector) -> dict[int, float]:
        found = rows(rag_db, "SELECT chunk_id, score FROM rag.search(%s, %s::vector, 10, graph_weight => 0, "
                             "names_weight => %s)", query, embedding, weight)
        return {r["chunk_id"]: r["score"] for r in found}

    named = {r["chunk_id"]: r["rank"] for r in rows(rag_db, "SELECT * FROM rag.bm25_search(%s, 50, names => true)", query)}
    plain, with_names = scores(0), scores(0.4)
    assert set(with_names) == set(plain)
    for chunk, score in with_names.items():
        assert math.isclose(score, plain[chunk] + (0.4 / (10 + named[chunk]) if chunk in named else 0)), chunk
    assert scores(0.4, None) == scores(0, None), "keywords alone: no names arm"


def test_deleting_a_file_takes_its_names_away(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    project(rag_db, tmp_path / "p")
    assert rows(rag_db, "SELECT df FROM rag.term_stats WHERE term = 'name:report'") == [{"df": 1}]
    rows(rag_db, "SELECT rag.delete_files((SELECT id FROM rag.sources WHERE name = 'shop'), ARRAY['shop/report.py'])")
    assert names_of(rag_db, "shop/report.py") == {}
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.postings WHERE term = 'name:report'") == [{"n": 0}]
    assert rows(rag_db, "SELECT coalesce(sum(df), 0) AS n FROM rag.term_stats WHERE term = 'name:report'") == [{"n": 0}]

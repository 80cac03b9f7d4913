"""The names arm: code chunks' paths and fqns posted as 'name:' terms beside their text,
scored by rag._name_scores and fused by a hybrid rag.search as a third arm."""

import math
from pathlib import Path

from fakes import HashEmbedder
from helpers import rows

from rag import db
from rag.config import ChunkSettings, SourceSpec
from rag.indexer import index_source


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
    assert set(names) == {"name:shop", "name:cart", "name:py", "name:shopping", "name:shoppingcart",
                          # and their stems: shopping -> shop, counted with shop
                          "name:stem:shop", "name:stem:cart", "name:stem:py", "name:stem:shoppingcart"}
    assert names["name:stem:shop"] == names["name:shop"] + names["name:shopping"]
    assert names_of(rag_db, "README.md") == {}, "a document has no names arm"
    # The document length is the text's alone: names do not make a chunk longer.
    for chunk in rows(rag_db, "SELECT c.term_count, rag._indexed_text(c.context, c.content) AS text FROM rag.chunks c"):
        assert chunk["term_count"] == rows(rag_db, "SELECT sum(tf) AS n FROM rag.term_frequencies(%s)",
                                           chunk["text"])[0]["n"]


def name_scores(target: db.DatabaseTarget, query: str) -> dict[int, float]:
    found = rows(target, "SELECT * FROM rag._name_scores((SELECT array_agg(id) FROM rag.chunks),"
                         " (rag.parse_query(%s)).name_terms, 1.2, 0.75)", query)
    return {r["chunk_id"]: r["score"] for r in found}


def test_names_are_scored_by_okapi_bm25(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    project(rag_db, tmp_path / "p")
    stats = rows(rag_db, "SELECT chunks, total_terms FROM rag.corpus_stats")[0]
    documents = rows(rag_db, "SELECT count(*) AS n FROM rag.chunks WHERE metadata->>'sourceType' = 'markdown'")[0]["n"]
    assert documents > 0  # README.md: names are a field of code, counted among the other chunks only
    n, average = stats["chunks"] - documents, stats["total_terms"] / stats["chunks"]
    chunks = rows(rag_db, "SELECT id, term_count FROM rag.chunks")
    postings = rows(rag_db, "SELECT term, chunk_id, tf FROM rag.postings WHERE term LIKE 'name:%%'")
    for query in ("shopping cart grand total", "report", "ShoppingCart"):
        words = rows(rag_db, "SELECT rag.query_terms(%s) AS t", query)[0]["t"]
        stems = rows(rag_db, "SELECT array_agg(DISTINCT rag._name_stem(w, rag._stem_dictionaries())) AS s"
                             " FROM unnest(%s::text[]) AS w", words)[0]["s"]
        expected: dict[int, float] = {}
        for term in [f"name:{w}" for w in words] + [s for s in stems if s]:
            holders = [p for p in postings if p["term"] == term]
            idf = math.log(1 + (n - len(holders) + 0.5) / (len(holders) + 0.5))
            for p in holders:
                length = next(c["term_count"] for c in chunks if c["id"] == p["chunk_id"])
                weight = idf * p["tf"] * 2.2 / (p["tf"] + 1.2 * (0.25 + 0.75 * length / average))
                expected[p["chunk_id"]] = expected.get(p["chunk_id"], 0) + weight
        got = name_scores(rag_db, query)
        assert got.keys() == expected.keys() and got, query
        assert all(math.isclose(got[c], expected[c]) for c in got), query
    paths = {r["id"]: r["path"] for r in rows(rag_db, "SELECT c.id, f.path FROM rag.chunks c JOIN rag.files f "
                                                      "ON f.id = c.file_id")}
    ranked = sorted((score, paths[c]) for c, score in name_scores(rag_db, "shopping cart grand total").items())
    assert ranked[-1][1] == "shop/cart.py", "named for it, though report.py says the words more often"
    assert "README.md" not in {path for _, path in ranked}


def test_hybrid_search_adds_the_names_arm_by_rank(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    embedder = project(rag_db, tmp_path / "p")
    query = "shopping cart grand total"
    vector = "[" + ",".join(map(str, embedder.embed_query(query))) + "]"

    def scores(weight: float, embedding: str | None = vector) -> dict[int, float]:
        # (without a vector, keywords alone: the query's vector the first calls kept is not used)
        found = rows(rag_db, "SELECT chunk_id, score FROM rag.search(%s, %s::vector, 10, options => "
                             "jsonb_build_object('graphWeight', 0, 'namesWeight', %s::float8, 'vectorWeight', %s))",
                     query, embedding, weight, 0.5 if embedding else 0)
        return {r["chunk_id"]: r["score"] for r in found}

    # Every chunk is a candidate of this small corpus: the names arm ranks them all.
    by_name = name_scores(rag_db, query)
    named = {c: rank for rank, c in enumerate(sorted(by_name, key=lambda c: (-by_name[c], c)), 1)}
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


def test_name_scores_are_inlined_into_the_search_statement(rag_db: db.DatabaseTarget) -> None:
    """Planned with its caller, not as a function planned at every call."""
    plan = rows(rag_db, "EXPLAIN SELECT * FROM rag._name_scores(ARRAY[1, 2]::bigint[], ARRAY['name:x'], 1.2, 0.75)")
    text = "\n".join(r["QUERY PLAN"] for r in plan)
    assert "Function Scan" not in text and "postings" in text, text


def test_a_name_is_found_by_another_form_of_its_words(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """A question's "listen" meets spyListeners (parts spy, listeners) by the names' stems; a query
    naming a definition still ranks that definition first."""
    root = tmp_path / "p"
    (root / "core").mkdir(parents=True)
    (root / "core" / "spy.ts").write_text(
        "export const spyListeners: Array<(event: any) => void> = []\n\n"
        "export function spyReport(event: any) {\n    for (const l of spyListeners) l(event)\n}\n")
    (root / "core" / "action.ts").write_text(
        "export function runAction(fn: () => void) {\n    // tell whoever listens to actions\n"
        "    fn()\n}\n")
    with db.connect(rag_db) as conn:
        index_source(conn, SourceSpec("spy", "local", str(root)), root, HashEmbedder(), ChunkSettings(200, 20))
    assert "name:stem:listen" in names_of(rag_db, "core/spy.ts")
    assert "listen" not in {r["term"] for r in rows(rag_db, "SELECT term FROM rag.postings")}, "text: exact words"
    paths = {r["id"]: r["path"] for r in rows(rag_db, "SELECT c.id, f.path FROM rag.chunks c JOIN rag.files f "
                                                      "ON f.id = c.file_id")}
    found = name_scores(rag_db, "listen to every event")
    assert {paths[c] for c in found} == {"core/spy.ts"}
    assert rows(rag_db, "SELECT (rag.parse_query('listen')).name_terms AS t") == [
        {"t": ["name:listen", "name:stem:listen"]}]
    for query, path in (("spyReport", "core/spy.ts"), ("runAction", "core/action.ts")):
        first = rows(rag_db, "SELECT f.path FROM rag.search(%s, NULL, 1) s JOIN rag.chunks c ON c.id = s.chunk_id"
                             " JOIN rag.files f ON f.id = c.file_id", query)
        assert first == [{"path": path}], query

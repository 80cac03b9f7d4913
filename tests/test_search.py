"""rag.search() and its arms against a real database: tokenizer, BM25 vs a reference
implementation, fusion arithmetic, filters in both arms, the HNSW iterative-scan case,
query-embedding reuse, bad input, and the Python Searcher around it."""

import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import bm25s
import psycopg
import pytest
from fakes import HashEmbedder
from helpers import rows
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from rag import db
from rag.config import ChunkSettings, SearchConfig, SourceSpec
from rag.errors import ProviderError, RagError
from rag.indexer import index_source
from rag.providers.rerankers import NoReranker, RerankResult
from rag.search import Searcher, SearchRequest


def terms(target: db.DatabaseTarget, text: str) -> dict[str, int]:
    return {r["term"]: r["tf"] for r in rows(target, "SELECT * FROM rag.term_frequencies(%s)", text)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("combineLatest", {"combine": 1, "latest": 1, "combinelatest": 1}),
        ("get_user", {"get": 1, "user": 1, "get_user": 1}),
        ("kebab-case", {"kebab": 1, "case": 1, "kebab-case": 1}),
        ("HTTPServer", {"http": 1, "server": 1, "httpserver": 1}),
        ("utf8Decode", {"utf": 1, "8": 1, "decode": 1, "utf8decode": 1}),
        ("user USER User", {"user": 3}),
        ("Поиск ПОИСКА поиск", {"поиск": 2, "поиска": 1}),
        ("a.b(c) + d", {"a": 1, "b": 1, "c": 1, "d": 1}),
        ("!!! ... ;;;", {}),
        ("x" * 80 + " kept", {"kept": 1}),
        ("  café\tÜBER_größe 日本語\n", {"café": 1, "über": 1, "größe": 1, "über_größe": 1, "日本語": 1}),
        ("go " * 300, {"go": 300}),  # counted exactly: no cap such as tsvector's 256 positions
    ],
)
def test_tokenizer(rag_db: db.DatabaseTarget, text: str, expected: dict[str, int]) -> None:
    assert terms(rag_db, text) == expected


WORDS = ["user", "service", "find", "by", "id", "cache", "token", "parse", "http", "server",
         "request", "response", "config", "load", "save", "index", "search", "query", "vector"]


def build_corpus(target: db.DatabaseTarget, n_files: int, seed: int = 7, dims: int = 8) -> HashEmbedder:
    """Chunks with Zipf-ish word use over two sources, vectors from HashEmbedder."""
    rng = random.Random(seed)
    embedder = HashEmbedder(dims)
    weights = [1 / (i + 1) for i in range(len(WORDS))]
    with db.connect(target) as conn:
        for source, share in (("big", 0.9), ("small", 0.1)):
            source_id = conn.execute(
                "SELECT rag.upsert_source(%s, 'local', %s) AS id", (source, f"/src/{source}")
            ).fetchone()["id"]  # type: ignore[index]
            files = []
            for i in range(max(1, int(n_files * share))):
                kind = "docs" if i % 5 == 0 else "src"
                chunks = []
                for j in range(3):
                    text = " ".join(rng.choices(WORDS, weights, k=rng.randint(5, 40)))
                    text = f"{kind} {source} chunk{i}x{j} {text}"
                    chunks.append({"content": text, "contentHash": f"{source}-{i}-{j}-{hash(text)}",
                                   "metadata": {"path": f"{kind}/f{i}.py", "sourceType": "code",
                                                "language": "python" if kind == "src" else "markdown",
                                                "startLine": j * 10 + 1, "endLine": j * 10 + 9}})
                files.append({"path": f"{kind}/f{i}.py", "size": 1, "mtimeNs": 1, "sha256": "x",
                              "sourceType": "code" if kind == "src" else "markdown",
                              "language": "python" if kind == "src" else "markdown",
                              "content": "", "chunks": chunks})
            conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id, Jsonb(files)))
        stored = conn.execute("SELECT content_hash, content FROM rag.chunks").fetchall()
        vectors = embedder.embed_documents([r["content"] for r in stored])
        conn.execute(
            "SELECT rag.store_embeddings(%s, %s, %s, %s)",
            (embedder.model_id, dims, [r["content_hash"] for r in stored],
             ["[" + ",".join(map(str, v)) + "]" for v in vectors]),
        )
        conn.execute("SELECT rag.ensure_vector_index(%s)", (embedder.model_id,))
        conn.execute("SELECT rag.ensure_heads_index()")
    return embedder


def test_documents_are_keyword_indexed_by_their_stems_and_code_by_its_exact_terms(
    rag_db: db.DatabaseTarget,
) -> None:
    chunks = {"guide.md": ("The server is configured here.", "markdown"),
              "notes.txt": ("Servers get configured by hand.", "text"),
              "tool.py": ("configured = load(servers)", "code")}
    with db.connect(rag_db) as conn:
        source_id = conn.execute("SELECT rag.upsert_source('s', 'local', '/s') AS id").fetchone()["id"]  # type: ignore[index]
        conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id, Jsonb([
            {"path": path, "size": 1, "mtimeNs": 1, "sha256": path, "content": text, "chunks": [
                {"content": text, "contentHash": path, "metadata": {"path": path, "sourceType": kind}}]}
            for path, (text, kind) in chunks.items()])))

    def found(query: str) -> list[str]:
        return sorted(r["path"] for r in rows(
            rag_db, "SELECT c.metadata->>'path' AS path FROM rag.bm25_search(%s, 10) b"
                    " JOIN rag.chunks c ON c.id = b.chunk_id", query))

    assert found("configuring") == ["guide.md", "notes.txt"]  # code has no "configuring"
    assert found("configured") == ["guide.md", "notes.txt", "tool.py"]
    assert found("server") == ["guide.md", "notes.txt"]  # "servers" in code is another word
    posted = rows(rag_db, "SELECT c.metadata->>'path' AS path, array_agg(p.term ORDER BY p.term) AS terms"
                          " FROM rag.postings p JOIN rag.chunks c ON c.id = p.chunk_id GROUP BY 1 ORDER BY 1")
    assert posted[0] == {"path": "guide.md", "terms": ["stem:", "stem:configur", "stem:here", "stem:is",
                                                       "stem:server", "stem:the"]}
    assert posted[2]["terms"] == ["configured", "load", "servers"]
    # Two fields: a stem's idf counts the 2 documents, a word's the 1 other chunk, not all 3.
    assert rows(rag_db, "SELECT rag._documents() AS n") == [{"n": 2.0}]
    idf = {r["term"]: r["idf"] for r in rows(
        rag_db, "SELECT s.term, rag._field_idf(s.term, s.df, 3, 2) AS idf FROM rag.term_stats s"
                " WHERE s.term IN ('stem:configur', 'configured')")}
    assert idf == {"stem:configur": pytest.approx(math.log(1 + 0.5 / 2.5)),
                   "configured": pytest.approx(math.log(1 + 0.5 / 1.5))}
    [scored] = rows(rag_db, "SELECT b.score FROM rag.bm25_search('configuring', 1) b")
    [expected] = rows(rag_db, "SELECT rag._bm25_weight(1, c.term_count, ln(1 + 0.5 / 2.5), 1.2, 0.75,"
                              " (SELECT total_terms::float8 / chunks FROM rag.corpus_stats)) AS score"
                              " FROM rag.chunks c WHERE c.metadata->>'path' = 'notes.txt'")
    assert scored["score"] == pytest.approx(expected["score"])


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("how do I get the user by id", ["get", "id", "user"]),
        ("The Django ORM", ["django", "orm"]),             # a capitalized first word too
        ("is_valid and the flag", ["flag", "is", "is_valid", "valid"]),  # identifier parts stay
        ("THE END of it", ["end", "the"]),                   # shouted words are not plain words
        ("the user", ["the", "user"]),                       # under three words: identifier-like
        ("getTheUser", ["get", "gettheuser", "the", "user"]),
        ("to be or not", ["be", "not", "or", "to"]),         # nothing else left: all kept
        ("", []),
    ],
)
def test_query_terms_drop_stop_words_of_questions_only(rag_db: db.DatabaseTarget, query: str,
                                                       expected: list[str]) -> None:
    assert rows(rag_db, "SELECT rag.query_terms(%s) AS t", query)[0]["t"] == expected


def test_stop_words_alone_do_not_match_a_question(rag_db: db.DatabaseTarget) -> None:
    with db.connect(rag_db) as conn:
        source_id = conn.execute("SELECT rag.upsert_source('s', 'local', '/s') AS id").fetchone()["id"]  # type: ignore[index]
        chunks = [{"content": text, "contentHash": f"h{i}",
                   "metadata": {"path": f"f{i}.md", "sourceType": "markdown", "language": "markdown"}}
                  for i, text in enumerate(["where is the one of the many in the list", "config loader"])]
        conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id, Jsonb(
            [{"path": f"f{i}.md", "size": 1, "mtimeNs": 1, "sha256": "x", "sourceType": "markdown",
              "language": "markdown", "content": "", "chunks": [c]} for i, c in enumerate(chunks)])))
    hits = rows(rag_db, "SELECT c.content FROM rag.bm25_search('where is the config loader', 10) b "
                        "JOIN rag.chunks c ON c.id = b.chunk_id")
    assert [h["content"] for h in hits] == ["config loader"]


def test_bm25_matches_the_reference_implementation(rag_db: db.DatabaseTarget) -> None:
    build_corpus(rag_db, 60)
    corpus = rows(rag_db, "SELECT id, content FROM rag.chunks ORDER BY id")
    docs = []
    for chunk in corpus:  # the same tokens our SQL tokenizer produced
        tf = terms(rag_db, chunk["content"])
        docs.append([t for t, n in sorted(tf.items()) for _ in range(n)])
    reference = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    reference.index(docs, show_progress=False)
    for query in ("find user by id", "http server cache", "vector", "token parse save load", "nothing"):
        query_terms = rows(rag_db, "SELECT rag.query_terms(%s) AS t", query)[0]["t"]  # "by" dropped
        expected = reference.get_scores(query_terms)
        # bm25_search's ranking and the exhaustive reference the other tests hold it to.
        for function in ("bm25_search(%s, 1000)", "_bm25_exhaustive(%s)"):
            got = {r["chunk_id"]: r["score"] for r in rows(rag_db, f"SELECT * FROM rag.{function}", query)}
            # Our scores keep the classic (k1 + 1) numerator that Lucene dropped: a constant factor.
            for chunk, want in zip(corpus, expected, strict=True):
                assert math.isclose(got.get(chunk["id"], 0.0) / 2.2, float(want), rel_tol=1e-6, abs_tol=1e-9)


def test_bm25_top_n_equals_the_exhaustive_ranking(rag_db: db.DatabaseTarget) -> None:
    """3,000 chunks: common terms' postings outnumber the first read (256), so reading deepens."""
    build_corpus(rag_db, 1000)
    rng = random.Random(3)
    queries = ["user service", "find id user service cache", "vector index query search", "user by id"]
    queries += [" ".join(rng.sample(WORDS, rng.randint(1, 8))) for _ in range(40)]
    for query in queries:
        full = rows(rag_db, "SELECT chunk_id, score FROM rag._bm25_exhaustive(%s)", query)
        for top_n in (1, 10, 50):
            top = rows(rag_db, "SELECT chunk_id, score FROM rag.bm25_search(%s, %s)", query, top_n)
            assert [r["score"] for r in top] == pytest.approx([r["score"] for r in full[:top_n]], rel=1e-9), query


def test_bm25_heads_of_common_terms_give_the_exhaustive_ranking(rag_db: db.DatabaseTarget) -> None:
    """Terms in most chunks (more than a first MaxScore round reads), with their heaviest postings
    in rag.postings_heads_idx and the rest below it."""
    rng = random.Random(5)
    texts = []
    for i in range(5000):
        words = ["alpha"] * rng.randint(1, 6) + ["beta"] * rng.randint(1, 3) + ["zz"] * rng.randint(0, 400)
        rng.shuffle(words)
        texts.append(f"c{i} " + " ".join(words))
    with db.connect(rag_db) as conn:
        source_id = conn.execute("SELECT rag.upsert_source('s', 'local', '/s') AS id").fetchone()["id"]  # type: ignore[index]
        chunks = [{"content": t, "contentHash": str(i), "metadata": {"path": "a.txt"}} for i, t in enumerate(texts)]
        conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id, Jsonb([
            {"path": "a.txt", "size": 1, "mtimeNs": 1, "sha256": "x", "content": "", "chunks": chunks}])))
        length = conn.execute("SELECT rag.ensure_heads_index() AS r").fetchone()["r"]  # type: ignore[index]
    assert length == 256  # the average chunk holds ~205 terms
    heads = rows(rag_db, "SELECT count(*) FILTER (WHERE rag.posting_impact(tf, term_count, %s) >= 800000) AS heads,"
                         " count(*) AS postings FROM rag.postings WHERE term = 'alpha'", length)[0]
    assert 0 < heads["heads"] < heads["postings"] == 5000
    for query in ("alpha", "alpha beta", "beta zz", "alpha zz c7"):
        full = rows(rag_db, "SELECT chunk_id, score FROM rag._bm25_exhaustive(%s)", query)
        for top_n in (1, 10, 50):
            top = rows(rag_db, "SELECT chunk_id, score FROM rag.bm25_search(%s, %s)", query, top_n)
            assert [r["score"] for r in top] == pytest.approx([r["score"] for r in full[:top_n]], rel=1e-9), query


def test_bm25_reads_whole_every_term_that_can_reach_the_threshold(rag_db: db.DatabaseTarget) -> None:
    """MaxScore's first round reads only the rare term (in 60 long chunks): its threshold, their
    weight 0.71, is below the bound of `common` (in 4,500 chunks: 0.97), so `common` must be read
    whole, not only looked up for the rare term's chunks, whose short chunks score 0.77. (Within
    1.5 times the threshold: a looser test of which terms to read whole would miss them.)"""
    texts = [f"rare {'zz ' * 110}" for _ in range(60)]
    texts += [f"common common common common common w{i}" for i in range(4500)]
    texts += [f"other w{i}" for i in range(2440)]
    with db.connect(rag_db) as conn:
        source_id = conn.execute("SELECT rag.upsert_source('s', 'local', '/s') AS id").fetchone()["id"]  # type: ignore[index]
        chunks = [{"content": t, "contentHash": str(i), "metadata": {"path": "a.txt"}} for i, t in enumerate(texts)]
        conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id, Jsonb([
            {"path": "a.txt", "size": 1, "mtimeNs": 1, "sha256": "x", "content": "", "chunks": chunks}])))
    rare = rows(rag_db, "SELECT score FROM rag.bm25_search('rare', 1)")[0]["score"]
    full = rows(rag_db, "SELECT chunk_id, score FROM rag._bm25_exhaustive('rare common')")
    bound = rows(rag_db, "SELECT ln(1 + (7000 - df + 0.5) / (df + 0.5))::float8 * 2.2 AS b"
                         " FROM rag.term_stats WHERE term = 'common'")[0]["b"]
    assert bound / 1.5 < rare < full[49]["score"] < bound  # as designed
    top = rows(rag_db, "SELECT chunk_id, score FROM rag.bm25_search('rare common', 50)")
    assert [r["score"] for r in top] == pytest.approx([r["score"] for r in full[:50]], rel=1e-9)


def test_postings_emptied_as_by_a_crash_are_rebuilt_the_same(
    rag_db: db.DatabaseTarget, caplog: pytest.LogCaptureFixture
) -> None:
    """What crash recovery does to the unlogged postings, then rag.ensure_keyword_data()."""
    build_corpus(rag_db, 300)
    everything = "SELECT term, chunk_id, tf, term_count FROM rag.postings ORDER BY term, chunk_id"
    before = rows(rag_db, everything)
    ranked = rows(rag_db, "SELECT * FROM rag.bm25_search('find id user service cache', 50)")
    assert rows(rag_db, "SELECT rag.ensure_keyword_data() AS r") == [{"r": False}]  # intact: nothing to do
    with db.connect(rag_db) as conn:
        db.ensure_keyword_data(conn)
    assert caplog.text == ""  # intact: nothing said
    with db.connect(rag_db) as conn:
        conn.execute("TRUNCATE rag.postings, rag.keyword_data_intact")
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="emptied by a database crash"):
            conn.execute("SELECT * FROM rag.bm25_search('user')")
    with db.connect(rag_db) as conn:
        db.ensure_keyword_data(conn)  # as the CLI, the MCP server and `rag index` call it
    assert "rebuilding the keyword index (emptied by a database crash" in caplog.text
    assert rows(rag_db, everything) == before
    assert rows(rag_db, "SELECT to_regclass('rag.postings_heads_idx') IS NOT NULL AS heads") == [{"heads": True}]
    # (to 9 places: the rebuild's VACUUM ANALYZE can change plans, and with them the order of sums)
    assert rounded(rows(rag_db, "SELECT * FROM rag.bm25_search('find id user service cache', 50)")) == rounded(ranked)


def test_heads_index_follows_the_average_chunk_length(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    def predicate(conn: psycopg.Connection[dict[str, Any]]) -> str:
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'postings_heads_idx'").fetchone()
        return row["indexdef"] if row else ""

    (tmp_path / "short.txt").write_text("\n\n".join(f"note {i} about parsing" for i in range(30)))
    with db.connect(rag_db) as conn:
        assert conn.execute("SELECT rag.ensure_heads_index() AS r").fetchone() == {"r": None}  # no chunks yet
        index_source(conn, SourceSpec("docs", "local", str(tmp_path)), tmp_path, HashEmbedder(8), ChunkSettings())
        short = conn.execute("SELECT heads_length FROM rag.corpus_stats").fetchone()["heads_length"]  # type: ignore[index]
        assert short is not None and f", {short}) >= 800000" in predicate(conn)  # built by the index run
        (tmp_path / "long.txt").write_text(" ".join(f"word{i % 97} other{i % 13}" for i in range(3000)))
        index_source(conn, SourceSpec("docs", "local", str(tmp_path)), tmp_path, HashEmbedder(8), ChunkSettings())
        grown = conn.execute("SELECT heads_length FROM rag.corpus_stats").fetchone()["heads_length"]  # type: ignore[index]
        assert grown > short * 1.5 and f", {grown}) >= 800000" in predicate(conn)  # rebuilt for longer chunks
        assert conn.execute("SELECT rag.ensure_heads_index() AS r").fetchone() == {"r": grown}  # no drift: kept


def test_bm25_completes_candidates_beyond_the_first_batch(rag_db: db.DatabaseTarget) -> None:
    """The winner has the 101st best partial score: only the second completion batch finds it."""
    texts = ["alpha zz zz zz"] * 10 + ["alpha zz zz zz zz"] * 90 + ["alpha beta beta beta beta beta"]
    texts += ["beta zz zz"] * 600 + ["zz zz zz"] * 200
    with db.connect(rag_db) as conn:
        source_id = conn.execute("SELECT rag.upsert_source('s', 'local', '/s') AS id").fetchone()["id"]  # type: ignore[index]
        chunks = [{"content": t, "contentHash": str(i), "metadata": {"path": "a.txt"}} for i, t in enumerate(texts)]
        conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id, Jsonb([
            {"path": "a.txt", "size": 1, "mtimeNs": 1, "sha256": "x", "content": "", "chunks": chunks}])))
    top = rows(rag_db, "SELECT chunk_id, score, rank FROM rag.bm25_search('alpha beta', 1)")
    full = rows(rag_db, "SELECT chunk_id, score, rank FROM rag.bm25_search('alpha beta', 1000)")
    assert rounded(top) == rounded(full[:1])
    assert rows(rag_db, "SELECT content FROM rag.chunks WHERE id = %s", top[0]["chunk_id"])[0]["content"] == texts[100]


def test_bm25_formulas_are_inlined(rag_db: db.DatabaseTarget) -> None:
    """The weight, idf and heads floor are written once as SQL functions, at no cost per posting."""
    plan = rows(rag_db, "EXPLAIN (VERBOSE) SELECT rag._bm25_weight(p.tf, p.term_count, rag._bm25_idf(3, 10), 1.2,"
                        " 0.75, 100) FROM rag.postings p WHERE rag.posting_impact(p.tf, p.term_count, 64)"
                        " >= rag._heads_floor()")
    text = "\n".join(r["QUERY PLAN"] for r in plan)
    assert "_bm25" not in text and "_heads_floor" not in text and ">= 800000" in text, text


POSTINGS_READ = (
    # Rows this transaction read from rag.postings: sequential scans of the table plus
    # entries read from each of its indexes (the statistics pending for the transaction).
    "SELECT sum(pg_stat_get_xact_tuples_returned(r.oid))::bigint AS n FROM (SELECT 'rag.postings'::regclass::oid"
    " UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid = 'rag.postings'::regclass) r(oid)"
)


def postings_read(target: db.DatabaseTarget, call: str) -> tuple[int, list[dict[str, Any]]]:
    with psycopg.connect(target.url, row_factory=dict_row) as conn:  # one transaction
        before = conn.execute(POSTINGS_READ).fetchone()["n"]  # type: ignore[index]
        found = conn.execute(call.encode()).fetchall()
        return conn.execute(POSTINGS_READ).fetchone()["n"] - before, found  # type: ignore[index]


def store_texts(target: db.DatabaseTarget, texts: list[str], folder_of: Any = lambda i: "a") -> None:
    """One source `s`; chunk i in file `<folder_of(i)>/t.txt`."""
    with db.connect(target) as conn:
        source_id = conn.execute("SELECT rag.upsert_source('s', 'local', '/s') AS id").fetchone()["id"]  # type: ignore[index]
        files: dict[str, list[dict[str, Any]]] = {}
        for i, t in enumerate(texts):
            path = f"{folder_of(i)}/t.txt"
            files.setdefault(path, []).append({"content": t, "contentHash": str(i), "metadata": {"path": path}})
        conn.execute("SELECT * FROM rag.replace_files(%s, %s)", (source_id, Jsonb([
            {"path": p, "size": 1, "mtimeNs": 1, "sha256": "x", "content": "", "chunks": c}
            for p, c in files.items()])))
        conn.execute("SELECT rag.ensure_heads_index()")
        conn.execute("VACUUM ANALYZE rag.postings")


@pytest.mark.parametrize(
    ("strategy", "call", "most"),
    [
        # `common` in 6,000 chunks, `rare` in 100 short ones: MaxScore reads `rare` whole and looks
        # `common` up for its candidates only.
        ("MaxScore", "bm25_search('rare common', 10)", 300),
        # The same under a folder holding half the chunks, too many to score them all.
        ("MaxScore, filtered", "bm25_search('rare common', 10, path_prefix => 'even/', score_all_below => 100)", 300),
        # Only common terms: their heads (the first 200 of each), then the candidates' other terms.
        ("heads", "bm25_search('common often', 10)", 1000),
    ],
)
def test_bm25_reads_few_postings(rag_db: db.DatabaseTarget, strategy: str, call: str, most: int) -> None:
    """A plan that reads whole posting lists where the strategy needs a few hundred postings fails
    here, not only in `make bench-search`: it returns the same ranking, only slower."""
    rng = random.Random(11)
    texts = [f"rare common w{i}" for i in range(100)]
    texts += [f"common {'often ' * rng.randint(1, 5)}{'zz ' * rng.randint(0, 60)}" for _ in range(6000)]
    store_texts(rag_db, texts, folder_of=lambda i: "even" if i % 2 == 0 else "odd")
    read, found = postings_read(rag_db, f"SELECT chunk_id, score FROM rag.{call}")
    oracle = call.replace("bm25_search", "_bm25_exhaustive").replace(", 10", "").replace(", score_all_below => 100", "")
    everything, full = postings_read(rag_db, f"SELECT chunk_id, score FROM rag.{oracle}")
    assert [r["score"] for r in found] == pytest.approx([r["score"] for r in full[:10]], rel=1e-9)
    assert everything >= 6000  # the counter sees postings read (the reference reads every one)
    assert read <= most, f"{strategy}: {read} postings read of {everything}"


@pytest.mark.parametrize("filters", ["sources => ARRAY['big']", "languages => ARRAY['python']",
                                     "path_prefix => 'docs/'"])
def test_bm25_filtered_maxscore_equals_scoring_every_filtered_chunk(rag_db: db.DatabaseTarget, filters: str) -> None:
    """MaxScore under filters: common terms of docs/ (~120 chunks) are probed per chunk, not read whole."""
    build_corpus(rag_db, 200)
    for query in ("user service", "find id user service cache token", "vector index query search", "by"):
        every = rows(rag_db, f"SELECT chunk_id, score FROM rag._bm25_exhaustive(%s, {filters}) LIMIT 10", query)
        assert len(every) == 10
        # 0: postings checked against their chunks; 60: against the ids of the filtered chunks;
        # 100000: every filtered chunk scored.
        for score_all_below in (0, 60, 100000):
            pruned = rows(rag_db, f"SELECT chunk_id, score FROM rag.bm25_search(%s, 10, {filters},"
                                  " score_all_below => %s)", query, score_all_below)
            assert [round(r["score"], 9) for r in pruned] == [round(r["score"], 9) for r in every], query


def test_filter_dependent_functions_are_planned_per_call(rag_db: db.DatabaseTarget) -> None:
    """A cached generic plan cannot tell which filters are NULL: it scanned every chunk for a source filter."""
    config = rows(rag_db, "SELECT proconfig FROM pg_proc WHERE proname = '_filtered_chunks'")
    assert "plan_cache_mode=force_custom_plan" in config[0]["proconfig"]
    build_corpus(rag_db, 100)
    with psycopg.connect(rag_db.url, row_factory=dict_row) as conn:  # one transaction
        filtered = conn.execute("SELECT * FROM rag.bm25_search('user service', 10, path_prefix => 'src/',"
                                " score_all_below => 10)").fetchall()
        # bm25_search plans its filtered statements per call, then restores the setting.
        assert conn.execute("SELECT current_setting('plan_cache_mode') AS m").fetchone() == {"m": "auto"}
        # Unfiltered, only the MaxScore round (whose cached plan filtered calls share) is.
        unfiltered = conn.execute("SELECT * FROM rag.bm25_search('user service', 10)").fetchall()
        assert conn.execute("SELECT current_setting('plan_cache_mode') AS m").fetchone() == {"m": "auto"}
    assert len(filtered) == 10 and len(unfiltered) == 10


def arms(target: db.DatabaseTarget, column: str) -> tuple[str, dict[int, float], dict[int, float]]:
    """A 30-file corpus, the vector of "find user", and ``column`` (rank or score) of each arm's top 50 by chunk."""
    embedder = build_corpus(target, 30)
    vector = "[" + ",".join(map(str, embedder.embed_query("find user"))) + "]"
    keyword = {r["chunk_id"]: r[column] for r in rows(target, "SELECT * FROM rag.bm25_search('find user', 50)")}
    semantic = {r["chunk_id"]: r[column] for r in rows(
        target, "SELECT * FROM rag.vector_search(%s::vector, %s, 50)", vector, embedder.model_id)}
    return vector, keyword, semantic


def test_fusion_is_weighted_reciprocal_rank(rag_db: db.DatabaseTarget) -> None:
    vector, keyword, semantic = arms(rag_db, "rank")
    fused = rows(rag_db, "SELECT * FROM rag.search('find user', %s::vector, 20, options =>"
                         " '{\"bm25Weight\": 0.3, \"vectorWeight\": 0.7, \"rrf\": {\"k\": 10}}')", vector)
    assert len(fused) == 20
    for r in fused:
        assert r["bm25_rank"] == keyword.get(r["chunk_id"]) and r["vector_rank"] == semantic.get(r["chunk_id"])
        expected = (0.3 / (10 + r["bm25_rank"]) if r["bm25_rank"] else 0) + (
            0.7 / (10 + r["vector_rank"]) if r["vector_rank"] else 0)
        assert math.isclose(r["score"], expected)
    assert [r["score"] for r in fused] == sorted((r["score"] for r in fused), reverse=True)
    # Hand-computed: a chunk first in both arms scores 0.3/11 + 0.7/11.
    both_first = [r for r in fused if r["bm25_rank"] == 1 and r["vector_rank"] == 1]
    assert all(math.isclose(r["score"], 1 / 11) for r in both_first)


def test_score_fusion_adds_weighted_scaled_scores(rag_db: db.DatabaseTarget) -> None:
    """fusion => 'scores': BM25 over the best candidate's, cosine spread 0..1 over the candidates."""
    vector, keyword, semantic = arms(rag_db, "score")
    fused = rows(rag_db, "SELECT * FROM rag.search('find user', %s::vector, 20, options => '{\"bm25Weight\": 0.3,"
                         " \"vectorWeight\": 0.7, \"retrieveTopK\": 50, \"fusion\": \"scores\"}')", vector)
    assert {r["fusion"] for r in fused} == {"scores"}
    best, low, high = max(keyword.values()), min(semantic.values()), max(semantic.values())
    assert len(fused) == 20 and high > low
    for r in fused:
        expected = (0.3 * keyword[r["chunk_id"]] / best if r["chunk_id"] in keyword else 0) + (
            0.7 * (semantic[r["chunk_id"]] - low) / (high - low) if r["chunk_id"] in semantic else 0)
        assert math.isclose(r["score"], expected)
    assert [r["score"] for r in fused] == sorted((r["score"] for r in fused), reverse=True)
    # The order differs from RRF's on this corpus: score gaps count, not only ranks.
    by_rank = rows(rag_db, "SELECT chunk_id FROM rag.search('find user', %s::vector, 20, options =>"
                           " '{\"bm25Weight\": 0.3, \"vectorWeight\": 0.7, \"retrieveTopK\": 50}')", vector)
    assert [r["chunk_id"] for r in by_rank] != [r["chunk_id"] for r in fused]


def test_keyword_only_search_is_the_bm25_top_k(rag_db: db.DatabaseTarget) -> None:
    """Without a vector arm only top_k + 5 keyword candidates are ranked: the answer is that of 50."""
    build_corpus(rag_db, 300)
    for query in ("user service", "find id user service cache token", "vector index query search", "by"):
        top50 = rows(rag_db, "SELECT chunk_id, score, rank FROM rag.bm25_search(%s, 50)", query)
        # (each chunk a hit of its own: merged neighbours would free places for the 51st)
        alone = {"mergeAdjacent": {"documents": False, "code": False}}
        for top_k, options in ((1, alone), (10, alone), (10, {**alone, "vectorWeight": 0}), (45, alone), (50, alone)):
            found = rows(rag_db, "SELECT chunk_id, bm25_score AS score, bm25_rank AS rank "
                                 "FROM rag.search(%s, top_k => %s, options => %s)", query, top_k, json.dumps(options))
            # Scores to 9 places: which terms a plan sums first depends on top_n
            # (and on the plans the statistics of the moment give), and
            # floating-point sums in another order differ in the last bit.
            assert rounded(found) == rounded(top50[:top_k]), (query, top_k)


def rounded(ranking: list[dict[str, Any]]) -> list[tuple[int, int, float]]:
    return [(r["chunk_id"], r["rank"], round(r["score"], 9)) for r in ranking]


@pytest.mark.parametrize(
    ("filters", "check"),
    [
        ('{"sources": ["small"]}', lambda r: r["source_name"] == "small"),
        ('{"types": "markdown"}', lambda r: r["path"].startswith("docs/")),
        ('{"languages": ["python"]}', lambda r: r["path"].startswith("src/")),
        ('{"pathPrefix": "docs/f1"}', lambda r: r["path"].startswith("docs/f1")),
    ],
)
def test_filters_apply_inside_both_arms(rag_db: db.DatabaseTarget, filters: str, check: Any) -> None:
    embedder = build_corpus(rag_db, 300)
    vector = "[" + ",".join(map(str, embedder.embed_query("x"))) + "]"
    found = rows(rag_db, f"SELECT * FROM rag.search('user', %s::vector, 10, filters => '{filters}')", vector)
    assert len(found) == 10
    assert all(check(r) for r in found)
    assert any(r["vector_rank"] for r in found) and any(r["bm25_rank"] for r in found)


def test_selective_filter_through_hnsw_iterative_scan_still_fills_top_n(rag_db: db.DatabaseTarget) -> None:
    embedder = build_corpus(rag_db, 1000, dims=32)  # 3,000 chunks, 'small' holds 10%
    with db.connect(rag_db) as conn:
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
            "EXPLAIN SELECT c.id FROM rag.embeddings e JOIN rag.chunks c ON c.content_hash = e.content_hash"
            " WHERE e.model = %s ORDER BY e.embedding::vector(32) <=> %s::vector(32) LIMIT 10",
            (embedder.model_id, "[" + ",".join(["0.1"] * 32) + "]")).fetchall())
    assert "embeddings_hnsw_" in plan, plan
    vector = "[" + ",".join(map(str, embedder.embed_query("q"))) + "]"
    exact = rows(rag_db, "SELECT chunk_id FROM rag.vector_search(%s::vector, %s, 50,"
                         " path_prefix => 'docs/f10', exact_below => 100000)", vector, embedder.model_id)
    approximate = rows(rag_db, "SELECT chunk_id FROM rag.vector_search(%s::vector, %s, 50,"
                               " path_prefix => 'docs/f10', exact_below => 0)", vector, embedder.model_id)
    matching = rows(rag_db, "SELECT count(*) AS n FROM rag.chunks c JOIN rag.files f ON f.id = c.file_id"
                            " WHERE f.path LIKE 'docs/f10%%'")[0]["n"]
    assert 10 <= matching <= 50
    assert len(exact) == matching
    assert len(approximate) >= 10, "a 1%-selective filter still yields results through HNSW"


def test_stored_query_embedding_is_used_from_psql(rag_db: db.DatabaseTarget) -> None:
    embedder = build_corpus(rag_db, 30)
    keyword_only = rows(rag_db, "SELECT * FROM rag.search('cache token')")
    assert keyword_only and all(r["vector_rank"] is None for r in keyword_only)
    vector = "[" + ",".join(map(str, embedder.embed_query("cache token"))) + "]"
    rows(rag_db, "SELECT rag.remember_query_embedding(%s, 'cache token', %s::vector)", embedder.model_id, vector)
    result = subprocess.run(
        [str(Path(sys.executable).parent / "rag"), "psql", "-tA", "-c",
         "SELECT count(vector_rank) FROM rag.search('cache token')"],
        env={"RAG_DATABASE_URL": rag_db.url, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
        check=True,
    )
    assert int(result.stdout.strip()) > 0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        ("SELECT * FROM rag.search('   ')", "search: query is empty"),
        ("SELECT * FROM rag.search('x', top_k => 0)", "top_k must be between 1 and 1000"),
        ("SELECT * FROM rag.search('x', filters => '{\"sources\": [\"nope\"]}')",
         "unknown source 'nope'; known: big, small"),
        ("SELECT * FROM rag.search('x', filters => '{\"source\": \"big\"}')",
         "unknown filter 'source'; filters: sources, types, languages, pathPrefix"),
        ("SELECT * FROM rag.search('x', filters => '{\"types\": [1]}')", "filter types must hold strings only"),
        ("SELECT * FROM rag.search('x', '[1,2,3]'::vector)", "no stored embeddings have 3 dimensions"),
        ("SELECT * FROM rag.search('x', options => '{\"retrieveTopK\": 0}')",
         "option retrieveTopK must be a whole number from 1 to 1000, not 0"),
        ("SELECT * FROM rag.search('x', options => '{\"fusion\": \"max\"}')",
         'option fusion must be "rrf" or "scores", not "max"'),
        ("SELECT * FROM rag.search('x', options => '{\"graphWeight\": -1}')",
         "option graphWeight must be a number of at least 0, not -1"),
        ("SELECT * FROM rag.search('x', options => '{\"namesWeight\": \"high\"}')",
         'option namesWeight must be a number of at least 0, not "high"'),
        ("SELECT * FROM rag.search('x', options => '{\"rrf\": {\"k\": 2.5}}')",
         "option rrf.k must be a whole number of at least 1, not 2.5"),
        ("SELECT * FROM rag.search('x', options => '{\"bm25Weigth\": 1}')", "unknown option 'bm25Weigth'; options:"),
        ("SELECT * FROM rag.search('x', options => '{\"bm25\": {\"k3\": 1}}')", "unknown option 'bm25.k3'"),
        ("SELECT * FROM rag.search('x', options => '{\"priors\": {\"tset\": 1}}')", "tset"),
        ("SELECT * FROM rag.bm25_search('x', k1 => 0)", "k1 must be positive"),
        ("SELECT * FROM rag.bm25_search('x', score_all_below => -2)", "score_all_below must be 0 or more"),
        ("SELECT * FROM rag.vector_search('[1,2,3]', 'm', exact_below => -1)", "exact_below must be 0 or more"),
    ],
)
def test_bad_search_arguments_are_named(rag_db: db.DatabaseTarget, call: str, message: str) -> None:
    build_corpus(rag_db, 5)
    with pytest.raises(psycopg.Error) as err:
        rows(rag_db, call)
    assert message in str(err.value)


@pytest.mark.parametrize("query", ["'; DROP TABLE rag.chunks; --", "!!!", "the " * 2500, "%_\\"])
def test_odd_queries_give_sensible_results(rag_db: db.DatabaseTarget, query: str) -> None:
    build_corpus(rag_db, 5)
    rows(rag_db, "SELECT * FROM rag.search(%s)", query)
    assert rows(rag_db, "SELECT count(*) AS n FROM rag.chunks")[0]["n"] > 0


class FailingReranker:
    name = "broken"

    def rerank(self, query: str, documents: list[str], top_k: int) -> list[RerankResult]:
        raise ProviderError("jina: service unavailable (HTTP 503)")


class ReversingReranker:
    name = "reverse"

    def rerank(self, query: str, documents: list[str], top_k: int) -> list[RerankResult]:
        return [RerankResult(i, float(i)) for i in reversed(range(len(documents)))][:top_k]


def indexed_project(target: db.DatabaseTarget, tmp_path: Path, embedder: Any) -> None:
    root = tmp_path / "p"
    (root / "src").mkdir(parents=True)
    (root / "src" / "users.py").write_text(
        "class UserService:\n    def find_by_id(self, user_id):\n        return self.db.get(user_id)\n")
    (root / "src" / "tokens.py").write_text("def parse_token(raw):\n    return raw.split('.')\n")
    (root / "README.md").write_text("# Users\n\nHow users are found by id.\n")
    with db.connect(target) as conn:
        index_source(conn, SourceSpec("p", "local", str(root)), root, embedder, ChunkSettings(200, 20))


def test_searcher_embeds_reranks_and_falls_back(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    embedder = HashEmbedder()
    indexed_project(rag_db, tmp_path, embedder)
    settings = SearchConfig(final_top_k=3)
    with db.connect(rag_db) as conn:
        plain = Searcher(conn, settings, embedder, NoReranker()).search(SearchRequest("find user by id"))
        assert plain.hits[0].path == "src/users.py" and plain.hits[0].vector_rank is not None
        assert rows(rag_db, "SELECT count(*) AS n FROM rag.query_embeddings")[0]["n"] == 1

        reranked = Searcher(conn, settings, embedder, ReversingReranker()).search(SearchRequest("find user by id"))
        assert [h.rerank for h in reranked.hits] == sorted((h.rerank for h in reranked.hits), reverse=True)

        fallback = Searcher(conn, settings, embedder, FailingReranker()).search(SearchRequest("find user by id"))
        assert [h.chunk_id for h in fallback.hits] == [h.chunk_id for h in plain.hits]
        assert fallback.warnings and "HTTP 503" in fallback.warnings[0]

        by_scores = Searcher(conn, SearchConfig(final_top_k=3, fusion="scores"), embedder, NoReranker()).search(
            SearchRequest("find user by id"))
        most = 0.5 + 0.5 + 0.4  # each arm's weight times at most 1 (bm25, vector, names)
        assert 0 < by_scores.hits[0].score <= most < 1 / plain.hits[0].score, "scaled scores, not 1/(k + rank)"

        keyword = Searcher(conn, settings, embedder, NoReranker()).search(
            SearchRequest("parse token", keyword_only=True))
        assert keyword.hits[0].path == "src/tokens.py" and keyword.hits[0].vector_rank is None

        other_model = Searcher(conn, settings, HashEmbedder(16, "other"), NoReranker())
        switched = other_model.search(SearchRequest("parse token"))
        assert switched.hits and all(h.vector_rank is None for h in switched.hits), "no vectors yet: keywords"

        with pytest.raises(RagError, match="query is empty"):
            Searcher(conn, settings, embedder, NoReranker()).search(SearchRequest("  "))
        with pytest.raises(RagError, match="has 10,001 characters; keep it to 10,000 or fewer"):
            Searcher(conn, settings, embedder, NoReranker()).search(SearchRequest("x" * 10_001))


def test_a_chunk_gone_since_the_arms_ran_does_not_take_a_slot(rag_db: db.DatabaseTarget) -> None:
    build_corpus(rag_db, 30)
    first = rows(rag_db, "SELECT chunk_id FROM rag.search('user service', top_k => 10)")[0]["chunk_id"]
    with db.connect(rag_db) as conn:  # as if an index run replaced it: its postings are still found
        conn.execute("DELETE FROM rag.chunks WHERE id = %s", (first,))
    found = rows(rag_db, "SELECT chunk_id FROM rag.search('user service', top_k => 10)")
    assert len(found) == 10 and first not in {r["chunk_id"] for r in found}


def test_hybrid_search_lifts_definitions_the_best_candidates_call(rag_db: db.DatabaseTarget, tmp_path: Path) -> None:
    """A candidate holding a definition that a top candidate calls gains graph_weight x the caller's score."""
    (tmp_path / "store.py").write_text("def write_row(row):\n    return row\n\n\ndef unrelated_row():\n    return 1\n")
    (tmp_path / "api.py").write_text(
        "from store import write_row\n\n\ndef save_user(user):\n    return write_row(user)\n")
    embedder = HashEmbedder()
    with db.connect(rag_db) as conn:
        index_source(conn, SourceSpec("g", "local", str(tmp_path)), tmp_path, embedder, ChunkSettings(20, 0))
    vector = "[" + ",".join(map(str, embedder.embed_query("save user row"))) + "]"

    def ranked(**weights: float) -> dict[str, float]:
        # (the files arm lifts by its own rule; store.py's two functions are hits of their own)
        options = json.dumps({"filesWeight": 0, "mergeAdjacent": {"code": False}, **weights})
        found = rows(rag_db, "SELECT fqn, score FROM rag.search('save user row', %s::vector, 10, options => %s)",
                     vector, options)
        return {r["fqn"]: r["score"] for r in found}

    plain, lifted = ranked(graphWeight=0), ranked(graphWeight=0.5)
    assert {"save_user", "write_row", "unrelated_row"} <= set(plain)
    assert math.isclose(lifted["write_row"], plain["write_row"] + 0.5 * plain["save_user"]), "called by save_user"
    assert lifted["save_user"] == plain["save_user"] and lifted["unrelated_row"] == plain["unrelated_row"]
    assert ranked() == ranked(graphWeight=0.1), "0.1 is the default"
    keyword_lifted, keyword_plain = (
        rows(rag_db, "SELECT fqn, score FROM rag.search('save user row', options => %s)",
             json.dumps({"graphWeight": w, "vectorWeight": 0})) for w in (0.5, 0))
    assert keyword_lifted == keyword_plain, "keywords alone: no lift"

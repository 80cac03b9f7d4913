"""Search benchmark (`make bench-search`): rag.search() latency on synthetic corpora.

Corpus, generated at bench time from a fixed seed and stored through the real
SQL API as a first `rag index` stores (rag.upsert_source, rag.begin_bulk_load,
rag.replace_files, rag.store_embeddings, rag.end_bulk_load,
rag.ensure_vector_index, rag.ensure_heads_index, rag.refresh_file_vectors), then VACUUM ANALYZE:
  - chunks of 50-300 words drawn with a Zipf distribution from a vocabulary of
    code keywords and camelCase / snake_case / PascalCase identifiers made of
    shared base words, so the BM25 tokenizer splits them as it splits code,
    a third of each chunk's words being its file's own identifiers (repeats);
    a code chunk's fqn (one of its file's identifiers, then a rare one) in
    its metadata and, with its path, in its context, as the chunker gives
    them, so that the names arm has names to search;
  - files of 1-9 chunks under ten top-level folders (core/ holds ~10% of the
    chunks) in four sources, one of which (tiny) holds 1% of the chunks;
  - 384-d unit vectors around 200 random centroids, stored under the local
    model's id so that its query vectors are compared with them.
Each size has its own RAG_HOME (.bench/home-search/<size>, embedded server),
reused while its chunk and vector counts, generator version and tokenizer match.

Measured per size, over one open connection after a warm-up (20 other queries
in every configuration first: the server was just started, its caches cold):
the wall time of SELECT * FROM rag.search(...) for --queries (200) queries of 1-5 vocabulary
words (common and rare) with query vectors near random centroids, keyword-only
and hybrid, without filter, with the 1% source and with the 10% path prefix,
--runs (3) times, every configuration in turn in each run: the medians of the
runs' p50, p95 and mean, and the range of their p95 (this machine's speed
drifts); how many queries returned fewer than top_k rows although at least that
many chunks matched; how many hit the 10 s statement timeout (they count as
10 s, so p95 and mean are then lower bounds). Then, on the largest corpus,
`rag search` end to end with the local model loaded: Searcher.search() on 50
new query texts per run (query embedding included), next to the model's
encoding time alone.
"""

import argparse
import hashlib
import itertools
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from machine import speed_line
from psycopg.types.json import Jsonb

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / ".bench" / "home-search"
GENERATOR = "4"  # bump when the corpus generator changes: stored corpora are rebuilt
MODEL = "local:all-MiniLM-L6-v2@384"  # the local model's id: its query vectors hit our vectors
DIMS = 384
CENTROIDS = 200
NOISE = 1.0  # norm of the noise added to a unit centroid: cosine to it about 0.7
TOP_K = 10
TIMEOUT_MS = 10_000  # a slower query is cancelled and counted at this time (p95 and mean become lower bounds)
FILES_PER_CALL = 500
SOURCES = {"tiny": 0.01, "app": 0.33, "lib": 0.33, "web": 0.33}
FOLDERS = ["api", "cli", "core", "db", "docs", "jobs", "net", "ui", "util", "vendor"]
PREFIX = "core/"  # one folder of ten: ~10% of the chunks
LANGUAGES = {".py": ("code", "python"), ".ts": ("code", "typescript"), ".go": ("code", "go"),
             ".md": ("markdown", "markdown")}
KEYWORDS = ["self", "return", "def", "if", "None", "for", "in", "import", "from", "class"]
LOCAL_WORDS, LOCAL_SHARE = 12, 0.33  # identifiers of a file's own, repeated across its chunks
SEPARATORS = np.array([" ", " ", " ", ".", "(", ", ", ") ", " = ", ": ", "\n    ", "\n"])
SEARCH = "SELECT * FROM rag.search(%(query)s, %(embedding)s::vector, %(top_k)s, %(filters)s, %(options)s)"


@dataclass(frozen=True)
class Config:
    name: str
    hybrid: bool
    sources: list[str] | None = None
    prefix: str | None = None


CONFIGS = [
    Config("keyword", False),
    Config("keyword + source 1%", False, sources=["tiny"]),
    Config("keyword + path 10%", False, prefix=PREFIX),
    Config("hybrid", True),
    Config("hybrid + source 1%", True, sources=["tiny"]),
    Config("hybrid + path 10%", True, prefix=PREFIX),
]


@dataclass(frozen=True)
class Query:
    text: str
    vector: str


class Vocabulary:
    """Keywords and identifiers ranked for a Zipf law (s = 1.1); parts are Zipf-drawn base words too."""

    def __init__(self, rng: np.random.Generator, base_words: int = 4000, identifiers: int = 20000):
        syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
        unique: dict[str, None] = {}
        while len(unique) < base_words:
            unique["".join(rng.choice(syllables, rng.integers(1, 4)))] = None
        base = [w for w in unique if w not in KEYWORDS]
        base_cdf = zipf_cdf(len(base))
        words = dict.fromkeys(KEYWORDS)
        while len(words) < identifiers:
            parts = [base[i] for i in np.searchsorted(base_cdf, rng.random(rng.choice([1, 1, 2, 2, 3])))]
            words[identifier(parts, int(rng.integers(3)))] = None
        self.words = np.array(list(words), dtype=object)
        self.cdf = zipf_cdf(len(self.words))

    def common(self, rng: np.random.Generator, n: int) -> list[str]:
        return list(self.words[np.searchsorted(self.cdf, rng.random(n))])

    def rare(self, rng: np.random.Generator) -> str:
        return str(self.words[rng.integers(len(self.words))])


def zipf_cdf(n: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** 1.1
    cdf: np.ndarray = np.cumsum(weights) / weights.sum()
    cdf[-1] = 1.0
    return cdf


def identifier(parts: list[str], style: int) -> str:
    if style == 0:
        return "_".join(parts)
    head = parts[0] if style == 1 else parts[0].capitalize()
    return head + "".join(p.capitalize() for p in parts[1:])


def chunk_text(rng: np.random.Generator, vocab: Vocabulary, local: list[str]) -> str:
    """50-300 words: Zipf draws, a third of them replaced by the file's own identifiers."""
    n = int(rng.integers(50, 301))
    own = (rng.random(n) < LOCAL_SHARE).tolist()
    picks = rng.integers(len(local), size=n).tolist()
    words = [local[i] if o else w for w, o, i in zip(vocab.common(rng, n), own, picks, strict=True)]
    separators = rng.choice(SEPARATORS, n).tolist()
    return "".join(w + s for w, s in zip(words, separators, strict=True))


def centroids() -> np.ndarray:
    """The cluster centres of corpus and query vectors alike."""
    points = np.random.default_rng(0).normal(size=(CENTROIDS, DIMS))
    unit: np.ndarray = points / np.linalg.norm(points, axis=1, keepdims=True)
    return unit


def vector_literals(rng: np.random.Generator, centres: np.ndarray, n: int) -> list[str]:
    """Unit vectors near random centres, as pgvector text."""
    noise = rng.normal(size=(n, DIMS)) * NOISE / np.sqrt(DIMS)
    vectors = centres[rng.integers(len(centres), size=n)] + noise
    vectors = np.round(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), 6)
    return ["[" + ",".join(map(str, v)) + "]" for v in vectors.tolist()]


def synthetic_files(rng: np.random.Generator, vocab: Vocabulary, source: str, chunks: int) -> Iterator[dict[str, Any]]:
    """replace_files entries holding exactly ``chunks`` chunks in all."""
    for number in itertools.count():
        if chunks <= 0:
            return
        ext = str(rng.choice(list(LANGUAGES)))
        source_type, language = LANGUAGES[ext]
        path = f"{rng.choice(FOLDERS)}/{vocab.rare(rng)}/{source}_{number}{ext}"
        local = [vocab.rare(rng) for _ in range(LOCAL_WORDS)]
        texts = [chunk_text(rng, vocab, local) for _ in range(min(chunks, int(rng.integers(1, 10))))]
        chunks -= len(texts)
        content = "\n".join(texts)
        line = 1
        entries = []
        for text in texts:
            end = line + text.count("\n")
            metadata = {"path": path, "sourceType": source_type, "language": language, "startLine": line, "endLine": end}
            if source_type == "code":  # a definition's name: context and the names arm see it
                metadata["fqn"] = f"{local[0]}.{vocab.rare(rng)}"
            context = "\n".join([path, metadata.get("fqn", "")]).strip()
            entries.append({
                "content": text, "context": context,
                "contentHash": hashlib.sha256(f"{context}\n{text}".encode()).hexdigest(), "metadata": metadata,
            })
            line = end + 1
        yield {"path": path, "size": len(content.encode()), "mtimeNs": 0,
               "sha256": hashlib.sha256(content.encode()).hexdigest(), "sourceType": source_type,
               "language": language, "content": content, "error": None, "chunks": entries}


def stamp(conn: psycopg.Connection[dict[str, Any]]) -> dict[str, str]:
    """What a stored corpus was built with: this generator and the tokenizer's source."""
    row = conn.execute("SELECT md5(pg_get_functiondef('rag.term_frequencies(text)'::regprocedure)) AS h").fetchone()
    assert row is not None
    return {"generator": GENERATOR, "tokenizer": row["h"]}


def open_corpus(size: int, vocab: Vocabulary) -> psycopg.Connection[dict[str, Any]]:
    """Start the size's embedded server and return a connection to its corpus, built if missing."""
    from rag import db
    from rag.config import DatabaseConfig

    os.environ["RAG_HOME"] = str(HOME / str(size))
    target = db.resolve_target(DatabaseConfig())
    db.install_schema(target)
    conn = db.connect(target)
    stored = conn.execute(
        "SELECT (SELECT chunks FROM rag.corpus_stats) AS chunks,"
        " (SELECT count(*) FROM rag.embeddings WHERE model = %s) AS vectors,"
        " (SELECT count(*) FROM rag.sources WHERE config = %s) AS sources",
        (MODEL, Jsonb(stamp(conn)))).fetchone()
    if stored == {"chunks": size, "vectors": size, "sources": len(SOURCES)}:
        print(f"corpus of {size:,} chunks: reused from {HOME / str(size)}", file=sys.stderr)
        conn.execute("SELECT rag.ensure_heads_index()")  # a corpus stored before the heads index existed
        conn.execute("SELECT rag.ensure_vector_index(%s)", (MODEL,))  # ... or before the files' vectors
        conn.execute("ANALYZE rag.file_vectors")  # (as autovacuum would have, after migration 0017 filled it)
        return conn
    conn.execute("DROP SCHEMA rag CASCADE")
    db.install_schema(target)
    load_corpus(conn, size, vocab)
    return conn


def load_corpus(conn: psycopg.Connection[dict[str, Any]], size: int, vocab: Vocabulary) -> None:
    rng = np.random.default_rng(size)
    centres = centroids()
    started = time.perf_counter()
    loaded = 0
    # As a first `rag index` loads: postings without their key, built once at the end
    # (a key grown by random inserts is ~1.7x larger and searches slower).
    conn.execute("SELECT rag.begin_bulk_load()")
    for i, (source, share) in enumerate(SOURCES.items()):
        budget = round(size * share) if i < len(SOURCES) - 1 else size - loaded
        row = conn.execute("SELECT rag.upsert_source(%s, 'local', %s, NULL, %s) AS id",
                           (source, f"/bench/{source}", Jsonb(stamp(conn)))).fetchone()
        assert row is not None
        source_id = row["id"]
        files = synthetic_files(rng, vocab, source, budget)
        while batch := list(itertools.islice(files, FILES_PER_CALL)):
            conn.execute("SELECT rag.replace_files(%s, %s)", (source_id, Jsonb(batch)))
            hashes = [c["contentHash"] for f in batch for c in f["chunks"]]
            conn.execute("SELECT rag.store_embeddings(%s, %s, %s, %s)",
                         (MODEL, DIMS, hashes, vector_literals(rng, centres, len(hashes))))
            loaded += len(hashes)
            print(f"\rloading {size:,} chunks: {loaded:,} stored, {time.perf_counter() - started:.0f} s",
                  end="", file=sys.stderr)
    print(file=sys.stderr)
    phase = time.perf_counter()
    conn.execute("SELECT rag.end_bulk_load()")
    conn.execute("SELECT rag.ensure_vector_index(%s)", (MODEL,))
    conn.execute("SELECT rag.ensure_heads_index()")
    conn.execute("SELECT rag.refresh_file_vectors(s.id, %s) FROM rag.sources s", (MODEL,))
    conn.execute("VACUUM ANALYZE")
    print(f"HNSW index + VACUUM ANALYZE: {time.perf_counter() - phase:.0f} s; "
          f"corpus of {size:,} chunks ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def make_queries(rng: np.random.Generator, vocab: Vocabulary, n: int) -> list[Query]:
    """1-5 words, each common (Zipf draw) or rare (uniform over the vocabulary); a vector near a centroid."""
    queries = []
    for vector in vector_literals(rng, centroids(), n):
        words = [vocab.common(rng, 1)[0] if rng.random() < 0.5 else vocab.rare(rng)
                 for _ in range(rng.integers(1, 6))]
        queries.append(Query(" ".join(words), vector))
    return queries


def params(config: Config, query: Query) -> dict[str, Any]:
    filters = {"sources": config.sources, "pathPrefix": config.prefix}
    options = {"vectorWeight": 0.6 if config.hybrid else 0.0, "model": MODEL}
    return {"query": query.text, "embedding": query.vector if config.hybrid else None, "top_k": TOP_K,
            "filters": Jsonb({k: v for k, v in filters.items() if v}), "options": Jsonb(options),
            # (expected_rows reads these)
            "sources": config.sources, "prefix": config.prefix}


def expected_rows(conn: psycopg.Connection[dict[str, Any]], config: Config, query: Query) -> int:
    """min(top_k, chunks that pass the filters and, keyword-only, hold a query term)."""
    terms = [r["term"] for r in conn.execute("SELECT term FROM rag.term_frequencies(%s)", (query.text,))]
    row = conn.execute(
        "SELECT count(*) AS n FROM (SELECT c.id FROM rag.chunks c"
        " JOIN rag.files f ON f.id = c.file_id JOIN rag.sources s ON s.id = c.source_id"
        " WHERE (%(sources)s::text[] IS NULL OR s.name = ANY (%(sources)s))"
        "   AND (%(prefix)s::text IS NULL OR starts_with(f.path, %(prefix)s))"
        "   AND (%(hybrid)s OR EXISTS (SELECT 1 FROM rag.postings p"
        "        WHERE p.term = ANY (%(terms)s::text[]) AND p.chunk_id = c.id))"
        " LIMIT %(top_k)s) m",
        {"sources": config.sources, "prefix": config.prefix, "hybrid": config.hybrid,
         "terms": terms, "top_k": TOP_K}).fetchone()
    assert row is not None
    return int(row["n"])


def timed_search(conn: psycopg.Connection[dict[str, Any]], config: Config, query: Query) -> tuple[float, int | None]:
    """Milliseconds and rows returned; None rows when the query hit the statement timeout."""
    started = time.perf_counter()
    try:
        rows: int | None = len(conn.execute(SEARCH, params(config, query)).fetchall())
    except psycopg.errors.QueryCanceled:
        rows = None
    return (time.perf_counter() - started) * 1000, rows


@dataclass
class Result:
    runs: list[list[float]]  # ms per query, per run; timed-out queries counted at the timeout
    short: int  # queries given fewer rows than min(top_k, matching chunks) in some run
    timeouts: int  # over all runs


def measure(conn: psycopg.Connection[dict[str, Any]], queries: list[Query], runs: int) -> dict[str, Result]:
    """Every configuration, timed `runs` times; each run times all configurations in turn, so a
    machine that slows down for a while slows them alike."""
    timed: dict[str, list[list[tuple[float, int | None]]]] = {config.name: [] for config in CONFIGS}
    for _ in range(runs):
        for config in CONFIGS:
            timed[config.name].append([timed_search(conn, config, query) for query in queries])
    results = {}
    for config in CONFIGS:
        fewest = [min((rows for run in timed[config.name] if (rows := run[i][1]) is not None), default=None)
                  for i in range(len(queries))]
        short = sum(rows is not None and rows < expected_rows(conn, config, query)
                    for rows, query in zip(fewest, queries, strict=True))
        timeouts = sum(rows is None for run in timed[config.name] for _, rows in run)
        results[config.name] = Result([[ms for ms, _ in run] for run in timed[config.name]], short, timeouts)
    return results


def figures(runs: list[list[float]]) -> str:
    """Medians over the runs of p50, p95 and mean, and the runs' p95 range."""
    p50s, p95s = zip(*(np.percentile(times, [50, 95]) for times in runs), strict=True)
    means = [np.mean(times) for times in runs]
    spread = f"{min(p95s):.0f}-{max(p95s):.0f}"
    return f"{np.median(p50s):8.1f} {np.median(p95s):8.1f} {np.median(means):8.1f} {spread:>11}"


def end_to_end(conn: psycopg.Connection[dict[str, Any]], rng: np.random.Generator, vocab: Vocabulary,
               runs: int) -> None:
    """Searcher.search() as `rag search` runs it, local model loaded, 50 query texts never embedded before per run."""
    from rag.config import SearchConfig
    from rag.providers import LocalEmbedder
    from rag.providers.rerankers import NoReranker
    from rag.search import Searcher, SearchRequest

    embedder = LocalEmbedder()
    assert embedder.model_id == MODEL
    searcher = Searcher(conn, SearchConfig(), embedder, NoReranker())
    conn.execute("RESET statement_timeout")
    conn.execute("DELETE FROM rag.query_embeddings")
    searcher.search(SearchRequest("warm up the local model"))
    texts = list(dict.fromkeys(f"where is {' '.join(vocab.common(rng, 2))} {vocab.rare(rng)} handled"
                               for _ in range(60 * runs)))[:50 * runs]
    total: list[list[float]] = []
    model: list[list[float]] = []
    for run in range(runs):
        batch = texts[50 * run:50 * (run + 1)]
        total.append([])
        for text in batch:
            started = time.perf_counter()
            searcher.search(SearchRequest(text))
            total[-1].append((time.perf_counter() - started) * 1000)
        model.append([])
        for text in batch:
            started = time.perf_counter()
            embedder.embed_query(text)
            model[-1].append((time.perf_counter() - started) * 1000)

    def median_of(runs_ms: list[list[float]], q: int) -> float:
        return float(np.median([np.percentile(ms, q) for ms in runs_ms]))

    print(f"\nrag search end to end, local model loaded ({runs} runs of 50 new queries, medians): "
          f"p50 {median_of(total, 50):.1f} ms, p95 {median_of(total, 95):.1f} ms "
          f"(model encode alone p50 {median_of(model, 50):.1f} ms, "
          f"p95 {median_of(model, 95):.1f} ms); goal p95 <= 150 ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="corpus sizes in chunks, comma-separated")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per configuration")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of every configuration (medians printed)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    for name in ("RAG_DATABASE_URL", "RAG_CONFIG"):
        os.environ.pop(name, None)
    from rag import embedded

    vocab = Vocabulary(np.random.default_rng(1))
    print(speed_line())
    print(f"{'chunks':>8}  {'configuration':<20} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'p95 range':>11}"
          f"  short  timeouts   (medians of {args.runs} runs of {args.queries} queries;"
          " short = fewer rows than min(top_k, matches))")
    for size in sizes:
        rng = np.random.default_rng(2)
        with open_corpus(size, vocab) as conn:
            conn.execute(f"SET statement_timeout = {TIMEOUT_MS}")
            warmup = make_queries(rng, vocab, 20)
            queries = make_queries(rng, vocab, args.queries)
            for config in CONFIGS:  # warm caches for all before timing any: a server just started is cold
                for query in warmup:
                    timed_search(conn, config, query)
            for name, result in measure(conn, queries, args.runs).items():
                print(f"{size:>8,}  {name:<20} {figures(result.runs)}  {result.short:>5}"
                      f"  {result.timeouts:>8}", flush=True)
            if size == sizes[-1]:
                end_to_end(conn, rng, vocab, args.runs)
        embedded.stop()
    print(speed_line())
    print("goal: p95 <= 50 ms at 100,000 chunks")


if __name__ == "__main__":
    main()

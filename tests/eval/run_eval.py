"""Retrieval evaluation driver (``make eval``): every set, every mode, one table per set.

For each set: builds it when ``.bench/eval/<set>/cases.jsonl`` is missing;
indexes its copy with the real CLI (``rag index --path ... --name eval-<set>
--force``) in ``RAG_HOME=.bench/home-eval`` after removing every other source
there, so BM25 statistics come from this set alone; runs ``rag.evaluation``
over bm25, vector, hybrid and hybrid+rerank; scores the seed design
(1000/200-character windows, dense only) on the same copy with the same
model; prints the table. The configuration is the repository's
``rag.config.yaml`` unless ``--config`` names another one (to try variants);
``--force`` re-chunks every file, so a changed chunk size takes effect, while
vectors of unchanged chunk texts are reused from the database.

Usage: .venv/bin/python tests/eval/run_eval.py [--sets django-code,md-docs] [--config FILE] [--no-seed]
"""

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import build_django_code
import build_md_docs
import numpy as np
from common import ROOT, set_dir

from rag import db
from rag.config import load_config
from rag.evaluation import (
    MODES,
    SEED_MODE,
    Metrics,
    evaluate,
    format_table,
    load_cases,
    seed_baseline,
)
from rag.providers import Embedder, configured_embedder
from rag.providers.base import ProgressCallback
from rag.providers.rerankers import configured_reranker
from rag.search import Searcher

BUILDERS = {build_django_code.NAME: build_django_code.build, build_md_docs.NAME: build_md_docs.build}
HOME = ROOT / ".bench" / "home-eval"
RAG = str(Path(sys.executable).parent / "rag")


class CachedEmbedder:
    """Document vectors kept in an .npz file by text hash, so the baseline embeds each window once."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.path = path
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self.vectors: dict[str, list[float]] = {}
        if path.exists():
            stored = np.load(path)
            self.vectors = dict(zip(stored["keys"].tolist(), stored["vectors"].tolist(), strict=True))

    def embed_documents(self, texts: list[str], progress: ProgressCallback | None = None) -> list[list[float]]:
        keys = [hashlib.sha256(f"{self.model_id}\0{t}".encode()).hexdigest() for t in texts]
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in self.vectors}
        if missing:
            print(f"  seed baseline: embedding {len(missing):,} windows", file=sys.stderr)
            fresh = self.inner.embed_documents(list(missing.values()), progress)
            self.vectors.update(zip(missing, fresh, strict=True))
            np.savez(self.path, keys=np.array(list(self.vectors)), vectors=np.array(list(self.vectors.values())))
        return [self.vectors[k] for k in keys]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def rag(config: str | None, *args: str) -> str:
    command = [RAG, *(["--config", config] if config else []), *args]
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


def index_alone(config: str | None, name: str, copy: Path) -> None:
    """Index ``copy`` as source ``name``, the only source in the evaluation home."""
    listed = rag(config, "list").splitlines()[1:]
    for other in {line.split()[0] for line in listed if line.strip()} - {name}:
        rag(config, "remove", other)
    rag(config, "index", "--path", str(copy), "--name", name, "--force")


def run_set(set_name: str, config_path: str | None, with_seed: bool) -> str:
    folder = set_dir(set_name)
    if not (folder / "cases.jsonl").exists():
        BUILDERS[set_name]()
    cases = load_cases(folder / "cases.jsonl")
    source = f"eval-{set_name}"
    started = time.monotonic()
    index_alone(config_path, source, folder / "copy")
    config = load_config(config_path).config
    embedder = configured_embedder(config.embeddings)
    with db.connect(db.resolve_target(config.database)) as conn:
        searcher = Searcher(conn, config.search, embedder, configured_reranker(config.reranker))
        result = evaluate(searcher, cases, MODES, source=source)
        chunks = conn.execute("SELECT count(*) AS n FROM rag.chunks").fetchone()
    metrics: dict[str, Metrics] = dict(result.metrics)
    if with_seed:
        cached = CachedEmbedder(embedder, folder / "seed-vectors.npz")
        metrics[SEED_MODE] = seed_baseline(folder / "copy", cases, cached)
    size = config.indexing.chunk_size
    title = (f"{set_name}: {chunks['n'] if chunks else '?':,} chunks (maxTokens {size.max_tokens}, overlap "
             f"{size.overlap}), bm25/vector weights {config.search.bm25_weight}/{config.search.vector_weight}, "
             f"rrf k {config.search.rrf.k}; {time.monotonic() - started:.0f} s")
    return format_table(metrics, result.notes, title=title)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(BUILDERS), help="comma-separated: " + ", ".join(BUILDERS))
    parser.add_argument("--config", help="a rag config file (default: ./rag.config.yaml)")
    parser.add_argument("--no-seed", action="store_true", help="skip the seed-design baseline")
    args = parser.parse_args()
    unknown = set(args.sets.split(",")) - set(BUILDERS)
    if unknown:
        parser.error(f"unknown set(s) {', '.join(sorted(unknown))}; choose from {', '.join(BUILDERS)}")
    config = str(Path(args.config).resolve()) if args.config else None
    os.chdir(ROOT)  # ./rag.config.yaml is the default configuration
    for variable in [v for v in os.environ if v.startswith("RAG_")]:
        del os.environ[variable]
    os.environ["RAG_HOME"] = str(HOME)  # the subprocesses inherit it
    rag(config, "init")
    for set_name in args.sets.split(","):
        print(run_set(set_name, config, not args.no_seed) + "\n", flush=True)


if __name__ == "__main__":
    main()

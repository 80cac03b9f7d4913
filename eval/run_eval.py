"""Retrieval evaluation driver (``make eval``): every set, every mode, one table per set.

For each set: builds it when ``.bench/eval/<set>/cases.jsonl`` is missing;
indexes its copy with the real CLI (``rag index --path ... --name eval-<set>
--force``) in ``RAG_HOME=.bench/home-eval`` after removing every other source
there, so BM25 statistics come from this set alone; runs ``rag.evaluation``
over bm25, vector, hybrid and hybrid+rerank; scores the three peers of the
held-out table on the same copy with the same model: the seed design
(1000/200-character windows, dense only), BM25 over those windows and a naive
RRF of both (``peers.py``); prints the table and hybrid's MRR@10 margin over
the best peer, then one summary line per set. The configuration is the repository's
``rag.config.yaml`` unless ``--config`` names another one (to try variants);
``--force`` re-chunks every file, so a changed chunk size takes effect, while
vectors of unchanged chunk texts are reused from the database.

Usage: .venv/bin/python eval/run_eval.py [--sets django-code,md-docs] [--config FILE] [--no-seed]
"""

import argparse
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import build_django_code
import build_lodash_code
import build_md_docs
import build_md_titles
import build_rst_docs
import build_ru_docs
import build_ru_man
import build_rxjs_code
import numpy as np
from common import ROOT, set_dir
from peers import (
    BM25_MODE,
    FUSION_DEPTH,
    LINES_MODE,
    RRF_MODE,
    SEED_MODE,
    bm25_rankings,
    dense_window_rankings,
    folder_windows,
    rrf,
    score_window_rankings,
)

from rag import db
from rag.config import load_config
from rag.evaluation import MODES, EvalCase, Metrics, evaluate, format_table, load_cases
from rag.providers import Embedder, configured_embedder
from rag.providers.base import ProgressCallback
from rag.providers.rerankers import configured_reranker
from rag.search import Searcher

BUILDERS = {module.NAME: module.build for module in
            (build_django_code, build_md_docs, build_rxjs_code, build_lodash_code, build_rst_docs, build_ru_man,
             build_md_titles, build_ru_docs)}
BUILDERS[build_ru_man.OPTIONS] = build_ru_man.build  # (one builder, two sets)
RUSSIAN_SETS = {build_ru_man.PAGES, build_ru_man.OPTIONS, build_ru_docs.NAME}  # their BM25 peer stems (peers.py)
PEERS = (SEED_MODE, BM25_MODE, RRF_MODE, LINES_MODE)
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


def seed_vectors(folder: Path, embedder: Embedder) -> Path:
    """The seed baseline's vector cache of a set, one file per model (their dimensions differ)."""
    return folder / f"seed-vectors-{hashlib.sha256(embedder.model_id.encode()).hexdigest()[:12]}.npz"


def rag(config: str | None, *args: str) -> str:
    command = [RAG, *(["--config", config] if config else []), *args]
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


def index_alone(config: str | None, name: str, copy: Path) -> None:
    """Index ``copy`` as source ``name``, the only source in the evaluation home."""
    listed = rag(config, "list").splitlines()[1:]
    for other in {line.split()[0] for line in listed if line.strip()} - {name}:
        rag(config, "remove", other)
    rag(config, "index", "--path", str(copy), "--name", name, "--force")


def peer_metrics(copy: Path, cases: list[EvalCase], embedder: CachedEmbedder,
                 russian: bool = False) -> dict[str, Metrics]:
    """The peers over the copy's 1000/200 windows: dense (the seed design), BM25, and their naive RRF;
    and a stemming BM25 over 40-line windows."""
    windows = folder_windows(copy)
    dense = dense_window_rankings(windows, cases, embedder, depth=FUSION_DEPTH)
    keyword = bm25_rankings(windows, [c.query for c in cases], russian=russian)
    rankings = {SEED_MODE: dense, BM25_MODE: keyword, RRF_MODE: rrf([dense, keyword])}
    metrics = {mode: score_window_rankings(copy, windows, cases, ranked) for mode, ranked in rankings.items()}
    lines = folder_windows(copy, lines=True)
    metrics[LINES_MODE] = score_window_rankings(
        copy, lines, cases, bm25_rankings(lines, [c.query for c in cases], russian=True))
    return metrics


def other_fusion(fusion: str) -> str:
    return "scores" if fusion == "rrf" else "rrf"


def margin(metrics: dict[str, Metrics]) -> tuple[str, float] | None:
    """The best peer by MRR@10 and hybrid's MRR@10 lead over it (None without hybrid or peers)."""
    peers = [mode for mode in PEERS if mode in metrics]
    if "hybrid" not in metrics or not peers:
        return None
    best = max(peers, key=lambda mode: metrics[mode].mrr)
    return best, metrics["hybrid"].mrr - metrics[best].mrr


def run_set(set_name: str, config_path: str | None, with_peers: bool) -> tuple[str, dict[str, Metrics]]:
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
        # The other fusion too, so one run says which ranks better on this set.
        searcher.settings = config.search.model_copy(update={"fusion": other_fusion(config.search.fusion)})
        if "hybrid" in result.metrics:
            result.metrics[f"hybrid-{searcher.settings.fusion}"] = evaluate(
                searcher, cases, ["hybrid"], source=source).metrics["hybrid"]
        chunks = conn.execute("SELECT count(*) AS n FROM rag.chunks").fetchone()
    metrics: dict[str, Metrics] = dict(result.metrics)
    if with_peers:
        metrics.update(peer_metrics(folder / "copy", cases, CachedEmbedder(embedder, seed_vectors(folder, embedder)),
                                    russian=set_name in RUSSIAN_SETS))
    size = config.indexing.chunk_size
    fusion = f"rrf k {config.search.rrf.k}" if config.search.fusion == "rrf" else "scores"
    title = (f"{set_name}: {chunks['n'] if chunks else '?':,} chunks (maxTokens {size.max_tokens}, overlap "
             f"{size.overlap}), fusion {fusion}, bm25/vector weights {config.search.bm25_weight}/"
             f"{config.search.vector_weight}; {time.monotonic() - started:.0f} s")
    table = format_table(metrics, result.notes, title=title)
    lead = margin(metrics)
    if lead is not None:
        table += f"\nhybrid MRR@10 margin over the best peer ({lead[0]}): {lead[1]:+.3f}"
    return table, metrics


def summary(results: dict[str, dict[str, Metrics]]) -> str:
    """One line per set: hybrid's MRR@10 and Recall@10, the best peer's MRR@10, the margin,
    hybrid's and the best peer's share of answers within 1,000 tokens of results, and the MRR@10
    and margin of hybrid with the other fusion."""
    lines = [f"{'set':<14} {'hybrid MRR@10':>13} {'R@10':>6} {'best peer':>16} {'MRR@10':>7} {'margin':>7}"
             f" {'R@1000tok':>9} {'peers':>6}   {'other fusion':>13} {'MRR@10':>7} {'margin':>7}"]
    for name, metrics in results.items():
        lead = margin(metrics)
        if lead is not None:
            hybrid = metrics["hybrid"]
            best = metrics[lead[0]].mrr
            other = next((mode for mode in metrics if mode.startswith("hybrid-")), None)
            alternative = (f"   {other:>13} {metrics[other].mrr:>7.3f} {metrics[other].mrr - best:>+7.3f}"
                           if other else "")
            peers_within = max(metrics[mode].within_budget for mode in PEERS if mode in metrics)
            lines.append(f"{name:<14} {hybrid.mrr:>13.3f} {hybrid.recall[10]:>6.3f} {lead[0]:>16} "
                         f"{best:>7.3f} {lead[1]:>+7.3f} {hybrid.within_budget:>9.3f} {peers_within:>6.3f}"
                         f"{alternative}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(BUILDERS), help="comma-separated: " + ", ".join(BUILDERS))
    parser.add_argument("--config", help="a rag config file (default: ./rag.config.yaml)")
    parser.add_argument("--home", type=Path, default=HOME,
                        help=f"RAG_HOME of the runs (default {HOME.relative_to(ROOT)}; another lets two runs go side by side)")
    parser.add_argument("--no-seed", action="store_true",
                        help="skip the peers over 1000/200 windows (seed design, BM25, naive RRF)")
    args = parser.parse_args()
    unknown = set(args.sets.split(",")) - set(BUILDERS)
    if unknown:
        parser.error(f"unknown set(s) {', '.join(sorted(unknown))}; choose from {', '.join(BUILDERS)}")
    config = str(Path(args.config).resolve()) if args.config else None
    os.chdir(ROOT)  # ./rag.config.yaml is the default configuration
    for variable in [v for v in os.environ if v.startswith("RAG_")]:
        del os.environ[variable]
    os.environ["RAG_HOME"] = str(args.home.resolve())  # subprocesses inherit it
    rag(config, "init")
    results = {}
    for set_name in args.sets.split(","):
        table, results[set_name] = run_set(set_name, config, not args.no_seed)
        print(table + "\n", flush=True)
    if not args.no_seed:
        print(summary(results), flush=True)


if __name__ == "__main__":
    main()

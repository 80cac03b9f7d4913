"""A first index by phase (`make bench-profile`): where the seconds of `rag index` go.

Indexes a tree (default: this repository) into an empty embedded database under
``.bench/home-profile`` with the local model, in this process, the real index run
(``rag.indexer.index_source``) with a stopwatch around each phase's functions:

  scan, read, chunk (parsing and chunking), graph extraction (definitions and references
  from the syntax tree), JSON (the batches for ``rag.replace_files``, passages included),
  store (``rag.replace_files`` on the writer threads: tokenizing, postings, chunks),
  postings (the bulk load's key and term counts, vacuum), graph resolution
  (``rag.resolve_refs``), embed (the model), embed fetch/store (asking which texts lack a
  vector, storing vectors, the HNSW index), file vectors (``rag.refresh_file_vectors``).

Storing runs on two threads while the main one reads and chunks, so the phases add
up to more than the wall clock; "main thread waits for store" is the part of the storing
the main thread waited for. Each phase's seconds are summed over its calls.

Usage: .venv/bin/python bench/bench_profile.py [--path TREE] [--precision fp32|int8|auto]
       [--provider local|none] [--runs N] (N first indexes, each into an empty database; medians)
"""

import argparse
import functools
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_index import TimedEmbedder
from machine import speed_line

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / ".bench" / "home-profile"
RAG = str(Path(sys.executable).parent / "rag")


class Stopwatch:
    """Seconds per phase, summed over calls, from any thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._lock = threading.Lock()

    def wrap(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds[phase] += time.perf_counter() - started
        return timed


@contextmanager
def patched(watch: Stopwatch) -> Iterator[None]:
    """The index run's phase functions wrapped by ``watch`` for the duration."""
    import rag.dispatcher as dispatcher
    import rag.indexer as indexer
    import rag.sqlapi as sqlapi
    import rag.storing as storing
    from rag.sources.folder import Folder

    targets: list[tuple[Any, str, str]] = [
        (Folder, "scan", "scan"),
        (Folder, "read", "read"),
        (Folder, "chunk", "chunk + graph extraction"),
        (dispatcher, "extract_graph", "graph extraction"),
        (indexer, "file_json", "JSON for replace_files"),
        (sqlapi, "replace_files", "store (writer threads)"),
        (storing.Writers, "totals", "main thread waits for store"),
        (storing.Writers, "submit", "main thread waits for store"),
        (sqlapi, "add_postings_key", "postings"),
        (sqlapi, "count_term_stats", "postings"),
        (sqlapi, "end_bulk_load", "postings"),
        (indexer.db, "vacuum_postings", "postings"),
        (sqlapi, "ensure_heads_index", "postings"),
        (sqlapi, "resolve_refs", "graph resolution"),
        (sqlapi, "count_chunks_without_embedding", "embed fetch/store"),
        (sqlapi, "chunks_without_embedding", "embed fetch/store"),
        (sqlapi, "store_embeddings", "embed fetch/store"),
        (sqlapi, "ensure_vector_index", "embed fetch/store"),
        (sqlapi, "refresh_file_vectors", "file vectors"),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]
    try:
        for owner, name, phase in targets:
            setattr(owner, name, watch.wrap(phase, getattr(owner, name)))
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def one_run(tree: Path, provider: str, precision: str) -> tuple[float, dict[str, float], Any]:
    """A first index of ``tree`` into an empty database: (wall seconds, seconds by phase, summary)."""
    from rag import db
    from rag.config import ChunkSettings, DatabaseConfig, SourceSpec
    from rag.indexer import index_source
    from rag.providers import make_embedder

    env = {**os.environ, "RAG_HOME": str(HOME)}
    subprocess.run([RAG, "db", "stop"], env=env, capture_output=True)
    shutil.rmtree(HOME / "pgdata", ignore_errors=True)  # (models/ kept: the export is not timed)
    subprocess.run([RAG, "init"], env=env, check=True, capture_output=True)
    model = make_embedder(provider, precision=precision) if provider == "local" else make_embedder("none")
    if model.dimensions:
        model.embed_documents(["load and warm up the model before timing"])
    watch = Stopwatch()
    embedder = TimedEmbedder(model)  # (its seconds: the phase "embed (model)")
    with db.connect(db.resolve_target(DatabaseConfig())) as conn, patched(watch):
        started = time.perf_counter()
        summary = index_source(conn, SourceSpec("profiled", "local", str(tree)), tree, embedder,
                               ChunkSettings())
        wall = time.perf_counter() - started
    watch.seconds["embed (model)"] = embedder.seconds
    watch.seconds["chunk"] = watch.seconds.pop("chunk + graph extraction", 0.0) - watch.seconds["graph extraction"]
    return wall, dict(watch.seconds), summary


PHASES = ("scan", "read", "chunk", "graph extraction", "JSON for replace_files", "store (writer threads)",
          "main thread waits for store", "postings", "graph resolution", "embed (model)", "embed fetch/store",
          "file vectors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default=str(ROOT))
    parser.add_argument("--provider", default="local", choices=("local", "none"))
    parser.add_argument("--precision", default="fp32", choices=("auto", "fp32", "int8"))
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    tree = Path(args.path).resolve()
    os.environ["RAG_HOME"] = str(HOME)
    print(speed_line())
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    walls: list[float] = []
    phases: dict[str, list[float]] = defaultdict(list)
    summary = None
    for _ in range(args.runs):
        wall, seconds, summary = one_run(tree, args.provider, args.precision)
        walls.append(wall)
        for phase in PHASES:
            phases[phase].append(seconds.get(phase, 0.0))
        print(f"run: {wall:.1f} s; load average {os.getloadavg()[0]:.2f}")
    assert summary is not None
    wall = statistics.median(walls)
    print(f"first index of {tree.name} ({args.provider}, {args.precision}): {summary.files_found} files, "
          f"{summary.chunks_total} chunks, {summary.embedded} texts embedded; "
          f"{wall:.1f} s median of {args.runs} ({', '.join(f'{w:.1f}' for w in walls)})")
    print(f"| {'phase':<30} | {'seconds':>8} | {'share of wall':>13} |")
    print(f"|{'-' * 32}|{'-' * 10}|{'-' * 15}|")
    for phase in PHASES:
        seconds = statistics.median(phases[phase])
        print(f"| {phase:<30} | {seconds:>8.1f} | {seconds / wall:>12.0%} |")
    print(f"| {'wall clock':<30} | {wall:>8.1f} | {1:>12.0%} |")
    if summary.embedded:
        model = statistics.median(phases["embed (model)"])
        print(f"model alone: {summary.embedded / model:.1f} texts/s; whole run: {summary.embedded / wall:.1f} texts/s")
    subprocess.run([RAG, "db", "stop"], env={**os.environ, "RAG_HOME": str(HOME)}, capture_output=True)
    print(speed_line())


if __name__ == "__main__":
    main()

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

A second table cuts the run at the model's first and last batch: before the model (scan
to the first batch), the model's span, after it (HNSW index, file vectors, the run's end),
each with its wall seconds and the CPU seconds of this process and of the database server
(its backends, live and exited). What a segment's CPU cannot fill of the cores, (wall x
cores - CPU) / cores, is the most that overlapping it with the model could save, on a quiet
machine (a shared one adds waiting for a core to the wall).

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


def one_run(tree: Path, provider: str, precision: str) -> tuple[float, dict[str, float], Any, dict[str, Any]]:
    """A first index of ``tree`` into an empty database: (wall seconds, seconds by phase, summary,
    (wall, CPU here, CPU in the server) by segment)."""
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
    clock = CpuClock(HOME / "pgdata")
    embedder = MarkedEmbedder(model, clock)  # (its seconds: the phase "embed (model)")
    with db.connect(db.resolve_target(DatabaseConfig())) as conn, patched(watch):
        started = time.perf_counter()
        started_at = (started, *clock.seconds())
        summary = index_source(conn, SourceSpec("profiled", "local", str(tree)), tree, embedder,
                               ChunkSettings())
        wall = time.perf_counter() - started
    watch.seconds["embed (model)"] = embedder.seconds
    watch.seconds["chunk"] = watch.seconds.pop("chunk + graph extraction", 0.0) - watch.seconds["graph extraction"]
    timeline = [*embedder.marks, (time.perf_counter(), *clock.seconds())]
    return wall, dict(watch.seconds), summary, segments([started_at, *timeline])


class CpuClock:
    """CPU seconds so far of this process (every thread) and of the database server in ``pgdata``
    (the postmaster, its live children, and the exited ones it reaped)."""

    def __init__(self, pgdata: Path) -> None:
        self._server = int((pgdata / "postmaster.pid").read_text().split()[0])
        self._tick = os.sysconf("SC_CLK_TCK")

    def seconds(self) -> tuple[float, float]:
        return time.process_time(), self._server_seconds()

    def _server_seconds(self) -> float:
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # (exited meanwhile)
            pid, parent = int(stat.parent.name), int(fields[1])
            if pid == self._server:
                ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
            elif parent == self._server:
                ticks += int(fields[11]) + int(fields[12])
        return ticks / self._tick


class MarkedEmbedder(TimedEmbedder):
    """A TimedEmbedder noting (wall, CPU seconds) when the model's first batch starts and its last ends."""

    def __init__(self, model: Any, clock: CpuClock) -> None:
        super().__init__(model)
        self.clock = clock
        self.marks: list[tuple[float, float, float]] = []

    def embed_documents(self, texts: list[str], progress: Any = None) -> list[list[float]]:
        if not self.marks:
            self.marks.append((time.perf_counter(), *self.clock.seconds()))
        try:
            return super().embed_documents(texts, progress)
        finally:
            del self.marks[1:]
            self.marks.append((time.perf_counter(), *self.clock.seconds()))


SEGMENTS = ("before the model", "the model's span", "after the model")


def segments(marks: list[tuple[float, float, float]]) -> dict[str, tuple[float, float, float]]:
    """(wall, CPU of this process, CPU of the server) of each segment between consecutive marks."""
    if len(marks) < 4:  # (nothing embedded: one segment)
        marks = [marks[0], marks[-1], marks[-1], marks[-1]]
    return {name: (end[0] - start[0], end[1] - start[1], end[2] - start[2])
            for name, start, end in zip(SEGMENTS, marks[:-1], marks[1:], strict=True)}


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
    spans: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    summary = None
    for _ in range(args.runs):
        wall, seconds, summary, cut = one_run(tree, args.provider, args.precision)
        walls.append(wall)
        for name, figures in cut.items():
            spans[name].append(figures)
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
    cores = len(os.sched_getaffinity(0))
    print(f"| {'segment (medians)':<20} | {'wall s':>7} | {'CPU rag s':>9} | {'CPU postgres s':>14} | "
          f"{'cores idle s':>12} |")
    print(f"|{'-' * 22}|{'-' * 9}|{'-' * 11}|{'-' * 16}|{'-' * 14}|")
    for name in SEGMENTS:
        runs = spans[name]
        seg_wall, here, server = (statistics.median(f[i] for f in runs) for i in range(3))
        idle = statistics.median(max(0.0, f[0] - (f[1] + f[2]) / cores) for f in runs)
        print(f"| {name:<20} | {seg_wall:>7.1f} | {here:>9.1f} | {server:>14.1f} | {idle:>12.1f} |")
    subprocess.run([RAG, "db", "stop"], env={**os.environ, "RAG_HOME": str(HOME)}, capture_output=True)
    print(speed_line())


if __name__ == "__main__":
    main()

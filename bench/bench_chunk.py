"""Chunking speed on a real source tree, on one core.

Downloads a source distribution with pip into ``.bench/`` (gitignored; reused
when present), unpacks it, and chunks every file with ``chunk_file`` the way
the indexer does. Prints files, MB, seconds, files/s and MB/s (the median of
``--runs`` runs) and the same per sourceType. The goal is >= 5 MB/s per core.

    .venv/bin/python bench/bench_chunk.py                 # django 5.1.4
    .venv/bin/python bench/bench_chunk.py --package flask==3.1.0 --runs 5
"""

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from rag.dispatcher import chunk_file

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".bench"
GOAL_MB_PER_S = 5.0


@dataclass
class Tally:
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    chunks: int = 0

    def add(self, size: int, seconds: float, chunks: int) -> None:
        self.files += 1
        self.bytes += size
        self.seconds += seconds
        self.chunks += chunks


@dataclass
class Run:
    seconds: float
    by_kind: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))


def corpus(package: str) -> Path:
    """The unpacked source distribution of ``package`` ("name==version")."""
    archive = _archive(package)
    tree = CACHE / "corpus" / archive.name.removesuffix(".tar.gz").removesuffix(".zip")
    if not tree.is_dir():
        partial = tree.with_name(tree.name + ".partial")  # renamed once complete
        shutil.rmtree(partial, ignore_errors=True)
        if archive.suffix == ".zip":
            with zipfile.ZipFile(archive) as zipped:
                zipped.extractall(partial)
        else:
            with tarfile.open(archive) as tarred:
                tarred.extractall(partial, filter="data")
        partial.rename(tree)
    return tree


def _archive(package: str) -> Path:
    """The sdist of ``package`` in the cache, downloaded with pip when missing."""
    name, _, version = package.partition("==")
    if not version:
        raise SystemExit(f"pin a version: --package {name}==X.Y")
    prefix = f"{name}-{version}".lower().replace("_", "-")
    found = _cached_archives(prefix)
    if not found:
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        subprocess.run([*pip, "--no-binary", ":all:", package, "-d", str(CACHE)], check=True)
        found = _cached_archives(prefix)
    if not found:
        raise SystemExit(f"pip downloaded no source archive for {package} into {CACHE}")
    return found[0]


def _cached_archives(prefix: str) -> list[Path]:
    """Archives named like ``prefix`` (sdist names vary in case and - or _)."""
    return sorted(
        path
        for path in CACHE.glob("*")
        if path.name.lower().replace("_", "-").startswith(prefix)
        and path.name.endswith((".tar.gz", ".zip"))
    )


def run_once(files: dict[Path, int], root: Path, max_tokens: int, overlap: int) -> Run:
    """Chunk every file once; ``files`` maps each path to its size."""
    run = Run(0.0)
    started = time.perf_counter()
    for path, size in files.items():
        file_started = time.perf_counter()
        rel_path = path.relative_to(root).as_posix()
        result = chunk_file(path, rel_path, max_tokens=max_tokens, overlap=overlap)
        seconds = time.perf_counter() - file_started
        if result.error is not None:
            kind = "error"
        elif result.chunks:
            kind = result.chunks[0].metadata["sourceType"]
        else:
            kind = "empty"
        run.by_kind[kind].add(size, seconds, len(result.chunks))
    run.seconds = time.perf_counter() - started
    return run


def report(runs: list[Run], files: dict[Path, int]) -> None:
    total_mb = sum(files.values()) / 1e6
    median = sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]
    print(f"files {len(files)}  MB {total_mb:.2f}  seconds {median.seconds:.2f} "
          f"(runs: {', '.join(f'{run.seconds:.2f}' for run in runs)})")
    print(f"files/s {len(files) / median.seconds:.0f}  MB/s {total_mb / median.seconds:.2f}  "
          f"(goal >= {GOAL_MB_PER_S} MB/s per core)")
    binary = median.by_kind.get("error", Tally())
    text_mb = total_mb - binary.bytes / 1e6
    print(f"without binary files: MB {text_mb:.2f}  "
          f"MB/s {text_mb / (median.seconds - binary.seconds):.2f}")
    print(f"{'sourceType':<12}{'files':>7}{'MB':>9}{'chunks':>9}{'seconds':>9}{'MB/s':>8}")
    for kind, tally in sorted(median.by_kind.items(), key=lambda item: -item[1].bytes):
        mb = tally.bytes / 1e6
        speed = mb / tally.seconds if tally.seconds else float("inf")
        print(f"{kind:<12}{tally.files:>7}{mb:>9.2f}{tally.chunks:>9}"
              f"{tally.seconds:>9.2f}{speed:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default="django==5.1.4", help="pip requirement to fetch")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=1000)
    parser.add_argument("--overlap", type=int, default=100)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # the goal is per core
    root = corpus(args.package)
    files = {path: path.stat().st_size for path in sorted(root.rglob("*")) if path.is_file()}
    runs = [run_once(files, root, args.max_tokens, args.overlap) for _ in range(args.runs)]
    print(f"corpus {args.package} at {root}")
    report(runs, files)


if __name__ == "__main__":
    main()

"""Index benchmark (`make bench-index`): a real corpus, the real CLI, printed figures.

Corpus: the Django 5.1.4 sdist, fetched with pip into .bench/ at bench time.
Measures, each as the median of several runs where cheap enough:
  - full keyword-only index (provider none) into an empty database: seconds and files/s,
    and, interleaved with it, the same without the code graph (no extraction, nothing
    to resolve): the graph's cost as a ratio of medians (goal: <= +15%);
  - no-change re-index, process start included (`rag index` as a subprocess);
  - re-index after touching one file's content, and after deleting one;
  - with the local model on a sample of files: pipeline chunks/s against the raw
    ONNX model's chunks/s on the very same chunk texts, and the torch path's
    (``runtime: sentence-transformers``, as before ONNX Runtime) on them too, in
    three interleaved runs (median ratios; goals: pipeline >= 0.9 x raw ONNX, and
    >= the torch path: its raw model, so the pipeline's own work counts against
    ONNX only), with the seconds the pipeline spends outside the model.
Uses its own RAG_HOME under .bench/ so it never touches your index.
``--local-only`` skips the keyword-only figures; ``--full-only`` stops after the full index;
``--pairs N`` times N interleaved pairs of full index with and without the graph (default 3:
on a shared 2-core machine single pairs vary by +-7%, so a claim near the goal wants more).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from machine import speed_line

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / ".bench"
DJANGO = "5.1.4"
RAG = str(Path(sys.executable).parent / "rag")


def corpus() -> Path:
    """The unpacked sdist (its archive and folder are named Django- or django- by pip's version)."""
    trees = [p for p in BENCH.glob(f"[Dd]jango-{DJANGO}") if p.is_dir()]
    if trees:
        return trees[0]
    BENCH.mkdir(exist_ok=True)
    archives = list(BENCH.glob(f"[Dd]jango-{DJANGO}.tar.gz"))
    if not archives:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             f"django=={DJANGO}", "-d", str(BENCH)],
            check=True,
        )
        archives = list(BENCH.glob(f"[Dd]jango-{DJANGO}.tar.gz"))
    with tarfile.open(archives[0]) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(BENCH, filter="data")
    return BENCH / top


# `rag` with chunking told not to extract the code graph (no symbols, no references to
# resolve): what the graph costs a full index, measured by the bench only.
WITHOUT_GRAPH = (
    sys.executable, "-c",
    "import functools, rag.dispatcher as d; "
    "d.chunk_code_with_graph = functools.partial(d.chunk_code_with_graph, graph=False); "
    "import rag.cli; rag.cli.main()",
)


def rag(env: dict[str, str], *args: str) -> tuple[float, dict[str, object]]:
    return timed(env, RAG, *args)


def timed(env: dict[str, str], *command: str) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    elapsed = time.perf_counter() - started
    return elapsed, (json.loads(out.splitlines()[-1]) if out.strip() else {})


def fresh_home(env: dict[str, str]) -> None:
    """An empty embedded database in env's RAG_HOME (its server stopped and data removed first)."""
    subprocess.run([RAG, "db", "stop"], env=env, capture_output=True)
    shutil.rmtree(env["RAG_HOME"], ignore_errors=True)
    subprocess.run([RAG, "init"], env=env, check=True, capture_output=True)


def main() -> None:
    local_only = "--local-only" in sys.argv[1:]
    tree = corpus()
    home = BENCH / "home-index"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["RAG_HOME"] = str(home)
    config = BENCH / "bench-none.yaml"
    config.write_text("embeddings: {provider: none}\n")

    print(speed_line())
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    if local_only:
        fresh_home(env)
        local_throughput(env, tree)
        subprocess.run([RAG, "db", "stop"], env=env, capture_output=True)
        print(speed_line())
        return
    pairs = int(sys.argv[sys.argv.index("--pairs") + 1]) if "--pairs" in sys.argv else 3
    full_runs, bare_runs = [], []
    for _ in range(pairs):  # each a first index into an empty database, as a new user's
        fresh_home(env)  # without the code graph first, interleaved: the machine's load drifts
        bare_runs.append(timed(env, *WITHOUT_GRAPH, "--config", str(config), "index", "--path",
                               str(tree), "--name", "django", "--json")[0])
        fresh_home(env)
        seconds, summary = rag(env, "--config", str(config), "index", "--path", str(tree),
                               "--name", "django", "--json")
        full_runs.append((seconds, summary))
    seconds = statistics.median(s for s, _ in full_runs)
    bare = statistics.median(bare_runs)
    summary = full_runs[0][1]
    files = int(summary["new"])  # type: ignore[call-overload]
    print(f"corpus: django {DJANGO}: {summary['filesFound']} files indexed, "
          f"{sum(summary['skipped'].values())} skipped, {summary['chunksTotal']} chunks")  # type: ignore[union-attr]
    runs = ", ".join(f"{s:.2f}" for s, _ in full_runs)
    print(f"full index, provider none: {seconds:.2f} s median of {pairs} ({runs}), {files / seconds:,.0f} files/s")
    ratios = ", ".join(f"{s / b:.2f}" for (s, _), b in zip(full_runs, bare_runs, strict=True))
    print(f"code graph cost: without extraction and resolution {bare:.2f} s median of {pairs} "
          f"({', '.join(f'{b:.2f}' for b in bare_runs)}), interleaved; with it +{(seconds / bare - 1) * 100:.0f}% "
          f"(ratio of medians {seconds / bare:.2f}; per pair {ratios}; goal <= +15%)")
    if "--full-only" in sys.argv[1:]:
        subprocess.run([RAG, "db", "stop"], env=env, capture_output=True)
        return

    nochange = [rag(env, "--config", str(config), "index", "--path", str(tree), "--name", "django",
                    "--json")[0] for _ in range(5)]
    print(f"no-change re-index (process start included): {statistics.median(nochange):.2f} s median of 5")

    target = tree / "django" / "utils" / "text.py"
    original = target.read_text()
    touched = []
    for i in range(5):
        target.write_text(original + f"\n# bench edit {i}\n")
        touched.append(rag(env, "--config", str(config), "index", "--path", str(tree), "--name", "django",
                           "--json")[0])
    target.write_text(original)
    print(f"re-index after one changed file: {statistics.median(touched):.2f} s median of 5")

    victim = tree / "django" / "utils" / "version.py"
    kept = victim.read_bytes()
    victim.unlink()
    deleted = rag(env, "--config", str(config), "index", "--path", str(tree), "--name", "django", "--json")[0]
    victim.write_bytes(kept)
    print(f"re-index after one deleted file: {deleted:.2f} s")

    local_throughput(env, tree)
    subprocess.run([RAG, "db", "stop"], env=env, capture_output=True)
    print(speed_line())


class TimedEmbedder:
    """An embedder adding up the seconds its model spends on documents: what the pipeline waits for."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.seconds = 0.0

    @property
    def model_id(self) -> str:
        return str(self.model.model_id)

    @property
    def dimensions(self) -> int:
        return int(self.model.dimensions)

    def embed_documents(self, texts: list[str], progress: Any = None) -> list[list[float]]:
        started = time.perf_counter()
        try:
            return list(self.model.embed_documents(texts, progress))
        finally:
            self.seconds += time.perf_counter() - started

    def embed_query(self, text: str) -> list[float]:
        return list(self.model.embed_query(text))


def local_throughput(env: dict[str, str], tree: Path, runs: int = 3) -> None:
    """Pipeline vs raw model on the same chunks of a sample, both with the model loaded.

    The whole corpus takes too long on this CPU, so a sample (django/core) is used;
    the pipeline figure covers scan, chunking, bookkeeping, embedding and storing.
    The model's own speed drifts by 20% from minute to minute here, so each run
    times the raw models right after the pipeline (interleaved, the two raw models
    in turn first), and the seconds the pipeline spends outside the model and the
    load average of each run are reported too.
    """
    from rag import db
    from rag.config import ChunkSettings, DatabaseConfig, SourceSpec
    from rag.indexer import index_source
    from rag.providers import LocalEmbedder

    sample = tree / "django" / "core"
    os.environ["RAG_HOME"] = env["RAG_HOME"]
    target = db.resolve_target(DatabaseConfig())
    model = LocalEmbedder()
    model.embed_documents(["warm up the model before timing"])
    assert model.runtime == "onnx"
    torch_path = LocalEmbedder(runtime="sentence-transformers")
    torch_path.embed_documents(["warm up the model before timing"])
    assert torch_path.runtime == "sentence-transformers"
    ratios, own, versus_torch, raw_versus_torch = [], [], [], []
    with db.connect(target) as conn:
        for run in range(runs):
            conn.execute("SELECT rag.remove_source('sample') FROM rag.sources WHERE name = 'sample'")
            conn.execute("DELETE FROM rag.embeddings WHERE model = %s", (model.model_id,))
            timed = TimedEmbedder(model)
            started = time.perf_counter()
            summary = index_source(conn, SourceSpec("sample", "local", str(sample)), sample, timed,
                                   ChunkSettings())
            pipeline = time.perf_counter() - started
            texts = [r["content"] for r in conn.execute(
                "SELECT DISTINCT ON (c.content_hash) rag._indexed_text(c.context, c.content) AS content"
                " FROM rag.chunks c JOIN rag.sources s"
                " ON s.id = c.source_id WHERE s.name = 'sample'").fetchall()]
            seconds = {}
            for name, embedder in ([("onnx", model), ("torch", torch_path)][:: 1 if run % 2 == 0 else -1]):
                started = time.perf_counter()
                embedder.embed_documents(texts)
                seconds[name] = time.perf_counter() - started
            raw, raw_torch = seconds["onnx"], seconds["torch"]
            ratios.append(raw / pipeline)
            versus_torch.append(raw_torch / pipeline)
            raw_versus_torch.append(raw_torch / raw)
            own.append(pipeline - timed.seconds)
            print(f"local model on django/core ({summary.files_found} files, {summary.embedded} chunks embedded): "
                  f"pipeline {summary.embedded / pipeline:.1f} chunks/s ({pipeline:.1f} s, "
                  f"{pipeline - timed.seconds:.1f} s of it outside the model), "
                  f"raw ONNX model {len(texts) / raw:.1f} chunks/s ({raw:.1f} s), ratio {raw / pipeline:.2f}; "
                  f"raw torch path {len(texts) / raw_torch:.1f} chunks/s ({raw_torch:.1f} s); "
                  f"load average {os.getloadavg()[0]:.2f}")
    print(f"local model throughput ratio (raw ONNX model time / pipeline time): {statistics.median(ratios):.2f} "
          f"median of {runs} ({', '.join(f'{r:.2f}' for r in ratios)}); the pipeline's own work: "
          f"{statistics.median(own):.1f} s median")
    print(f"pipeline (ONNX) vs raw torch path (torch time / pipeline time): {statistics.median(versus_torch):.2f} "
          f"median of {runs} ({', '.join(f'{r:.2f}' for r in versus_torch)}); >= 1 means the pipeline is faster")
    print(f"raw ONNX vs raw torch model (torch time / ONNX time): {statistics.median(raw_versus_torch):.2f} "
          f"median of {runs} ({', '.join(f'{r:.2f}' for r in raw_versus_torch)})")


if __name__ == "__main__":
    main()

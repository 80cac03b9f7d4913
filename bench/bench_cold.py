"""Cold-start benchmark (`make bench-cold`): a new `rag search` process with the default model.

A small index (this repository's rag/ folder, local model) in ``.bench/home-cold``,
built once and reused. Then, interleaved, ``--runs`` times each:
  - ``rag search "<a query never seen before>"``: a new process end to end (Python
    start, imports, the database, loading the ONNX model, embedding the query, search);
  - ``python -c "import torch, sentence_transformers"``: what the torch path paid
    before it could even load the model;
  - ``rag search`` with ``embeddings.provider: none`` (keyword-only, no model): what
    the process costs without any model, so the model's own share shows.
Prints the medians, their ratio (goal: search ≤ 1.0 s on a quiet machine and
≤ 0.25 × the import), whether the search process imported torch, the first-ever
start (the ONNX export included), and the load average, since the machine is shared.
Last, in this process: a query's latency alone and while document batches keep
every core busy in another thread (an MCP server indexing while it searches).

``--load N`` keeps N busy processes running during the cold searches (bench/machine.py).

    .venv/bin/python bench/bench_cold.py [--runs 5] [--load 2]
"""

import argparse
import importlib.util
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from machine import background_load, load_line, speed_line

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / ".bench" / "home-cold"
RAG = str(Path(sys.executable).parent / "rag")
WORDS = ("server", "vector", "search", "chunk", "index", "model", "query", "source", "file", "token",
         "embedded", "rank", "fusion", "config", "provider", "database", "schema", "keyword", "path")


def env(config: str = "cold.yaml") -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    return {**clean, "RAG_HOME": str(HOME), "RAG_CONFIG": str(HOME / config)}


def timed(command: list[str], config: str = "cold.yaml") -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(command, env=env(config), capture_output=True, text=True, check=True)
    return time.perf_counter() - started, out.stdout


def unseen_query(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, 3)) + f" {rng.randrange(10**9)}"


def build_index(fresh: bool) -> None:
    if fresh:
        subprocess.run([RAG, "db", "stop"], env=env(), capture_output=True)
        shutil.rmtree(HOME, ignore_errors=True)
    HOME.mkdir(parents=True, exist_ok=True)
    (HOME / "cold.yaml").write_text("embeddings: {provider: local}\n")
    (HOME / "none.yaml").write_text("embeddings: {provider: none}\n")
    subprocess.run([RAG, "init"], env=env(), check=True, capture_output=True)
    subprocess.run([RAG, "index", "--path", str(ROOT / "rag"), "--name", "rag-code"], env=env(), check=True,
                   capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--load", type=int, default=0, help="busy processes running during the cold searches")
    parser.add_argument("--skip-batches", action="store_true", help="skip the query-beside-batches latency")
    parser.add_argument("--reuse-home", action="store_true", help="keep the index of an earlier run")
    args = parser.parse_args()
    print(speed_line())
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    started = time.perf_counter()
    build_index(fresh=not args.reuse_home)
    print(f"fresh home: rag init + index of rag/ (exports the ONNX model once): {time.perf_counter() - started:.1f} s")
    models = sorted((HOME / "models").glob("*/*.onnx"))
    print(f"stored model: {', '.join(str(m.relative_to(HOME)) for m in models) or 'none'}")

    rng = random.Random(time.time_ns())
    torch = importlib.util.find_spec("sentence_transformers") is not None
    probe = ("import sys, runpy; sys.argv = ['rag', 'search', %r, '--json'];"
             "\ntry:\n runpy.run_path(%r, run_name='__main__')\nexcept SystemExit: pass\n"
             "print('torch imported' if 'torch' in sys.modules else 'torch not imported', file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe % (unseen_query(rng), RAG)], env=env(), capture_output=True,
                         text=True, check=True)
    print(f"search process: {out.stderr.strip().splitlines()[-1]}")

    search, imports, keyword = [], [], []
    with background_load(args.load):
        for _ in range(args.runs + 1):  # the first round warms the disk cache and is not counted
            s, stdout = timed([RAG, "search", unseen_query(rng), "--json", "-k", "3"])
            results = json.loads(stdout)
            assert results, "the small index returned nothing"
            i, _ = timed([sys.executable, "-c", "import torch, sentence_transformers"]) if torch else (math.nan, "")
            k, _ = timed([RAG, "search", unseen_query(rng), "--json", "-k", "3"], "none.yaml")
            search.append(s)
            imports.append(i)
            keyword.append(k)
        print(load_line(args.load))
    search, imports, keyword = search[1:], imports[1:], keyword[1:]
    s_med, i_med = statistics.median(search), statistics.median(imports)
    print(f"cold `rag search` (new process, unseen query, default model): {s_med:.2f} s median of {args.runs} "
          f"({', '.join(f'{v:.2f}' for v in search)}); goal <= 1.0 s on a quiet machine")
    if torch:
        print(f"`import torch, sentence_transformers` in the same run: {i_med:.2f} s median of {args.runs} "
              f"({', '.join(f'{v:.2f}' for v in imports)})")
        print(f"ratio search / torch import: {s_med / i_med:.2f} (goal <= 0.25)")
    else:
        print("(the torch extra is not installed: no torch import to compare with)")
    print(f"`rag search` with no model (provider none) in the same run: {statistics.median(keyword):.2f} s median "
          f"({', '.join(f'{v:.2f}' for v in keyword)}): the model's share is the difference")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} CPUs")
    subprocess.run([RAG, "db", "stop"], env=env(), capture_output=True)
    if not args.skip_batches:
        query_beside_batches(rng)
    print(speed_line())


def query_beside_batches(rng: random.Random, queries: int = 30) -> None:
    import threading

    from rag.providers import LocalEmbedder

    os.environ["RAG_HOME"] = str(HOME)
    embedder = LocalEmbedder()
    embedder.embed_documents(["warm up the batch session"])

    def latencies() -> list[float]:
        values = []
        for _ in range(queries):
            started = time.perf_counter()
            embedder.embed_query(unseen_query(rng))
            values.append(time.perf_counter() - started)
        return values

    alone = latencies()
    stop = threading.Event()
    texts = [" ".join(rng.choices(WORDS, k=180)) for _ in range(64)]

    def index_run() -> None:
        while not stop.is_set():
            embedder.embed_documents(texts)

    worker = threading.Thread(target=index_run, daemon=True)
    worker.start()
    time.sleep(0.5)
    busy = latencies()
    stop.set()
    worker.join()
    print(f"query embedding alone: p50 {statistics.median(alone) * 1000:.0f} ms, max {max(alone) * 1000:.0f} ms; "
          f"while document batches run: p50 {statistics.median(busy) * 1000:.0f} ms, max {max(busy) * 1000:.0f} ms "
          f"({queries} queries each)")


if __name__ == "__main__":
    main()

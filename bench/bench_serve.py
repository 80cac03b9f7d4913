"""``rag serve`` under load: concurrent searches over HTTP while an index run writes, and
server-sent ``ask`` streams of which half are cancelled by their client.

Corpus: bench_mcp.py's synthetic one (``--chunks``, default 20k; random words, vectors of the
local model's id, in ``.bench/home-mcp``). The server is ``rag serve`` with the local model
and one read token granted both sources, so every search runs as a reader role under
row-level security. Meanwhile a writer process indexes another source (``writer``, ~300
markdown files, keyword-only) again and again with ``--force``.

1. In-process: the same queries through ``rag search --batch`` (one process, sequential); each
   answer's latency is the time between two output lines (the first, which loads the model,
   is dropped).
2. HTTP, one client: the same queries one after another (the server's own overhead; ``--admin``
   runs them as the server's own database user, without row-level security, for comparison).
3. HTTP, ``--clients`` (32) concurrent clients for ``--seconds`` (60): p50/p95, errors,
   throughput, the server's resident memory at start and end.
4. ``--asks`` (200) ``/v1/ask`` streams against a fake OpenAI-compatible LLM (tests/plugins/llm.py,
   20 words at 20 ms), ``--clients`` at a time; every second one is closed by its client after
   its first token. The fake LLM counts the streams it finished and those abandoned.

    .venv/bin/python bench/bench_serve.py [--chunks 20000] [--clients 32] [--seconds 60] [--asks 200]
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import psutil
from bench_mcp import BIN, HOME, build_corpus, corpus_words
from machine import speed_line

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from plugins.llm import FakeLLM  # noqa: E402  (the tests' fake LLM: real HTTP, real streaming)

TOKEN = "bench-reader-token-0123456789"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def figures(name: str, latencies: list[float], errors: int = 0, seconds: float | None = None) -> str:
    line = (f"{name}: {len(latencies):,} searches, p50 {percentile(latencies, 0.5) * 1000:.0f} ms, "
            f"p95 {percentile(latencies, 0.95) * 1000:.0f} ms, errors {errors}")
    if seconds:
        line += f", {len(latencies) / seconds:.1f} searches/s"
    return line


def queries(count: int) -> list[str]:
    words = corpus_words()[:2000]
    rng = random.Random(7)
    return [" ".join(rng.sample(words, rng.randint(2, 4))) for _ in range(count)]


def in_process(config: Path, texts: list[str], env: dict[str, str]) -> list[float]:
    batch = Path(tempfile.mkdtemp()) / "queries.jsonl"
    batch.write_text("".join(json.dumps({"id": i, "query": q}) + "\n" for i, q in enumerate(texts)))
    process = subprocess.Popen([str(BIN / "rag"), "--config", str(config), "search", "--batch", str(batch)],
                               stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    stamps = [time.perf_counter()]
    for _ in process.stdout:
        stamps.append(time.perf_counter())
    assert process.wait() == 0
    return [b - a for a, b in pairwise(stamps[1:])]  # (the first answer loads the model)


def writer_loop(env: dict[str, str], stop: threading.Event, runs: list[float]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-serve-writer-"))
    words = corpus_words()[:3000]
    rng = random.Random(3)
    for n in range(300):
        body = "\n\n".join(" ".join(rng.choices(words, k=40)) for _ in range(6))
        (folder / f"page_{n}.md").write_text(f"# Page {n}\n\n{body}\n")
    config = folder / "writer.yaml"
    config.write_text("embeddings: {provider: none}\n")
    while not stop.is_set():
        started = time.perf_counter()
        subprocess.run([str(BIN / "rag"), "--config", str(config), "index", "--path", str(folder), "--name",
                        "writer", "--force"], env=env, capture_output=True, check=True)
        runs.append(time.perf_counter() - started)


def drop_writer() -> None:
    """The writer's source removed, so bench_mcp.py's corpus is found as it built it (and reused)."""
    if not HOME.exists():
        return
    from rag import db, sqlapi
    from rag.config import DatabaseConfig

    os.environ["RAG_HOME"] = str(HOME)
    try:
        with db.connect(db.resolve_target(DatabaseConfig())) as conn:
            if any(r["name"] == "writer" for r in sqlapi.list_sources(conn)):
                sqlapi.remove_source(conn, "writer")
    except Exception as exc:  # no schema yet: build_corpus installs it
        print(f"(writer source not removed: {exc})", file=sys.stderr)


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def http_clients(url: str, texts: list[str], clients: int, seconds: float) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(number: int) -> None:
        rng = random.Random(number)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                try:
                    ok = http.post("/v1/search", json={"query": rng.choice(texts)}).status_code == 200
                except httpx.HTTPError:
                    ok = False
                took = time.perf_counter() - started
                with lock:
                    if ok:
                        latencies.append(took)
                    else:
                        errors[0] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, errors[0], time.perf_counter() - started


def sequential(url: str, texts: list[str]) -> list[float]:
    latencies = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        for text in texts:
            started = time.perf_counter()
            response = http.post("/v1/search", json={"query": text})
            latencies.append(time.perf_counter() - started)
            assert response.status_code == 200, response.text
    return latencies


def asks(url: str, count: int, clients: int, llm: FakeLLM) -> dict[str, Any]:
    outcome = {"completed": 0, "cancelled": 0, "errors": 0}
    lock = threading.Lock()
    numbers = iter(range(count))

    def client() -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            for number in numbers:
                cancel = number % 2 == 1
                try:
                    with http.stream("POST", "/v1/ask", json={"question": "what do the pages say?"}) as response:
                        kind = "errors"
                        for line in response.iter_lines():
                            if cancel and line == "event: token":
                                kind = "cancelled"
                                break  # closing the response: the client goes away
                            if line == "event: done":
                                kind = "completed"
                            if line == "event: error":
                                kind = "errors"
                                break
                except httpx.HTTPError:
                    kind = "errors"
                with lock:
                    outcome[kind] += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome["seconds"] = round(time.perf_counter() - started, 1)
    time.sleep(1)  # the server closes the abandoned LLM streams
    outcome["llm streams finished"] = llm.streams["finished"]
    outcome["llm streams abandoned"] = llm.streams["abandoned"]
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--asks", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200, help="for the in-process and one-client runs")
    parser.add_argument("--admin", action="store_true",
                        help="an admin token (the server's own database user, no row-level security)")
    args = parser.parse_args()
    print(speed_line())
    drop_writer()
    build_corpus(args.chunks)
    llm = FakeLLM().start()
    llm.reply = lambda messages: " ".join(["pages"] * 20)
    llm.word_delay = 0.02
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    config = work / "rag.yaml"
    config.write_text("embeddings: {provider: local}\nserve: {watch: false, maxConcurrent: 8, perTokenConcurrent: 64}\n"
                      f"llm: {{provider: openai, baseUrl: '{llm.base_url}', model: fake-chat-1}}\n")
    env = dict(os.environ, RAG_HOME=str(HOME), HF_HUB_OFFLINE="1", RAG_LOG_LEVEL="WARNING",
               RAG_SERVE_TOKENS=json.dumps([{"name": "bench", "token": TOKEN, "scope": "admin"} if args.admin else
                                            {"name": "bench", "token": TOKEN, "scope": "read",
                                             "sources": ["app", "docs", "writer"]}]))
    texts = queries(args.queries)
    port = 18000 + os.getpid() % 1000
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([str(BIN / "rag"), "--config", str(config), "serve", "--port", str(port)], env=env)
    stop = threading.Event()
    writer_runs: list[float] = []
    writer = threading.Thread(target=writer_loop, args=(env, stop, writer_runs), daemon=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "rag serve did not start"
            time.sleep(0.2)
        sequential(url, texts[:10])  # the model loaded, the functions compiled
        rss_start = rss_mb(server.pid)
        writer.start()
        time.sleep(2)  # the first index run is under way
        inline = in_process(config, texts, env)
        print(figures("in-process (rag search --batch), writer running", inline))
        one = sequential(url, texts)
        print(figures("HTTP, 1 client, writer running", one))
        print(f"  ratio HTTP/in-process: p50 {percentile(one, .5) / percentile(inline, .5):.2f}x, "
              f"p95 {percentile(one, .95) / percentile(inline, .95):.2f}x")
        many, errors, seconds = http_clients(url, texts, args.clients, args.seconds)
        print(figures(f"HTTP, {args.clients} concurrent clients for {args.seconds:.0f} s, writer running",
                      many, errors, seconds))
        print(f"  ratio p95 HTTP ({args.clients} clients)/in-process: "
              f"{percentile(many, .95) / percentile(inline, .95):.1f}x "
              f"(queueing: serve.maxConcurrent 8 on {os.cpu_count()} CPUs)")
        rss_searches = rss_mb(server.pid)
        stop.set()
        outcome = asks(url, args.asks, args.clients, llm) if args.asks else {}
        rss_end = rss_mb(server.pid)
        print(f"asks: {args.asks} SSE streams, {args.clients} at a time, every second one cancelled: {outcome}")
        print(f"writer: {len(writer_runs)} index runs of 300 files, median "
              f"{statistics.median(writer_runs) if writer_runs else float('nan'):.1f} s")
        print(f"server memory (RSS): {rss_start:.0f} MB at start, {rss_searches:.0f} MB after the searches, "
              f"{rss_end:.0f} MB after the asks")
    finally:
        stop.set()
        server.terminate()
        server.wait(60)
        llm.stop()
        if writer.is_alive():
            writer.join(120)
        drop_writer()


if __name__ == "__main__":
    main()

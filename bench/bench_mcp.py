"""MCP server benchmark: start-up to ``tools/list``, first search, later searches.

Start-up: the wall time from spawning the process to the ``tools/list`` reply
(``initialize`` → ``notifications/initialized`` → ``tools/list`` over stdio),
median of ``--runs``, for three servers measured in the same run, interleaved:
a minimal ``MCPServer`` with one tool (the reference), ``rag mcp`` (the console
script, which imports the CLI first) and ``python -m rag.mcp_server`` (the
server without the CLI's imports). Goal: ``rag mcp`` ≤ 1.25 × the minimal one.

Search: a synthetic corpus of ``--chunks`` chunks (random words, vectors near
random centroids stored under the local model's id, through the real SQL API)
in ``.bench/home-mcp`` (embedded server, reused while its counts match). Then
``rag mcp`` with the local model: the first ``search`` without preloading
(includes loading the ONNX model; goal ≤ 1.5 s) and the server's resident memory
after it, next to the same build with ``embeddings.local.runtime:
sentence-transformers`` (the torch path, as before ONNX Runtime), interleaved,
``--cold-runs`` times each; the first ``search`` after the background warm-up finished, and
``--searches`` later searches with new query texts (each embeds its query): p50
and p95 of the round trip as the client sees it. Goal: p95 ≤ 200 ms at 10k chunks.
``--compare-bin`` names the bin/ folder of another install (e.g. an older
branch's .venv/bin): its first search and memory are measured too, in the same rounds.

``--load N`` keeps N busy processes running meanwhile (bench/machine.py), for start-up on a
loaded machine.

    .venv/bin/python bench/bench_mcp.py [--runs 10] [--chunks 10000] [--searches 100] [--load 2]
"""

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from machine import background_load, load_line

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HOME = ROOT / ".bench" / "home-mcp"
MODEL = "local:all-MiniLM-L6-v2@384"
DIMS = 384
GENERATOR = "mcp-1"  # bump when the corpus generator changes

MINIMAL_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("minimal")


@server.tool()
def ping(text: str) -> str:
    """Echo the text."""
    return text


server.run()
'''


class Session:
    """A server process spoken to in JSON-RPC lines; stderr is collected on a thread."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir())
        self.stderr: list[str] = []
        self._next_id = 0
        self.cpu_at_list = float("nan")
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr
        for line in self.proc.stderr:
            self.stderr.append(line)

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self._next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self._next_id, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("server exited: " + "".join(self.stderr[-20:]))
            reply: dict[str, Any] = json.loads(line)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply

    def notify(self, method: str) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}) + "\n")
        self.proc.stdin.flush()

    def start(self) -> float:
        """initialize + initialized + tools/list; seconds from spawn to the tools/list reply."""
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}})
        self.notify("notifications/initialized")
        tools = self.request("tools/list", {})
        elapsed = time.perf_counter() - self.started
        self.cpu_at_list = self.cpu_seconds()
        assert tools["result"]["tools"]
        return elapsed

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server process has used so far; NaN off Linux."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("tools/call", {"name": tool, "arguments": arguments})["result"]
        if result.get("isError"):
            raise RuntimeError(f"{tool}: {result['content'][0]['text']}")
        return result

    def rss_mb(self) -> float:
        """Resident memory of the server process in MB; NaN off Linux."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return float("nan")
        kilobytes = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        return kilobytes / 1024

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def rag_env(config: Path, preload: bool) -> dict[str, str]:
    return {**os.environ, "RAG_HOME": str(HOME), "RAG_CONFIG": str(config),
            "RAG_MCP_PRELOAD": "1" if preload else "0", "RAG_LOG_LEVEL": "INFO"}


def bench_startup(runs: int, config: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        minimal = Path(tmp) / "minimal_server.py"
        minimal.write_text(MINIMAL_SERVER)
        variants = {
            "minimal MCPServer, 1 tool": ([sys.executable, str(minimal)], dict(os.environ)),
            "rag mcp": ([str(BIN / "rag"), "mcp"], rag_env(config, preload=False)),
            "python -m rag.mcp_server": ([sys.executable, "-m", "rag.mcp_server"], rag_env(config, False)),
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        for run in range(runs + 1):  # run 0 warms the disk cache and is not counted
            order = list(variants)
            random.Random(run).shuffle(order)
            for name in order:
                command, env = variants[name]
                session = Session(command, env)
                elapsed = session.start()
                session.close()
                if run:
                    times[name].append(elapsed)
                    cpu[name].append(session.cpu_at_list)
    reference = statistics.median(times["minimal MCPServer, 1 tool"])
    cpu_reference = statistics.median(cpu["minimal MCPServer, 1 tool"])
    print(f"\nStart-up: spawn → tools/list answered, median of {runs} (min-max); and the server's CPU time")
    for name, values in times.items():
        median, cpu_median = statistics.median(values), statistics.median(cpu[name])
        print(f"  {name:<28} {median * 1000:7.0f} ms  ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"
              f"  {median / reference:5.2f} x minimal   CPU {cpu_median * 1000:5.0f} ms"
              f"  {cpu_median / cpu_reference:5.2f} x minimal")


def build_corpus(chunks: int) -> None:
    """Synthetic sources through rag.upsert_source / replace_files / store_embeddings, reused if present."""
    import numpy as np
    from psycopg.types.json import Jsonb

    from rag import db
    from rag.config import DatabaseConfig

    os.environ["RAG_HOME"] = str(HOME)
    target = db.resolve_target(DatabaseConfig())
    db.install_schema(target)
    with db.connect(target) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM rag.chunks) AS chunks,"
            " (SELECT count(*) FROM rag.embeddings WHERE model = %s) AS vectors,"
            " (SELECT count(*) FROM rag.sources WHERE config->>'generator' = %s) AS sources",
            (MODEL, GENERATOR)).fetchone()
        if row == {"chunks": chunks, "vectors": chunks, "sources": 2}:
            print(f"corpus of {chunks:,} chunks reused from {HOME}", file=sys.stderr)
            return
        conn.execute("DROP SCHEMA rag CASCADE")
        db.install_schema(target)
        rng = np.random.default_rng(chunks)
        syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
        words = sorted({"".join(rng.choice(syllables, int(rng.integers(1, 4)))) for _ in range(6000)})
        weights = 1.0 / np.arange(1, len(words) + 1) ** 1.1
        weights /= weights.sum()
        centres = rng.normal(size=(200, DIMS))
        started, stored = time.perf_counter(), 0
        for source in ("app", "docs"):
            source_id = conn.execute(
                "SELECT rag.upsert_source(%s, 'local', %s, NULL, %s) AS id",
                (source, f"/bench/{source}", Jsonb({"generator": GENERATOR}))).fetchone()["id"]  # type: ignore[index]
            budget = chunks // 2 if source == "app" else chunks - chunks // 2
            number = 0
            while budget > 0:
                files: list[dict[str, Any]] = []
                for _ in range(200):
                    if budget <= 0:
                        break
                    count = min(budget, int(rng.integers(1, 9)))
                    budget -= count
                    number += 1
                    path = f"{words[number % 97]}/{source}_{number}.py"
                    texts: list[str] = []
                    entries: list[dict[str, Any]] = []
                    line = 1
                    for _ in range(count):
                        lines = [" ".join(rng.choice(words, int(rng.integers(4, 12)), p=weights))
                                 for _ in range(int(rng.integers(8, 30)))]
                        text = "\n".join(lines)
                        texts.append(text)
                        entries.append({"content": text, "contentHash": hashlib.sha256(text.encode()).hexdigest(),
                                        "metadata": {"path": path, "sourceType": "code", "language": "python",
                                                     "startLine": line, "endLine": line + len(lines) - 1}})
                        line += len(lines)
                    content = "\n".join(texts) + "\n"
                    files.append({"path": path, "size": len(content), "mtimeNs": 0,
                                  "sha256": hashlib.sha256(content.encode()).hexdigest(), "sourceType": "code",
                                  "language": "python", "content": content, "error": None, "chunks": entries})
                conn.execute("SELECT rag.replace_files(%s, %s)", (source_id, Jsonb(files)))
                hashes = [c["contentHash"] for f in files for c in f["chunks"]]
                vectors = centres[rng.integers(len(centres), size=len(hashes))] + rng.normal(
                    size=(len(hashes), DIMS)) * 0.05
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                conn.execute("SELECT rag.store_embeddings(%s, %s, %s, %s)",
                             (MODEL, DIMS, hashes, ["[" + ",".join(f"{x:.6f}" for x in v) + "]"
                                                    for v in vectors.tolist()]))
                stored += len(hashes)
                print(f"\rcorpus: {stored:,}/{chunks:,} chunks, {time.perf_counter() - started:.0f} s",
                      end="", file=sys.stderr)
        conn.execute("SELECT rag.ensure_vector_index(%s)", (MODEL,))
        conn.execute("SELECT rag.ensure_heads_index()")
        conn.execute("VACUUM ANALYZE")
        print(f"\ncorpus of {chunks:,} chunks built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        global CORPUS_WORDS
        CORPUS_WORDS = words


CORPUS_WORDS: list[str] = []


def corpus_words() -> list[str]:
    if CORPUS_WORDS:
        return CORPUS_WORDS
    from rag import db
    from rag.config import DatabaseConfig

    with db.connect(db.resolve_target(DatabaseConfig())) as conn:
        rows = conn.execute("SELECT term FROM rag.term_stats ORDER BY df DESC LIMIT 3000").fetchall()
    return [r["term"] for r in rows]


def first_search(bin_dir: Path, config: Path, query: str) -> tuple[float, float]:
    """A new ``rag mcp`` (no preload): seconds of its first search, and its resident MB after it."""
    session = Session([str(bin_dir / "rag"), "mcp"], rag_env(config, preload=False))
    session.start()
    started = time.perf_counter()
    first = session.call("search", {"query": query})
    seconds = time.perf_counter() - started
    assert first["structuredContent"]["results"], "no results"
    rss = session.rss_mb()
    session.close()
    return seconds, rss


def bench_first_search(config: Path, compare: Path | None, runs: int, query: Any) -> None:
    torch_config = config.with_name("bench-mcp-torch.yaml")
    torch_config.write_text("embeddings: {provider: local, local: {runtime: sentence-transformers}}\n")
    builds = {"this build (ONNX Runtime)": (BIN, config),
              "this build, torch path (sentence-transformers)": (BIN, torch_config),
              **({f"compare ({compare})": (compare, config)} if compare else {})}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in builds}
    for _ in range(runs):
        for name, (bin_dir, build_config) in builds.items():
            figures[name].append(first_search(bin_dir, build_config, query()))
    print(f"\nFirst search after start, no preload, and resident memory after it; median of {runs}, interleaved"
          f" (load average {' '.join(f'{v:.2f}' for v in os.getloadavg())})")
    for name, values in figures.items():
        seconds = statistics.median(v[0] for v in values)
        rss = statistics.median(v[1] for v in values)
        print(f"  {name:<48} first search {seconds * 1000:6.0f} ms ({', '.join(f'{v[0]:.2f}' for v in values)} s)"
              f"   RSS {rss:5.0f} MB  (goal: first search <= 1500 ms)")


def bench_search(chunks: int, searches: int, config: Path, compare: Path | None = None, cold_runs: int = 3) -> None:
    build_corpus(chunks)
    words = corpus_words()
    rng = random.Random(time.time_ns())  # new texts every run: stored query vectors are not reused

    def query() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 4))) + f" {rng.choice(words)}"

    bench_first_search(config, compare, cold_runs, query)
    session = Session([str(BIN / "rag"), "mcp"], rag_env(config, preload=False))
    session.start()
    started = time.perf_counter()
    first = session.call("search", {"query": query()})
    cold = time.perf_counter() - started
    assert first["structuredContent"]["results"], "no results"
    rounds = []
    for _ in range(searches):
        started = time.perf_counter()
        session.call("search", {"query": query()})
        rounds.append(time.perf_counter() - started)
    session.close()

    session = Session([str(BIN / "rag"), "mcp"], rag_env(config, preload=True))
    listed = session.start()
    deadline = time.monotonic() + 300
    while not any("warm-up" in line for line in session.stderr) and time.monotonic() < deadline:
        time.sleep(0.05)
    warm_after = time.perf_counter() - session.started - listed
    started = time.perf_counter()
    session.call("search", {"query": query()})
    warm = time.perf_counter() - started
    session.close()

    rounds.sort()
    p50 = statistics.median(rounds)
    p95 = rounds[min(len(rounds) - 1, round(0.95 * len(rounds)) - 1)]
    print(f"\nSearch over {chunks:,} chunks with the local model (client round trip)")
    print(f"  first search, no preload (loads the model): {cold * 1000:7.0f} ms")
    print(f"  first search after the background warm-up ({warm_after:.1f} s after tools/list): "
          f"{warm * 1000:7.0f} ms")
    print(f"  later searches, {searches} new queries: p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
          f"max {rounds[-1] * 1000:.0f} ms  (goal: p95 <= 200 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--skip-startup", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    parser.add_argument("--compare-bin", type=Path, help="bin/ of another install to compare first searches with")
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--load", type=int, default=0, help="busy processes running meanwhile")
    args = parser.parse_args()
    HOME.mkdir(parents=True, exist_ok=True)
    config = HOME / "bench-mcp.yaml"
    config.write_text("embeddings: {provider: local}\n")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs", file=sys.stderr)
    with background_load(args.load):
        if not args.skip_startup:
            bench_startup(args.runs, config)
            print(f"  ({load_line(args.load)})")
        if not args.skip_search:
            bench_search(args.chunks, args.searches, config, args.compare_bin, args.cold_runs)
            print(f"  ({load_line(args.load)})")


if __name__ == "__main__":
    main()

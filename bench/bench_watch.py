"""`rag watch` benchmark: how soon an edit is searchable, bursts, idle cost, memory.

Runs the real ``rag watch --json`` as a subprocess over a synthetic source of
``--files`` Python files in ``.bench/watch-src``, with its own embedded database
in ``.bench/home-watch`` (keyword-only; ``--model`` uses the default local model).
"Searchable" is measured from this process: after a file is written, a
``rag.bm25_search`` for a word only that file holds is repeated every 10 ms until
it answers (for a deletion: until it no longer does); with ``--model`` the chunk's
vector must be stored too, so the figures include embedding.

- edit → searchable: ``--edits`` edits of one file, p50 / p95 (goal ≤ 1 s p95 keyword-only)
- bursts of 200 and 1,000 new files: until the last one is searchable (goal 1,000 ≤ 10 s)
- one file deleted, one new file
- idle CPU of the watcher over ``--idle`` s (goal ≤ 1% of a core), its resident memory
- memory over ``--syncs`` syncs of one edited file: RSS after the first tenth and at the end

    .venv/bin/python bench/bench_watch.py [--files 2000] [--edits 20] [--idle 30] [--syncs 1000] [--model]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import speed_line

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TICKS = os.sysconf("SC_CLK_TCK")


def rag(env: dict[str, str], *args: str) -> str:
    return subprocess.run([str(BIN / "rag"), *args], env=env, check=True, capture_output=True, text=True).stdout


def module_text(i: int, word: str) -> str:
    return f'"""Module {i}."""\n\n\ndef handler_{i}(request):\n    """Handle {word} requests."""\n    return {i}\n'


class WatchProcess:
    def __init__(self, env: dict[str, str], config: Path, src: Path) -> None:
        self.proc = subprocess.Popen([str(BIN / "rag"), "--config", str(config), "watch", "--path", str(src),
                                      "--name", "bench", "--json"], stdout=subprocess.PIPE, text=True, env=env)
        self.lines: Queue[dict[str, Any]] = Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def next_sync(self, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            event = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            if event["event"] == "sync":
                return event
            print(f"  ({event['event']}: {event.get('message')})")

    def drain(self) -> None:
        try:
            while True:
                self.lines.get_nowait()
        except Empty:
            pass

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> float:
        started = time.monotonic()
        self.proc.terminate()
        self.proc.wait(10)
        return time.monotonic() - started


EMBEDDED = False  # --model: searchable means found by keywords and its vector stored too


def found(conn: psycopg.Connection[Any], word: str) -> bool:
    """Whether a keyword search for ``word`` finds a chunk that holds it (with its vector, if EMBEDDED)."""
    vector = ("AND EXISTS (SELECT 1 FROM rag.chunks c JOIN rag.embeddings e ON e.content_hash = c.content_hash "
              "WHERE c.id = b.chunk_id)") if EMBEDDED else ""
    return conn.execute("SELECT count(*) FROM rag.bm25_search(%s, 3) b, rag.read_chunk(b.chunk_id, 0) r "
                        "WHERE strpos(r.content, %s) > 0 " + vector, (word, word)).fetchone()[0] > 0


def word(prefix: str, n: int) -> str:
    """A word of letters only (the tokenizer splits at digits), unique per n."""
    return prefix + "".join("abcdefghij"[int(d)] for d in str(n)) + "q"


def until(condition: Any, timeout: float = 60) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            raise SystemExit(f"not reached within {timeout} s")
        time.sleep(0.01)
    return time.monotonic() - started


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--idle", type=float, default=30)
    parser.add_argument("--syncs", type=int, default=1000)
    parser.add_argument("--model", action="store_true", help="embed with the default local model")
    args = parser.parse_args()
    global EMBEDDED
    EMBEDDED = args.model

    print(speed_line())
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} "
          f"on {os.cpu_count()} cores")
    bench = ROOT / ".bench"
    home, src = bench / "home-watch", bench / "watch-src"
    env = {**os.environ, "RAG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("RAG_DATABASE_URL", None)
    config = bench / "watch.config.yaml"
    bench.mkdir(exist_ok=True)
    config.write_text("embeddings: {provider: %s}\n" % ("local" if args.model else "none"))
    shutil.rmtree(src, ignore_errors=True)
    (src / "app").mkdir(parents=True)
    for i in range(args.files):
        (src / "app" / f"m{i}.py").write_text(module_text(i, "ordinary"))
    rag(env, "--config", str(config), "init")
    url = rag(env, "db", "url").strip()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT rag.remove_source('bench') FROM rag.list_sources() WHERE name = 'bench'")
    mode = "local model" if args.model else "keyword-only"
    print(f"source: {args.files:,} files; {mode}")

    watch = WatchProcess(env, config, src)
    first = watch.next_sync(600)
    print(f"first sync (whole source): {first['files']:,} files, +{first['chunksAdded']:,} chunks, "
          f"{first['seconds']:.1f} s")
    conn = psycopg.connect(url, autocommit=True)
    edited = src / "app" / "m0.py"

    latencies = []
    for n in range(args.edits):
        token = word("editword", n)
        time.sleep(0.3)
        edited.write_text(module_text(0, token))
        latencies.append(until(lambda w=token: found(conn, w)))
    watch.drain()
    print(f"edit -> searchable ({args.edits} edits of one file): p50 {statistics.median(latencies):.2f} s, "
          f"p95 {p95(latencies):.2f} s, max {max(latencies):.2f} s")

    for size in (200, 1000):
        folder = src / f"burst{size}"
        folder.mkdir()
        started = time.monotonic()
        for i in range(size):
            (folder / f"b{i}.py").write_text(module_text(i, word(f"burst{word('', size)}", i)))
        written = time.monotonic() - started
        first, last = word(f"burst{word('', size)}", 0), word(f"burst{word('', size)}", size - 1)
        until(lambda a=first, b=last: found(conn, a) and found(conn, b), 120)
        total = time.monotonic() - started
        syncs = []
        while True:
            try:
                syncs.append(watch.lines.get(timeout=0.5))
            except Empty:
                break
        print(f"burst of {size:,} new files: all searchable {total:.2f} s after the first write "
              f"(writing took {written:.2f} s; {len([s for s in syncs if s['event'] == 'sync'])} sync runs)")

    gone = src / "burst200" / "b7.py"
    deleted = word(f"burst{word('', 200)}", 7)
    assert found(conn, deleted)
    gone.unlink()
    print(f"file deleted -> gone from search: {until(lambda: not found(conn, deleted)):.2f} s")
    (src / "app" / "fresh.py").write_text(module_text(9, "freshfileword"))
    print(f"new file -> searchable: {until(lambda: found(conn, 'freshfileword')):.2f} s")
    watch.drain()

    time.sleep(2)
    cpu0, t0 = watch.cpu_seconds(), time.monotonic()
    time.sleep(args.idle)
    idle = (watch.cpu_seconds() - cpu0) / (time.monotonic() - t0)
    print(f"idle CPU over {args.idle:.0f} s: {100 * idle:.2f}% of a core; RSS {watch.rss_mb():.0f} MB")

    rss = []
    started = time.monotonic()
    for n in range(args.syncs):
        edited.write_text(module_text(0, word("syncword", n)))
        watch.next_sync()
        if n + 1 in (args.syncs // 10, args.syncs):
            rss.append(watch.rss_mb())
    print(f"{args.syncs:,} syncs of one edited file in {time.monotonic() - started:.0f} s: RSS "
          f"{rss[0]:.0f} MB after {args.syncs // 10:,}, {rss[-1]:.0f} MB after {args.syncs:,}")
    print(f"stopped by SIGTERM in {watch.stop():.2f} s")
    conn.close()
    print(f"load: {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")


if __name__ == "__main__":
    main()

"""A fixed CPU-bound yardstick printed with the benchmarks, and a background load generator.

The machines these run on change speed from hour to hour (a 2x spread has been
seen); printing the same small workload next to every figure lets runs made at
different times be compared. ``background_load(n)`` keeps ``n`` processes spinning on
the CPU while a benchmark measures (``--load N`` of bench_mcp.py and bench_cold.py):
start-up as a user on a busy laptop sees it.
"""

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager


def _loop_seconds() -> float:
    started = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - started


def speed_line() -> str:
    """One line: the median of 3 timings of a 10M-addition Python loop."""
    seconds = statistics.median(_loop_seconds() for _ in range(3))
    return f"machine yardstick: a 10M-addition Python loop takes {seconds:.2f} s (median of 3; lower is faster)"


@contextmanager
def background_load(processes: int) -> Iterator[None]:
    """``processes`` busy loops in processes of their own for the duration; 0: none."""
    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        if spinning:
            time.sleep(1.0)  # let the load average and the scheduler see them
        yield
    finally:
        for proc in spinning:
            proc.kill()
            proc.wait()


def load_line(processes: int) -> str:
    """The load a figure was measured under."""
    return (f"background load: {processes} busy process(es) on {os.cpu_count()} CPUs; "
            f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")

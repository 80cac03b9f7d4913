"""A fixed CPU-bound yardstick printed with the benchmarks.

The machines these run on change speed from hour to hour (a 2x spread has been
seen); printing the same small workload next to every figure lets runs made at
different times be compared.
"""

import statistics
import time


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

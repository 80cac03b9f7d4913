"""`make bench-profile` wraps the index run's phase functions by name: a rename must fail here,
not in the next session's benchmark."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import bench_profile


def test_every_profiled_phase_function_exists_and_is_restored() -> None:
    import rag.dispatcher

    original = rag.dispatcher.extract_graph
    with bench_profile.patched(bench_profile.Stopwatch()):
        assert rag.dispatcher.extract_graph is not original
    assert rag.dispatcher.extract_graph is original

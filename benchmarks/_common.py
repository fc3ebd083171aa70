"""What several benchmark scripts share: the best time of repeated calls and a printed cProfile table.

Scripts put the repository root on sys.path first, then `from benchmarks._common import ...`.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def best_of(fn: Callable[[], T], repeats: int) -> tuple[float, T]:
    """The best wall time of `repeats` calls of `fn` after one warm-up call, and the last call's value."""
    value = fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - started)
    return best, value


def print_profile(profiler: cProfile.Profile, limit: int) -> None:
    """Print the `limit` functions of most own time (tottime) in `profiler`, without the blank lines."""
    buffer = io.StringIO()
    pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(limit)
    print("\n".join(line for line in buffer.getvalue().splitlines() if line.strip()))

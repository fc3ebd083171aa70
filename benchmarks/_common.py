"""What several benchmark scripts share: the environment of a child `manage.py`, the best time of
repeated calls and a printed cProfile table.

Scripts put the repository root on sys.path first, then `from benchmarks._common import ...`.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: The settings a benchmark gives its children itself; the caller's own values are never passed on.
SETTINGS_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL")


def child_env(database_url: str, data_dir: Path, **settings: str) -> dict[str, str]:
    """This process's environment for a child `manage.py`: without SETTINGS_VARIABLES, on `database_url`
    and `data_dir`, logging errors only, then `settings`."""
    env = {key: value for key, value in os.environ.items() if key not in SETTINGS_VARIABLES}
    env.update(
        DJANGO_SETTINGS_MODULE="labeling.settings",
        DATABASE_URL=database_url,
        DATA_DIR=str(data_dir),
        LOG_LEVEL="ERROR",
        **settings,
    )
    return env


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

"""What several benchmark scripts share: the PostgreSQL server and a database of their own on it (created
fresh, refused while another run uses it), the environment of a child `manage.py` (with the project's
modules compiled, as an installed or once-run checkout has them), the best time of repeated calls and a
printed cProfile table.

Scripts put the repository root on sys.path first, then `from benchmarks._common import ...`.
"""

from __future__ import annotations

import compileall
import cProfile
import functools
import io
import os
import pstats
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: The PostgreSQL server of every benchmark (BENCH_PG: another), as user postgres with trust auth.
SERVER = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")


def admin(*statements: str) -> None:
    """Run `statements` on the server's `postgres` database, each in autocommit (as CREATE DATABASE asks)."""
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def fresh_database(name: str) -> None:
    """`name` dropped and created empty; refused (SystemExit, nothing dropped) while another session is
    connected to it: another benchmark run given the same database (BENCH_DB, --database), whose
    measurement a DROP … WITH (FORCE) would break by ending its connections."""
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        pids = [row[0] for row in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [name]
        )]  # fmt: skip
        if pids:
            raise SystemExit(
                f"database {name} is in use by {len(pids)} other session(s) (pids "
                f"{', '.join(map(str, pids))}): another benchmark run on it? Give this one another "
                "database (BENCH_DB) or end that run."
            )
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")


def service_up(host: str, port: int) -> bool:
    """Whether something accepts a TCP connection on `host`:`port` within a second (a benchmark's Redis;
    the test suite's, whose production-setup tests need it)."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def drop_database(name: str) -> None:
    """The run's own database dropped at its end (WITH (FORCE): its server's connections may still be
    closing)."""
    admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


#: The settings a benchmark gives its children itself; the caller's own values are never passed on.
SETTINGS_VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL")


#: The project's packages, which a child `manage.py` imports.
PACKAGES = ("labeling", "pooling", "judgements", "evaluation", "online", "demo")


@functools.cache
def compile_project() -> None:
    """Byte-compile the project's modules once (not timed). A checkout that has run once, or an install,
    has them compiled; an environment that sets PYTHONDONTWRITEBYTECODE (this machine's does) never
    writes them, so every timed child would compile the project from source, 0.1 to 0.2 s of CPU that is
    no part of the work measured. Children still read what is compiled."""
    root = Path(__file__).resolve().parent.parent
    for package in PACKAGES:
        compileall.compile_dir(root / package, quiet=1)


def child_env(database_url: str, data_dir: Path, **settings: str) -> dict[str, str]:
    """This process's environment for a child `manage.py`: without SETTINGS_VARIABLES, on `database_url`
    and `data_dir`, logging errors only, then `settings`; the project compiled first (`compile_project`)."""
    compile_project()
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

"""`manage.py` run as a user runs it: in a process of its own, on the embedded setup (an SQLite database and
files under a folder of the test's), none of the test run's PostgreSQL, Redis or settings. For what only a
real process shows: exit codes, what reaches stderr, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The test run's own services and settings, which the process must not inherit.
NOT_INHERITED = {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DJANGO_SETTINGS_MODULE"}


def manage_in_a_process(
    data_dir: Path, *, timeout: int = 300
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """A function running `manage.py ARGS...` in a new process whose data (the SQLite database
    `data_dir/db.sqlite3`, media) live in `data_dir`; it returns the finished process, output as text."""
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    env["DATA_DIR"] = str(data_dir)

    def manage(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return manage

"""Benchmark: how long a management command takes to start, against Django's own start.

Every command that runs the system checks (all of ours but `evaluate`) loads the URLconf, and with it every
view and API module of every app; a worker and the first request of a web process load the same. What those
modules import at their top is paid by every one of them, whether it draws a chart or fits a classifier or
not. Timed, in fresh processes on the embedded setup (SQLite in a temporary folder, no broker):

- the anchor: `python -c "import django; django.setup()"` with the project's settings (the apps' models,
  nothing else);
- `manage.py check`: the same plus the URLconf, the views and the checks (what a command pays before its
  own work);

REPEATS (7) alternating runs of each, the median reported, with the heavy libraries (scipy.stats,
scikit-learn, matplotlib, pandas) that `check` has loaded when it ends. The last line is
`ratio django.setup/check: X.XX` (higher is better; 1.00 would be a URLconf that costs nothing).

Usage: .venv/bin/python benchmarks/command_startup.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._common import SETTINGS_VARIABLES  # noqa: E402

HEAVY = ("scipy.stats", "sklearn", "matplotlib", "pandas")
ANCHOR = "import django; django.setup()"
#: `manage.py check`, then the heavy libraries it has loaded (its last line).
CHECK = (
    "import runpy, sys\n"
    "sys.argv = ['manage.py', 'check']\n"
    "runpy.run_path('manage.py', run_name='__main__')\n"
    f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules) or '(none)')\n"
)


def timed(code: str, env: dict[str, str]) -> tuple[float, str]:
    """Seconds `code` took in a fresh process, and the last line it printed."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return time.perf_counter() - start, (done.stdout.splitlines() or [""])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
        env.update(DATA_DIR=data, DJANGO_SETTINGS_MODULE="labeling.settings")
        timed(ANCHOR, env)  # warm the file cache and the .pyc files, not timed
        timed(CHECK, env)
        anchor, check = [], []
        for _ in range(args.repeats):
            anchor.append(timed(ANCHOR, env)[0])
            seconds, loaded = timed(CHECK, env)
            check.append(seconds)
    a, c = statistics.median(anchor), statistics.median(check)
    print(f"django.setup():    median {a:.2f} s over {args.repeats} runs")
    print(f"manage.py check:   median {c:.2f} s over {args.repeats} runs")
    print(f"heavy libraries loaded by check: {loaded}")
    print(f"ratio django.setup/check: {a / c:.2f}")


if __name__ == "__main__":
    main()

"""``manage.py evaluate`` on files starts with what it needs only: no pathlib (only -o writes files), no
thread pool for a file of one chunk, no numpy.typing (annotations only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "trec_eval"
NOT_NEEDED = ("pathlib", "concurrent.futures", "numpy.typing", "django")


def test_it_evaluates_files_without_loading_pathlib_a_thread_pool_or_django() -> None:
    code = (
        "import runpy, sys\n"
        "sys.argv = ['manage.py', 'evaluate', sys.argv[1], sys.argv[2], '-q', '-m', 'all_trec']\n"
        "try:\n"
        "    runpy.run_path('manage.py', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        f"sys.stderr.write(' '.join(m for m in {NOT_NEEDED!r} if m in sys.modules) + '|\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(DATA / "qrels.txt"), str(DATA / "run.txt")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.startswith("num_ret               \t301\t9\n")  # it ran
    assert done.stderr.splitlines()[-1] == "|"

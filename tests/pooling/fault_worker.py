"""A real Celery worker (prefork, one process) for test_faults, with hold points the test can arm.

`python -m tests.pooling.fault_worker QUEUE` with FAULT_DIR set: when the work of a job reaches a point
(`import`: the run's rows are written, not committed; `build`: the pool's items are inserted, not
committed; `release`: the release's work directory is open and its first item read) and the file
`FAULT_DIR/hold-<point>` exists, the process takes that file away, writes its pid to
`FAULT_DIR/reached-<point>` and waits there, so that the test can kill it mid-job. The next attempt finds
no hold file and runs through. With FAULT_SPLIT_RELEASES set, every release is split over two processes
(`release_halves.MIN_ROWS` 0) and each split writes `FAULT_DIR/split-<first qid of the second process>`.
Nothing else differs from `celery -A labeling worker`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")
django.setup()

from judgements import release_files, release_halves  # noqa: E402
from labeling.celery import app  # noqa: E402
from pooling import pool_build, run_ranking  # noqa: E402

FAULT_DIR = Path(os.environ["FAULT_DIR"])


def hold(point: str) -> None:
    try:
        (FAULT_DIR / f"hold-{point}").unlink()
    except FileNotFoundError:
        return
    (FAULT_DIR / f"reached-{point}").write_text(str(os.getpid()))
    time.sleep(60)  # killed here


real_write_rows = run_ranking.write_rows
real_add_items = pool_build._add_items
real_stream = {"stream_items": release_files.stream_items}


def write_rows(**kwargs: Any) -> None:
    real_write_rows(**kwargs)
    hold("import")


def add_items(**kwargs: Any) -> Any:
    result = real_add_items(**kwargs)
    hold("build")
    return result


def held(name: str) -> Any:
    def stream(**kwargs: Any) -> Iterator[Any]:
        for number, item in enumerate(real_stream[name](**kwargs)):
            if number == 1:
                hold("release")
            yield item

    return stream


run_ranking.write_rows = write_rows
pool_build._add_items = add_items
release_files.stream_items = held("stream_items")

if os.environ.get("FAULT_SPLIT_RELEASES"):
    release_halves.MIN_ROWS = 0
    real_append = release_halves.SecondHalf.append

    def append(self: release_halves.SecondHalf, files: Any, tally: Any) -> None:
        real_append(self, files, tally)
        (FAULT_DIR / f"split-{self.first[1]}").write_text(str(os.getpid()))

    release_halves.SecondHalf.append = append  # type: ignore[method-assign]  # a fault injected into the class for this worker

if __name__ == "__main__":
    queue = sys.argv[1]
    app.worker_main(
        [
            "worker", "--pool=prefork", "--concurrency=1", f"--queues={queue}", "--loglevel=WARNING",
            "--without-gossip", "--without-mingle", "--without-heartbeat", f"--hostname={queue}@%h",
        ]
    )  # fmt: skip

"""A large release written by two processes: the pool's topics split at a qid, the topics from it on written
by a forked child that reads the parent's snapshot of the database (`pg_export_snapshot`), into files of
its own that the parent appends to its files once its own topics are written.

Why: a release's pass costs about as much Python CPU (aggregating and encoding every row,
`release_files`) as the server's reading of the rows, and one Python process uses one core. Two
processes, each with its own backend, share the work over two cores. On a machine of two cores that is
then bound by its CPU as a whole, so the gain is modest: benchmarks/release.py's ratio to COPY went from
1.65-1.66 (one process) to 1.45-1.56 (two), in single runs on 2026-12-03.

The bytes are those one process writes: every topic is whole on one side of the split, each side writes
its topics in qrels order, the second side's topics come after the first's in byte order, and each of
its files follows the parent's file of the same name. Both read one snapshot, so the release sees the
database at one moment, as a single statement would.

When: PostgreSQL with psycopg 3, `os.fork`, `settings.RELEASE_PROCESSES` of 2 or more, the release's
transaction the outermost one (`one_snapshot`: a snapshot is only set on a transaction that has run
nothing yet, and an exported snapshot holds only committed rows: an enclosing transaction's own changes
would be missing from the child's half), and at least MIN_ROWS items and judgements. Otherwise the
parent writes every topic (`OneProcess`)."""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import shutil
import signal
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, connections, transaction

from pooling.models import Pool, PoolItem, Topic

#: Below this many items and judgements one process writes the release: a fork, a connection and a second
#: query cost more than they save.
MIN_ROWS = 100_000
#: The share of the rows (items and judgements) the child writes: a little under half, since it starts
#: a moment later (its own connection, the snapshot) and then reads what the manifest says of the pool.
CHILD_SHARE = 0.47
#: Where in the release's work directory the child writes (removed before the files are described).
PART = ".second"

# The connections a child inherited from its parent: kept referenced and never closed, since their sockets
# are the parent's (closing one would end the parent's session).
_inherited: list[Any] = []


class OneProcess:
    """No second process: the parent writes every topic."""

    first: tuple[str | None, str | None] | None = None  # the qids the parent writes: all
    items: int | None = None  # how many items that is (None: count them)

    def append(self, files: dict[str, Any], tally: Any) -> None:
        """Nothing to add to the parent's files."""


class SecondHalf:
    """The child writing the topics from `split` on into `directory`."""

    def __init__(self, pid: int, split: str, directory: Path, items: int) -> None:
        self.pid: int | None = pid
        self.first = (None, split)
        self.items = items
        self.directory = directory

    def append(self, files: dict[str, Any], tally: Any) -> None:
        """Wait for the child; add its counts to `tally` and its files' bytes to `files` (the parent's
        `hashed_files.HashedFile`s, by name, still open)."""
        status = self._wait()
        error = self.directory / "error.txt"
        if status != 0 or not (self.directory / "tally.pickle").exists():
            detail = error.read_text().strip().splitlines()[-1:] if error.exists() else []
            raise RuntimeError(
                f"the second process of the release failed (status {status})"
                + (f": {detail[0]}" if detail else "")
            )
        # The child's own file, written by this release's code a moment ago in the release's own directory.
        tally.add(pickle.loads((self.directory / "tally.pickle").read_bytes()))  # noqa: S301
        for name, file in files.items():
            file.append_file(self.directory / name)

    def _wait(self) -> int:
        pid, self.pid = self.pid, None
        if pid is None:
            return -1
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    def stop(self) -> None:
        """End the child if it still runs (the parent failed first), and remove what it wrote."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._wait()
        shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def second_half(work: Path, *, pool: Pool, write: Callable[..., Any]) -> Iterator[OneProcess | SecondHalf]:
    """First in the release's transaction: put it on one snapshot (`one_snapshot`), then, if the release is
    split (see the module), start the child that writes the pool's later topics with `write(directory,
    tally=..., qids=(split, None))` (`release_files.write_files`, then the manifest's reads); the parent
    writes the topics in `.first` and, its files still open, calls `.append`. The child is ended and its
    directory removed on leaving."""
    split = _split(pool) if one_snapshot() else None
    if split is None:
        yield OneProcess()
        return
    qid, first_items = split
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_export_snapshot()")
        snapshot = cursor.fetchone()[0]
    directory = work / PART
    directory.mkdir()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        _die_with(parent)
        _child(directory, snapshot=snapshot, qids=(qid, None), write=write)
    half = SecondHalf(pid, qid, directory, first_items)
    try:
        yield half
    finally:
        half.stop()


def one_snapshot() -> bool:
    """Called first in a release's transaction: make it read one snapshot (REPEATABLE READ) if it is the
    outermost transaction on PostgreSQL, so that its pass, the manifest's reads and a second process's
    (`second_half`, which exports it) see the database at one moment; whether it did. Inside a caller's
    transaction (READ COMMITTED, a snapshot a statement) or on SQLite nothing is changed: False."""
    outermost = connection.in_atomic_block and connection.commit_on_exit and not connection.savepoint_ids
    if connection.vendor != "postgresql" or not outermost:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    return True


def _split(pool: Pool) -> tuple[str, int] | None:
    """Where to split the pool's topics (the first qid the child writes) and how many items the parent
    writes; None for one process."""
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if not (is_psycopg3 and hasattr(os, "fork") and settings.RELEASE_PROCESSES >= 2):
        return None
    with connection.cursor() as cursor:
        # The rows of each topic (its items and their judgements, as tallied), in the release's qid order.
        cursor.execute(
            f"""
            SELECT t.qid, COUNT(*), SUM(1 + i.num_judgements)
            FROM {PoolItem._meta.db_table} i JOIN {Topic._meta.db_table} t ON t.id = i.topic_id
            WHERE i.pool_id = %s AND i.selected
            GROUP BY t.qid ORDER BY t.qid COLLATE "C"
            """,
            [pool.pk],
        )  # fmt: skip
        topics = cursor.fetchall()
    total = sum(int(rows) for _, _, rows in topics)
    if total < MIN_ROWS or len(topics) < 2:
        return None
    items = rows_so_far = 0
    for index, (qid, topic_items, rows) in enumerate(topics):
        if index and rows_so_far >= total * (1 - CHILD_SHARE):
            return qid, items
        items += int(topic_items)
        rows_so_far += int(rows)
    return None


def _die_with(parent: int) -> None:
    """Have the kernel end this process when its parent ends (Linux's PR_SET_PDEATHSIG): a release's second
    process whose first was killed (a worker's child, by the OOM killer) has no one to write for, and
    would go on reading and writing for nothing. Elsewhere nothing is done."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(1)


def _child(directory: Path, *, snapshot: str, qids: tuple[str, None], write: Callable[..., Any]) -> None:
    """The forked child: on a connection of its own, in a transaction on the parent's snapshot, write the
    topics of `qids` and its counts (`tally.pickle`) into `directory`, or the error (`error.txt`); then
    leave at once (`os._exit`: nothing the parent owns is flushed or closed)."""
    from judgements.release_files import Tally

    status = 1
    try:
        if not re.fullmatch(r"[0-9A-F]+(-[0-9A-F]+)+", snapshot):
            raise ValueError(f"unexpected snapshot id {snapshot!r}")
        for old in connections.all(initialized_only=True):
            _inherited.append(old)
            connections[old.alias] = type(old)(old.settings_dict, old.alias)
        tally = Tally()
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
            write(directory, tally=tally, qids=qids)
        (directory / "tally.pickle").write_bytes(pickle.dumps(tally))
        status = 0
    except BaseException:
        with contextlib.suppress(BaseException):
            (directory / "error.txt").write_text(traceback.format_exc())
    finally:
        os._exit(status)

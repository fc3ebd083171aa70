"""PostgreSQL settings for the statements of one block (`local_settings`): for the set-based writers and
readers of every app (pool builds, release COPYs, the manifest's counts), which want more sort memory or
no JIT for one statement, and must not change how their caller's later queries run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from django.db import connection


@contextlib.contextmanager
def local_settings(cursor: Any, values: dict[str, str]) -> Iterator[None]:
    """PostgreSQL settings `values` for the statements run inside, as `SET LOCAL` (so they end with the
    transaction at the latest), and the previous values back when the block ends: inside an outer
    transaction a `SET LOCAL` would otherwise last until that one ends, changing how the caller's later
    queries run. On an error the transaction (or the savepoint of `transaction.atomic`) is rolled back,
    which restores them itself. Elsewhere than on PostgreSQL, nothing is set."""
    if connection.vendor != "postgresql":
        yield
        return
    names = list(values)
    cursor.execute("SELECT " + ", ".join(["current_setting(%s)"] * len(names)), names)
    previous = cursor.fetchone()
    cursor.execute(_set_config_sql(len(names)), [v for pair in values.items() for v in pair])
    yield
    restore = [v for pair in zip(names, previous, strict=True) for v in pair]
    cursor.execute(_set_config_sql(len(names)), restore)


def _set_config_sql(count: int) -> str:
    return "SELECT " + ", ".join(["set_config(%s, %s, true)"] * count)

"""Benchmark: the rater's key press late in a campaign against the same key press early in it.

The key press is one statement on PostgreSQL (`submission.submit_and_lease`): it stores the grade and
leases the rater's next item, walking the pool's blind order to the first item open for them. The items
before it that have every judgement they need (or every slot leased) stay before it, more and more of
them as the campaign goes on; the walk must not grow with them (`PoolItem.leasable` and its index).

Data (not timed): rater_load.py's campaign (its `load_data`) at 28 topics × 750 items (`--small`: 150),
J = 3, the default rubric, 32 raters — in a database of its own (`labeling_lease_late_<checkout>`, or
BENCH_DB), migrated and analysed. For each phase, a copy of it (CREATE DATABASE … TEMPLATE) in which the
first fraction F of each topic's items in blind order has all its judgements (their counters; then VACUUM
ANALYZE, as autovacuum would leave the table): F = 0 (early) and F = 0.9 (late).

Timed: in this process, through the service, each of the 32 raters leases an item, then presses a key
`--rounds` times in turn (default 20; `--small` 5): `submit_and_lease` with a grade, committed as the API's
request commits it, each call timed. The first round is a warm-up. Each phase runs three times, early and
late alternating, and the best median counts (the machine's noise is of the order of the effect).

Printed: the sizes, the early median (the anchor) and the late one (ours), with p90s, then last
`ratio late/early: X.XX` (target ≤ 1.1: a late key press costs what an early one does).

Usage: .venv/bin/python benchmarks/lease_late.py [--small] [--rounds N] [--keep]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import rater_load  # noqa: E402
from benchmarks._common import admin, drop_database  # noqa: E402

DATABASE = os.environ.get("BENCH_DB") or f"labeling_lease_late_{ROOT.name}".replace("-", "_")
COPY = f"{DATABASE}_phase"
LATE = 0.9
TARGET = 1.1


def use_database(name: str) -> None:
    """Point Django's connection at `name` (closed first, so that a template has no session)."""
    from django.db import connections

    connections["default"].close()
    connections["default"].settings_dict["NAME"] = name


def phase(fraction: float, rounds: int) -> list[float]:
    """Key press times (ms) on a fresh copy of the campaign with `fraction` of each topic's items done."""
    from django.contrib.auth.models import User
    from django.db import connection

    from judgements import leasing, submission

    use_database(COPY)  # (closing the connection to the campaign's database: it is the template)
    admin(f"DROP DATABASE IF EXISTS {COPY}", f"CREATE DATABASE {COPY} TEMPLATE {DATABASE}")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            UPDATE pooling_poolitem SET num_judgements = required_judgements
            WHERE id IN (SELECT id FROM (
                SELECT id, row_number() OVER (PARTITION BY topic_id ORDER BY blind_key) AS n,
                       count(*) OVER (PARTITION BY topic_id) AS size
                FROM pooling_poolitem) x
              WHERE n <= size * %s)
            """,
            [fraction],
        )  # fmt: skip
        cursor.execute("VACUUM ANALYZE pooling_poolitem")
    raters = list(User.objects.filter(username__startswith="rater").order_by("username"))
    held: dict[int, int] = {}
    for rater in raters:
        lease = leasing.lease_next(pool=rater_load.POOL, rater=rater)
        assert lease is not None, "a rater found nothing to judge"
        held[rater.pk] = lease.assignment
    times: list[float] = []
    for round_ in range(rounds + 1):
        for rater in raters:
            started = time.perf_counter()
            _, lease = submission.submit_and_lease(assignment=held[rater.pk], rater=rater, grade=round_ % 4)
            elapsed = (time.perf_counter() - started) * 1000
            assert lease is not None, "a rater ran dry"
            held[rater.pk] = lease.assignment
            if round_:
                times.append(elapsed)
    connection.close()
    return times


def summary(times: list[float]) -> tuple[float, float]:
    """Median and p90 (rater_load's nearest-rank percentile)."""
    return statistics.median(times), rater_load.percentile(times, 90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="150 items a topic, 5 rounds")
    parser.add_argument("--rounds", type=int, help="key presses per rater and phase (default 20; small 5)")
    parser.add_argument("--keep", action="store_true", help="keep the campaign's database afterwards")
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.small else 20)
    items_per_topic = 150 if args.small else 750

    print(f"load average at the start: {os.getloadavg()[0]:.2f} (2 cores; the figures want a quiet machine)")
    started = time.perf_counter()
    rater_load.set_up_django("lease-late-", database=DATABASE)
    _, _, _, items = rater_load.load_data(items_per_topic=items_per_topic)
    print(
        f"campaign: {rater_load.TOPICS} topics × {items_per_topic} items = {items:,} items, "
        f"J={rater_load.J}, {rater_load.RATERS} raters; database {DATABASE} "
        f"({time.perf_counter() - started:.1f} s, not timed)"
    )
    best: dict[float, tuple[float, float]] = {}
    try:
        for _ in range(3):
            for fraction in (0.0, LATE):
                median, p90 = summary(phase(fraction, rounds))
                if fraction not in best or median < best[fraction][0]:
                    best[fraction] = (median, p90)
    finally:
        use_database(DATABASE)
        drop_database(COPY)
        if not args.keep:
            drop_database(DATABASE)
    presses = rounds * rater_load.RATERS
    early, late = best[0.0], best[LATE]
    print(f"key presses a phase: {presses} ({rater_load.RATERS} raters × {rounds}); best median of 3 phases")
    print(f"anchor, early (no item done): median {early[0]:.3f} ms, p90 {early[1]:.3f} ms")
    print(
        f"ours, late ({LATE:.0%} of each topic's items done): median {late[0]:.3f} ms, p90 {late[1]:.3f} ms"
    )
    ratio = late[0] / early[0]
    print(f"target ratio ≤ {TARGET}: {'met' if ratio <= TARGET else 'MISSED'}")
    print(f"ratio late/early: {ratio:.2f}")


if __name__ == "__main__":
    main()

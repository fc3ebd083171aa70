"""32 raters at once against PostgreSQL: no item is ever leased beyond what it needs."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from django.db import connection, transaction

from judgements import leasing, submission
from judgements.models import Assignment, Judgement
from pooling.models import Document, PoolItem, Run, RunRow, Topic
from tests.conftest import require_services
from tests.factories import lease_for, make_collection, make_pool, make_user, submit_for

RATERS = 32
J = 3


def lease_and_judge(pool, rater) -> tuple[int, Any] | None:
    """The rater loop: `lease_next`, then `submit_label` (one statement each on PostgreSQL, as long as
    there is an open item; the portable path for the rest)."""
    lease = leasing.lease_next(pool=pool, rater=rater)
    if lease is None:
        return None

    def judge(grade: int) -> None:
        submission.submit_label(assignment=lease.assignment, rater=rater, grade=grade)

    return Assignment.objects.get(pk=lease.assignment).item_id, judge


@pytest.mark.django_db(transaction=True)
def test_it_gives_every_item_exactly_j_judgements_from_j_raters_under_32_concurrent_raters():
    require_services()
    collection = make_collection(docs=400, topics=[f"t{i}" for i in range(8)])
    topics = list(Topic.objects.filter(collection=collection))
    docs = list(Document.objects.filter(collection=collection).values_list("id", flat=True))
    runs = []
    for r in range(3):
        run = Run.objects.create(collection=collection, name=f"run{r}")
        RunRow.objects.bulk_create(
            RunRow(run=run, topic=topic, document_id=docs[(t * 37 + r * 11 + rank * 7) % len(docs)],
                   rank=rank + 1, score=-rank)
            for t, topic in enumerate(topics) for rank in range(20)
        )  # fmt: skip
        runs.append(run)
    raters = [make_user(f"r{i}") for i in range(RATERS)]
    pool = make_pool(collection=collection, runs=runs, depth=20, judgements_per_item=J, raters=raters)
    items = PoolItem.objects.filter(pool=pool).count()
    assert items > 100
    barrier = threading.Barrier(RATERS)
    failures: list[BaseException] = []
    overleased: list[int] = []

    def work(rater) -> None:
        try:
            barrier.wait()
            while True:
                leased = lease_and_judge(pool, rater)
                if leased is None:
                    return
                item_id, judge = leased
                item = PoolItem.objects.get(pk=item_id)
                if item.num_judgements + item.active_leases > item.required_judgements:
                    overleased.append(item.pk)
                judge((item.pk + rater.pk) % 4)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(rater,)) for rater in raters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures[:3]
    assert not overleased
    per_item = Counter(Judgement.objects.filter(item__pool=pool).values_list("item_id", flat=True))
    assert len(per_item) == items
    assert set(per_item.values()) == {J}
    pairs = Judgement.objects.filter(item__pool=pool).values_list("item_id", "rater_id")
    assert len(set(pairs)) == items * J
    assert not PoolItem.objects.filter(pool=pool).exclude(active_leases=0).exists()


@pytest.mark.django_db(transaction=True)
def test_it_gives_one_rater_one_live_lease_however_many_next_calls_race():
    """One rater, 8 concurrent `next` calls at a time, 5 rounds: every call answers the same lease, and
    the database holds one live lease for them (two tabs, a double click, a retrying client)."""
    require_services()
    rater = make_user("racer")
    pool = make_pool(raters=[rater], judgements_per_item=1)
    for _round in range(5):
        barrier = threading.Barrier(8)
        leased: list[int | None] = []
        failures: list[BaseException] = []

        def work(barrier: threading.Barrier, leased: list[int | None], failures: list[BaseException]) -> None:
            try:
                barrier.wait()
                found = lease_and_judge(pool, rater)
                leased.append(None if found is None else found[0])
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=work, args=(barrier, leased, failures)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not failures, failures[:3]
        live = Assignment.objects.filter(rater=rater, state=Assignment.State.ACTIVE)
        assert live.count() == 1
        assert set(leased) == {live.get().item_id}
        assert PoolItem.objects.get(pk=live.get().item_id).active_leases == 1
        assert sum(PoolItem.objects.filter(pool=pool).values_list("active_leases", flat=True)) == 1
        submit_for(assignment=live.get(), grade=1)


def test_it_lets_the_database_refuse_a_second_live_lease_of_a_rater_in_a_pool(db):
    from django.db import IntegrityError, transaction
    from django.utils import timezone

    rater = make_user("racer")
    pool = make_pool(raters=[rater])
    first, second = PoolItem.objects.filter(pool=pool)[:2]
    Assignment.objects.create(item=first, pool=pool, rater=rater, expires_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(item=second, pool=pool, rater=rater, expires_at=timezone.now())


def test_it_leases_anew_when_the_raters_own_lease_lapsed_unswept(db):
    """A lease past its time but not yet swept is still `active`: the next lease expires it first."""
    from datetime import timedelta

    from django.utils import timezone

    rater = make_user("racer")
    pool = make_pool(raters=[rater])
    stale = lease_for(pool=pool, rater=rater)
    Assignment.objects.filter(pk=stale.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    fresh = lease_for(pool=pool, rater=rater)
    assert fresh is not None and fresh.expires_at > timezone.now()
    live = Assignment.objects.filter(rater=rater, state=Assignment.State.ACTIVE)
    assert list(live.values_list("pk", flat=True)) == [fresh.pk]
    lease = leasing.lease_next(pool=pool.name, rater=rater)
    assert lease is not None and lease.assignment == fresh.pk


@pytest.mark.django_db(transaction=True)
def test_a_lease_waits_for_open_items_that_are_only_busy():
    """Every open item held by a transaction in flight (leases being made this instant, another rater's or
    a racing tab's): the lease waits for them instead of answering that nothing is left, and once they end
    it leases one. (Seen once in CI as one `None` among eight racing `next` calls of one rater.)"""
    require_services()
    rater = make_user("waiter")
    pool = make_pool(raters=[rater], judgements_per_item=1)
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                list(PoolItem.objects.select_for_update().filter(pool=pool))
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    timer = threading.Timer(0.5, release.set)
    timer.start()
    try:
        lease = leasing.lease_next(pool=pool, rater=rater)
    finally:
        release.set()
        holder.join(10)
    assert lease is not None
    assert Assignment.objects.filter(rater=rater, state=Assignment.State.ACTIVE).count() == 1

"""The progress tallies (`ProgressTally`, kept by triggers on the item table): after every kind of change of
items (build, leases, judgements of both paths, skips, expiry, gold, a removed rater, deleted items, bulk
updates, a pool deleted) the judging page's tallied progress is the pass over the items, for each rater and
topic."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F, Sum
from django.utils import timezone

from judgements import adjudication, lease_ends, leasing, membership, submission
from judgements.models import Assignment, Judging, ProgressTally
from judgements.progress import live_progress, progress
from pooling.models import PoolItem, Topic
from tests.conftest import require_services
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db


def same_progress(pool, raters) -> None:
    judging = Judging.objects.get(pool=pool)
    topics = [None, *Topic.objects.filter(collection=pool.collection).values_list("pk", flat=True)]
    for rater in raters:
        for topic in topics:
            tallied = progress(judging=judging, user=rater, topic_id=topic)
            scanned = progress(judging=judging, user=rater, topic_id=topic, tallied=False)
            assert tallied == scanned, (rater.username, topic)
        # the page's refresh: the same counts on the topic of the rater's live lease, in one statement
        live = live_progress(pool_name=pool.name, user=rater)
        assert live == live_progress(pool_name=pool.name, user=rater, tallied=False), rater.username
        assert live is not None and live["topic_id"] == leasing.current_topic_id(pool=pool, rater=rater)


def test_the_tallied_progress_is_the_pass_over_the_items_after_every_change():
    require_services()  # the tallies are PostgreSQL's triggers: fails under CI without it, else skips
    raters = [make_user(f"tally{n}") for n in range(3)]
    pool = make_pool(raters=raters, name="tally", judgements_per_item=2)
    same_progress(pool, raters)
    need = PoolItem.objects.filter(pool=pool, selected=True).aggregate(n=Sum("required_judgements"))["n"]
    assert need > 0
    assert progress(judging=pool.judging, user=raters[0], topic_id=None)["need"] == need

    first, second, third = raters
    lease = leasing.lease_next(pool=pool, rater=first)  # the one statement
    same_progress(pool, raters)
    _, lease = submission.submit_and_lease(assignment=lease.assignment, rater=first, grade=1)
    same_progress(pool, raters)
    submission.submit_label(assignment=lease.assignment, rater=first, grade=2, note="a note")
    same_progress(pool, raters)
    lease = leasing.lease_next(pool=pool, rater=second)
    lease_ends.skip_item(assignment=Assignment.objects.get(pk=lease.assignment))
    same_progress(pool, raters)
    lease = leasing.lease_next(pool=pool, rater=second)
    Assignment.objects.filter(pk=lease.assignment).update(expires_at=timezone.now() - timedelta(minutes=1))
    lease_ends.sweep_expired_leases()
    same_progress(pool, raters)
    # the expired lease honoured (the portable path), then a third rater's live lease taken off with them
    submission.submit_label(assignment=lease.assignment, rater=second, grade=0)
    leasing.lease_next(pool=pool, rater=third)
    same_progress(pool, raters)
    membership.remove_rater(pool=pool, rater=third)
    same_progress(pool, raters[:2])

    items = list(PoolItem.objects.filter(pool=pool).order_by("pk"))
    adjudication.set_gold(item=items[-1], grade=2, by=first)
    PoolItem.objects.filter(pk=items[-2].pk).update(selected=False)
    PoolItem.objects.filter(pk=items[-3].pk).update(required_judgements=5)
    same_progress(pool, raters[:2])
    adjudication.remove_gold(item=items[-1])
    PoolItem.objects.filter(pk=items[-4].pk).delete()
    same_progress(pool, raters[:2])
    # one statement over every topic's items (the row trigger, once per row whose counts change), then
    # one that changes no count (its rows pass the trigger's WHEN without a call)
    assert PoolItem.objects.filter(pool=pool).values("topic").distinct().count() > 1
    PoolItem.objects.filter(pool=pool).update(required_judgements=F("required_judgements") + 1)
    same_progress(pool, raters[:2])
    PoolItem.objects.filter(pool=pool).update(blind_key=F("blind_key"))
    PoolItem.objects.filter(pool=pool).update(required_judgements=F("required_judgements") - 1)
    same_progress(pool, raters[:2])
    assert progress(judging=pool.judging, user=first, topic_id=None)["done"] == 3

    pool.delete()  # its tallies count down to nothing
    assert ProgressTally.objects.filter(pool_id=pool.pk).aggregate(
        need=Sum("need"), done=Sum("done"), needing=Sum("needing"), items=Sum("items")
    ) in (
        {"need": 0, "done": 0, "needing": 0, "items": 0},
        {"need": None, "done": None, "needing": None, "items": None},
    )


def test_the_tallies_count_selected_items_and_the_migration_that_added_them_counts_those_before_it():
    """`items`, the selected items an adaptive pool's need reads: kept as selection changes, and counted
    by migration 0015 for the tallies it found (here: tallies whose items count was lost)."""
    require_services()
    rater = make_user("items1")
    pool = make_pool(raters=[rater], name="items", strategy="mtf", budget=6, judgements_per_item=2)
    judging = Judging.objects.get(pool=pool)
    assert progress(judging=judging, user=rater, topic_id=None)["selected"] == 0
    leasing.lease_next(pool=pool, rater=rater)  # the strategy selects
    selected = PoolItem.objects.filter(pool=pool, selected=True).count()
    assert selected > 0
    assert progress(judging=judging, user=rater, topic_id=None)["selected"] == selected
    same_progress(pool, [rater])
    ProgressTally.objects.filter(pool_id=pool.pk).update(items=0)
    assert progress(judging=judging, user=rater, topic_id=None)["selected"] == 0
    migration = importlib.import_module("judgements.migrations.0015_progress_tally_items")
    with connection.cursor() as cursor:
        cursor.execute(migration.FORWARD)
    assert progress(judging=judging, user=rater, topic_id=None)["selected"] == selected
    same_progress(pool, [rater])


def test_the_page_refresh_counts_for_a_rater_of_the_pool_on_the_topic_of_their_live_lease():
    rater, other = make_user("live1"), make_user("live2")
    pool = make_pool(raters=[rater], name="live")
    for tallied in (True, False):
        assert live_progress(pool_name=pool.name, user=other, tallied=tallied) is None
        assert live_progress(pool_name="no such pool", user=rater, tallied=tallied) is None
        counts = live_progress(pool_name=pool.name, user=rater, tallied=tallied)
        assert counts is not None and counts["topic_id"] is None and counts["live"] == 0
    lease = leasing.lease_next(pool=pool, rater=rater)
    assert lease is not None
    topic = Topic.objects.get(collection=pool.collection, qid=lease.qid)
    for tallied in (True, False):
        counts = live_progress(pool_name=pool.name, user=rater, tallied=tallied)
        assert counts is not None and counts["topic_id"] == topic.pk and counts["live"] == 1
        assert counts["topic_need"] > 0
    Assignment.objects.filter(pk=lease.assignment).update(expires_at=timezone.now() - timedelta(minutes=1))
    for tallied in (True, False):  # a lapsed lease is no topic to show
        counts = live_progress(pool_name=pool.name, user=rater, tallied=tallied)
        assert counts is not None and counts["topic_id"] is None and counts["topic_need"] == 0

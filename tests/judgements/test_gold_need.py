"""A gold item is served to every rater of its pool, so the progress figures count it for every rater's
judgement (`pooling.models.NEED`): each judgement a rater makes moves the pool's and the topic's bars by
one, gold or not, and a rater alone on a pool cannot tell a gold item by the bars standing still. The
pool's judgements required (statistics, dashboard, the judging page and the API) count it so too, and
follow the raters as they join and leave."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest
from django.db import connection

from judgements import adjudication, leasing, membership, submission
from judgements.models import Judging
from judgements.pool_progress import pool_progress
from judgements.progress import live_progress, pool_share, progress
from pooling import stats
from pooling.models import PoolItem
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db

TALLIED = [False, True] if connection.vendor == "postgresql" else [False]


def bars(pool, rater, topic_id, tallied):
    counts = progress(judging=Judging.objects.get(pool=pool), user=rater, topic_id=topic_id, tallied=tallied)
    return counts["done"], counts["need"], counts["topic_done"], counts["topic_need"]


@pytest.mark.parametrize("tallied", TALLIED)
def test_every_judgement_moves_the_bars_by_one_gold_or_not(tallied):
    raters = [make_user(f"gn{n}") for n in range(3)]
    pool = make_pool(raters=raters, name="gold-need", judgements_per_item=1)
    items = list(PoolItem.objects.filter(pool=pool).select_related("topic").order_by("pk"))
    gold = [item for item in items if item.topic.qid == "q2"][:2]
    for item in gold:
        adjudication.set_gold(item=item, grade=1, by=raters[0])
    # every item needs one judgement, a gold one one from each of the three raters
    need = len(items) - len(gold) + 3 * len(gold)
    assert bars(pool, raters[0], None, tallied)[:2] == (0, need)

    gold_judgements = 0
    for rater in raters:  # one after the other: each alone on the pool while they work
        lease = leasing.lease_next(pool=pool, rater=rater)
        while lease is not None:
            topic_id = PoolItem.objects.get(assignments__pk=lease.assignment).topic_id
            before = bars(pool, rater, topic_id, tallied)
            gold_judgements += PoolItem.objects.filter(assignments__pk=lease.assignment, gold=True).count()
            submission.submit_label(assignment=lease.assignment, rater=rater, grade=0)
            after = bars(pool, rater, topic_id, tallied)
            assert (after[0] - before[0], after[2] - before[2]) == (1, 1), (rater.username, lease.docid)
            assert (after[1], after[3]) == (before[1], before[3])  # the need stands still
            live = live_progress(pool_name=pool.name, user=rater, tallied=tallied)
            assert live is not None and (live["done"], live["need"]) == after[:2]
            lease = leasing.lease_next(pool=pool, rater=rater)
    assert gold_judgements == 3 * len(gold)  # each rater was served each gold item
    assert bars(pool, raters[0], None, tallied)[:2] == (need, need)  # the pool's bar is full


def test_the_pools_judgements_required_count_a_gold_item_for_every_rater_as_raters_come_and_go():
    raters = [make_user(f"gr{n}") for n in range(2)]
    pool = make_pool(raters=raters, name="gold-raters", judgements_per_item=1)
    items = list(PoolItem.objects.filter(pool=pool).order_by("pk"))

    def required():
        judging = Judging.objects.get(pool=pool)
        figures = {
            "statistics": stats.judgement_totals(pool)["judgements_required"],
            "estimate": stats.pool_estimate(pool).judgements,
            "progress": progress(judging=judging, user=raters[0], topic_id=None)["need"],
            "pool share": pool_share(pool_id=pool.pk)["need"],
            "pool share, one pass": pool_share(pool_id=pool.pk, tallied=False)["need"],
            "API": pool_progress(judging=judging, user=raters[0]).required,
        }
        assert len(set(figures.values())) == 1, figures
        return figures["statistics"]

    assert required() == len(items)
    adjudication.set_gold(item=items[0], grade=1, by=raters[0])
    assert required() == len(items) + 1  # two raters: one judgement more than its one
    third = make_user("gr2")
    membership.add_raters(pool=pool, raters=[third])
    assert required() == len(items) + 2
    membership.remove_rater(pool=pool, rater=raters[0])
    assert required() == len(items) + 1
    adjudication.remove_gold(item=items[0])
    assert required() == len(items)
    assert not PoolItem.objects.filter(pool=pool).exclude(gold_need=0).exists()


def test_the_migration_gives_the_gold_items_there_are_their_pools_raters():
    raters = [make_user(f"gm{n}") for n in range(3)]
    pool = make_pool(raters=raters, name="gold-migration", judgements_per_item=1)
    item = PoolItem.objects.filter(pool=pool).first()
    adjudication.set_gold(item=item, grade=1, by=raters[0])
    PoolItem.objects.filter(pk=item.pk).update(gold_need=0)  # as before the migration
    assert pool_share(pool_id=pool.pk)["need"] == PoolItem.objects.filter(pool=pool).count()
    migration = importlib.import_module("judgements.migrations.0017_progress_counts_item_need")
    migration.count_gold_need(None, SimpleNamespace(connection=connection))
    assert PoolItem.objects.get(pk=item.pk).gold_need == 3
    assert pool_share(pool_id=pool.pk)["need"] == PoolItem.objects.filter(pool=pool).count() + 2

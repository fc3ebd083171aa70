"""The lease's walk in blind order reads only leasable items (`PoolItem.leasable`, kept by the database):
however many items before the next open one are judged or fully leased, the walk does not step over them,
so a key press late in a campaign costs what one early in it does. And the column is the rule: it follows
every change of the counters, gold and selection."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from judgements import leasing
from pooling.models import PoolItem
from tests.conftest import require_services
from tests.factories import make_collection, make_pool, make_run, make_user

pytestmark = pytest.mark.django_db

ITEMS = 40
JUDGED = 30


def _nodes(plan: dict[str, Any]):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def test_a_lease_walks_no_item_that_cannot_be_leased():
    if connection.vendor != "postgresql":
        require_services()  # the walk is the PostgreSQL statement's: fails under CI without it, else skips
    collection = make_collection(docs=ITEMS, topics=("q1",))
    run = make_run(collection=collection, name="r", lists={"q1": [f"d{i:03d}" for i in range(ITEMS)]})
    rater = make_user("late")
    pool = make_pool(collection=collection, runs=[run], depth=ITEMS, raters=[rater])
    items = PoolItem.objects.filter(pool=pool).order_by("blind_key")
    in_blind_order = list(items.values_list("pk", flat=True))
    # the campaign is well along: the first items in blind order have all their judgements
    PoolItem.objects.filter(pk__in=in_blind_order[:JUDGED]).update(num_judgements=1)
    params = {"pool": pool.name, "rater": rater.pk, "now": timezone.now(), "own_transaction": False}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # (a table this small would be read whole)
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {leasing._LEASE_SQL}", params)
        plan = cursor.fetchone()[0]
        transaction.set_rollback(True)
    plan = json.loads(plan) if isinstance(plan, str) else plan
    walks = [node for node in _nodes(plan[0]["Plan"]) if node.get("Index Name") == "poolitem_leasable_order"]
    assert walks, "the lease walks the index of leasable items"
    # (the walk on the rater's last topic finds nothing, they have none yet; the walk over every topic
    # then reads one entry: the item it leases)
    assert sum(walk["Actual Rows"] for walk in walks) == 1
    assert [walk.get("Rows Removed by Filter", 0) for walk in walks] == [0] * len(walks)
    # and the item it leased is the first leasable one in blind order
    lease = leasing.lease_next(pool=pool, rater=rater)
    assert lease is not None
    assert PoolItem.objects.get(pool=pool, document__docid=lease.docid).pk == in_blind_order[JUDGED]


def test_leasable_follows_every_change_of_the_item():
    pool = make_pool(raters=[make_user("r")])
    item = PoolItem.objects.filter(pool=pool).first()
    assert item is not None

    def leasable() -> bool:
        return PoolItem.objects.values_list("leasable", flat=True).get(pk=item.pk)

    assert leasable()
    PoolItem.objects.filter(pk=item.pk).update(active_leases=1)  # its one judgement is leased
    assert not leasable()
    PoolItem.objects.filter(pk=item.pk).update(active_leases=0, num_judgements=1)  # and given
    assert not leasable()
    PoolItem.objects.filter(pk=item.pk).update(gold=True)  # gold: served to every rater
    assert leasable()
    PoolItem.objects.filter(pk=item.pk).update(selected=False)  # not chosen for judging
    assert not leasable()
    PoolItem.objects.filter(pk=item.pk).update(selected=True, gold=False, required_judgements=2)
    assert leasable()

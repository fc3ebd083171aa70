"""The two rules of an item's judging — judged, needs a judgement — each written once (pooling.models), as
a QuerySet method, a Q, an SQL fragment and an instance method that agree item by item."""

from __future__ import annotations

from django.db import connection

from pooling.models import PoolItem
from tests.factories import make_pool

# (required, judgements, live leases, gold) → (judged, needs a judgement)
CASES = [
    ((1, 0, 0, False), (False, True)),
    ((1, 0, 1, False), (False, False)),
    ((2, 1, 0, False), (False, True)),
    ((2, 1, 1, False), (False, False)),
    ((1, 1, 0, False), (True, False)),
    ((1, 1, 0, True), (True, True)),  # gold: served to every rater
    ((3, 0, 5, True), (False, True)),
]


def test_it_tells_judged_and_needing_a_judgement_the_same_way_everywhere(db):
    pool = make_pool()
    items = list(PoolItem.objects.filter(pool=pool).order_by("pk")[: len(CASES)])
    assert len(items) == len(CASES)
    for item, ((required, judged, leases, gold), _) in zip(items, CASES, strict=True):
        PoolItem.objects.filter(pk=item.pk).update(
            required_judgements=required, num_judgements=judged, active_leases=leases, gold=gold
        )
    PoolItem.objects.filter(pool=pool).exclude(pk__in=[i.pk for i in items]).update(selected=False)
    expect_judged = {item.pk for item, (_, (j, _n)) in zip(items, CASES, strict=True) if j}
    expect_open = {item.pk for item, (_, (_j, n)) in zip(items, CASES, strict=True) if n}
    queryset = PoolItem.objects.filter(pool=pool)
    assert set(queryset.judged().values_list("pk", flat=True)) == expect_judged
    assert set(queryset.needing_judgement().values_list("pk", flat=True)) == expect_open
    assert {i.pk for i in queryset.filter(selected=True) if i.needs_judgement()} == expect_open
    assert {i.pk for i in queryset if i.leasable} == expect_open  # the database's column
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pi.id FROM pooling_poolitem pi WHERE pi.pool_id = %s AND pi.leasable",
            [pool.pk],
        )
        assert {row[0] for row in cursor.fetchall()} == expect_open

"""The records agreement is measured over (`queries.agreement_records`): a pool's current human judgements,
without those of raters excluded from it, read as integer columns; the same records the ORM lists."""

from __future__ import annotations

import pytest

from judgements import exclusions
from judgements.agreement import Records
from judgements.exclusions import excluded_rater_ids
from judgements.models import Judgement
from judgements.queries import agreement_records
from pooling.models import PoolItem
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db


def orm_records(pool):
    return list(
        Judgement.objects.filter(item__pool=pool)
        .exclude(rater_id__in=excluded_rater_ids(pool=pool))
        .order_by("item_id", "rater_id")
        .values_list("item_id", "item__topic__qid", "rater__username", "grade")
    )


def test_it_reads_the_pools_current_human_judgements_as_the_orm_lists_them():
    raters = [make_user(name) for name in ("zoe", "adam", "mia")]  # ids and names in different orders
    pool = make_pool(raters=raters, name="records")
    other = make_pool(raters=raters, name="records-other")
    rubric = pool.judging.rubric
    items = list(PoolItem.objects.filter(pool=pool).order_by("-id"))
    assert len(items) >= 4
    for n, item in enumerate(items):
        for r, rater in enumerate(raters):
            if (n + r) % 4 == 3:
                continue  # not every rater judges every item
            unrateable = (n + r) % 5 == 0
            grade = None if unrateable else (n * r) % 4
            Judgement.objects.create(item=item, rater=rater, rubric=rubric, grade=grade,
                                     unrateable=unrateable, kind="human")  # fmt: skip
    Judgement.all_kinds.create(item=items[0], rater=make_user("bot"), rubric=rubric, grade=3, kind="model")
    for item in PoolItem.objects.filter(pool=other)[:2]:
        Judgement.objects.create(item=item, rater=raters[0], rubric=rubric, grade=1, kind="human")

    records = agreement_records(pool=pool)
    assert isinstance(records, Records) and len(records) == len(orm_records(pool)) > 0
    assert list(records) == orm_records(pool)
    assert records.raters == ["adam", "mia", "zoe"] and records.items == sorted(i.pk for i in items)

    exclusions.exclude_rater(pool=pool, rater=raters[1], by=None, reason="spam")
    after = agreement_records(pool=pool)
    assert list(after) == orm_records(pool) and "adam" not in after.raters
    assert agreement_records(pool=make_pool(raters=raters, name="records-none")) == Records.of_columns(
        [], [], [], [], []
    )

"""Gold items, the adjudication queue, and an adjudicator's decisions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, F, Max, Min, Q, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from judgements import membership
from judgements.errors import JudgingError
from judgements.exclusions import counted_judgements, counted_judgements_of
from judgements.labels import clean_note, validate_label
from judgements.models import (
    Adjudication,
    GoldLabel,
    Judgement,
)
from pooling.models import Pool, PoolItem


def set_gold(*, item: PoolItem, grade: int, by: User) -> GoldLabel:
    """Give an item a known grade; it is then served to every rater of the pool, unannounced."""
    rubric = item.pool.judging.rubric
    if grade not in rubric.labels:
        raise JudgingError(f"grade {grade} is not on the rubric", field="grade")
    with transaction.atomic():
        # `created_at` is when this grade was set: a new grade moves it (and so the pool's data stamp)
        gold, _ = GoldLabel.objects.update_or_create(
            item=item, defaults={"grade": grade, "created_by": by, "created_at": timezone.now()}
        )
        PoolItem.objects.filter(pk=item.pk).update(gold=True)
        membership.count_gold_need(pool_id=item.pool_id)
    return gold


def remove_gold(*, item: PoolItem) -> None:
    with transaction.atomic():
        GoldLabel.objects.filter(item=item).delete()
        PoolItem.objects.filter(pk=item.pk).update(gold=False, gold_need=0)  # needs its own again


def queue_rows(*, pool: Pool, gap: int | None = None) -> QuerySet[Judgement, Any]:
    """The adjudication queue, one query counted and sliced in the database: items with two votes or
    more that count (`exclusions.counted_judgements`: not those of excluded raters) whose grades differ by
    at least `gap` (default: the pool's setting), not yet adjudicated,
    largest spread first, then by item id. Unrateable beside a grade counts as a disagreement of any
    size; an item all unrateable has a spread of 0. Each row is `{"item_id", "spread",
    "unrateable_votes"}`; `stats.queue_entries` gives a page of rows its details. `queue_counts_of` counts
    the queues of many pools at once."""
    gap = pool.judging.adjudication_gap if gap is None else gap
    # an excluded rater's vote makes no disagreement: releases ignore it
    return _queue(counted_judgements(pool=pool), Value(gap)).values("item_id", "spread", "unrateable_votes")


def queue_counts_of(*, pools: Iterable[Pool]) -> dict[int, int]:
    """`queue_rows(pool=pool).count()` of each of `pools` (pools with judging set up), by pool id, each at
    its own pool's gap: one statement whatever their number (`exclusions.counted_judgements_of`)."""
    pools = list(pools)
    out = dict.fromkeys((pool.pk for pool in pools), 0)
    if not pools:
        return out
    queue = _queue(counted_judgements_of(pools=pools), F("item__pool__judging__adjudication_gap"))
    counts = (
        PoolItem.objects.filter(pk__in=queue.values("item_id"))
        .values("pool_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    out.update((row["pool_id"], row["n"]) for row in counts)
    return out


def _queue(judgements: QuerySet[Judgement, Any], gap: Value | F) -> QuerySet[Any, Any]:
    """The items of `queue_rows` among `judgements`, grouped by item, in its order, where `gap` is the
    least spread that disputes an item (of the item's row: a value, or its pool's setting)."""
    graded = Q(unrateable=False)
    return (
        judgements.filter(item__adjudication__isnull=True)
        .values("item_id", least=gap)
        .annotate(
            votes=Count("id"),
            rated=Count("id", filter=graded),
            spread=Coalesce(Max("grade", filter=graded) - Min("grade", filter=graded), 0),
        )
        .annotate(unrateable_votes=F("votes") - F("rated"))
        .filter(Q(spread__gte=F("least")) | Q(rated__gt=0, unrateable_votes__gt=0), votes__gte=2)
        .order_by("-spread", "item_id")
    )


def adjudicate(
    *,
    item: PoolItem,
    adjudicator: User,
    grade: int | None,
    unrateable: bool = False,
    note: str = "",
) -> Adjudication:
    """Record the adjudicator's decision on an item; it overrides every aggregation policy."""
    rubric = item.pool.judging.rubric
    validate_label(rubric, grade, unrateable, {}, require_facets=False)  # a decision is about the grade
    note = clean_note(note)
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item,
        defaults={
            "grade": None if unrateable else grade,
            "unrateable": unrateable,
            "note": note,
            "adjudicator": adjudicator,
            "decided_at": timezone.now(),
        },
    )
    return adjudication

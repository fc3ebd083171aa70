"""Gold items, the adjudication queue, and an adjudicator's decisions."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from judgements.errors import JudgingError
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
        gold, _ = GoldLabel.objects.update_or_create(item=item, defaults={"grade": grade, "created_by": by})
        PoolItem.objects.filter(pk=item.pk).update(gold=True)
    return gold


def remove_gold(*, item: PoolItem) -> None:
    with transaction.atomic():
        GoldLabel.objects.filter(item=item).delete()
        PoolItem.objects.filter(pk=item.pk).update(gold=False)


def adjudication_queue(*, pool: Pool, gap: int | None = None) -> list[dict[str, Any]]:
    """Items whose grades differ by at least `gap` (default: the pool's setting), not yet adjudicated,
    largest spread first. Unrateable beside a grade counts as a disagreement of any size."""
    gap = pool.judging.adjudication_gap if gap is None else gap
    rows = (
        Judgement.objects.filter(item__pool=pool, item__adjudication__isnull=True)
        .order_by("item_id")
        .values_list("item_id", "grade", "unrateable")
    )
    grades: dict[int, list[int | None]] = {}
    for item_id, grade, unrateable in rows:
        grades.setdefault(item_id, []).append(None if unrateable else grade)
    queue = []
    for item_id, values in grades.items():
        if len(values) < 2:
            continue
        rated = [v for v in values if v is not None]
        mixed = 0 < len(rated) < len(values)
        spread = (max(rated) - min(rated)) if rated else 0
        if spread >= gap or mixed:
            queue.append({"item_id": item_id, "spread": spread, "unrateable_votes": len(values) - len(rated)})
    queue.sort(key=lambda row: (-row["spread"], row["item_id"]))
    return queue


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

"""An adaptive pool asked for more items when a rater finds nothing open (`lease_next`'s portable path):
its strategy (`pooling.adaptive.select_next`) reads the consensus of the items judged so far."""

from __future__ import annotations

from typing import Literal

from django.db.models import QuerySet

from judgements import aggregation
from judgements.exclusions import counted_judgements
from judgements.models import Adjudication
from pooling import adaptive as pooling_adaptive
from pooling.models import JUDGED, Pool, PoolItem


def select_adaptive(*, pool: Pool) -> bool:
    """Ask the pool's strategy for more items, for every topic whose selected items are all judged."""
    selected_any = False
    for topic in pool.topics():
        items = PoolItem.objects.filter(pool=pool, topic=topic, selected=True)
        if items.exclude(JUDGED).exists():
            continue
        outcomes = consensus_outcomes(pool=pool, items=items)
        if pooling_adaptive.select_next(pool=pool, topic=topic, outcomes=outcomes) is not None:
            selected_any = True
    return selected_any


def consensus_outcomes(*, pool: Pool, items: QuerySet[PoolItem]) -> dict[str, int | None]:
    """docid → the item's consensus under the `median` policy (the lower median; None if most said
    unrateable), for the adaptive strategies: from the judgements that count, as a release reads them (not
    those of raters excluded from the pool: `exclusions.counted_judgements`), an adjudication overriding
    them (`aggregation.aggregate`)."""
    votes: dict[str, list[tuple[int, int | None]]] = {}
    rows = counted_judgements(pool=pool).filter(item__in=items)
    for docid, rater_id, grade in rows.values_list("item__document__docid", "rater_id", "grade"):
        votes.setdefault(docid, []).append((rater_id, grade))
    decided: dict[str, int | Literal["unrateable"] | None] = {
        docid: "unrateable" if unrateable else grade
        for docid, grade, unrateable in Adjudication.objects.filter(item__in=items).values_list(
            "item__document__docid", "grade", "unrateable"
        )
    }
    return {
        docid: aggregation.aggregate(
            votes.get(docid, []), policy="median", adjudicated=decided.get(docid)
        ).grade
        for docid in votes.keys() | decided.keys()
    }

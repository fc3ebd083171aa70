"""An adaptive pool asked for more items when a rater finds nothing open (`lease_next`'s portable path):
its strategy (`pooling.adaptive.select_next`) reads the consensus of the items judged so far."""

from __future__ import annotations

from typing import Any

from judgements.models import Judgement
from pooling import adaptive as pooling_adaptive
from pooling.models import JUDGED, Pool, PoolItem


def select_adaptive(*, pool: Pool) -> bool:
    """Ask the pool's strategy for more items, for every topic whose selected items are all judged."""
    selected_any = False
    for topic in pool.topics():
        items = PoolItem.objects.filter(pool=pool, topic=topic, selected=True)
        if items.exclude(JUDGED).exists():
            continue
        outcomes = consensus_outcomes(items)
        if pooling_adaptive.select_next(pool=pool, topic=topic, outcomes=outcomes) is not None:
            selected_any = True
    return selected_any


def consensus_outcomes(items: Any) -> dict[str, int | None]:
    """docid → the item's consensus under the `median` policy (the lower median; None if most said
    unrateable), for the adaptive strategies."""
    from judgements import aggregation

    votes: dict[str, list[tuple[int, int | None]]] = {}
    rows = Judgement.objects.filter(item__in=items).values_list("item__document__docid", "rater_id", "grade")
    for docid, rater_id, grade in rows:
        votes.setdefault(docid, []).append((rater_id, grade))
    return {docid: aggregation.aggregate(v, policy="median").grade for docid, v in votes.items()}

"""Adaptive pools: the strategy chooses the next candidate of a topic to judge."""

from __future__ import annotations

from django.db import models

from pooling.models import Pool, PoolItem, Provenance, Topic


def select_next(*, pool: Pool, topic: Topic, outcomes: dict[str, int | None]) -> PoolItem | None:
    """In an adaptive pool, let the strategy choose the next candidate of `topic` to judge.

    The topic's chooser is rebuilt from its runs' ranked candidates and replayed over the items selected so
    far, in selection order, with their `outcomes` (docid → consensus grade, None = unrateable), so the
    choice is a pure function of the seed and the judgements. Returns the newly selected item, or None when
    the topic's share of the budget is spent or every candidate is selected. The caller only asks once the
    items already selected for the topic are judged.
    """
    from pooling import strategies

    candidates = (
        Provenance.objects.filter(item__pool=pool, item__topic=topic)
        .order_by("run__name", "rank")
        .values_list("run__name", "item__document__docid")
    )
    ranked: dict[str, list[str]] = {}
    for run_name, docid in candidates:
        ranked.setdefault(run_name, []).append(docid)
    if not ranked:
        return None
    capacities = dict(
        PoolItem.objects.filter(pool=pool)
        .values("topic__qid")
        .annotate(n=models.Count("id"))
        .values_list("topic__qid", "n")
    )
    share = strategies.allocate_budget(pool.budget or 0, capacities).get(topic.qid, 0)
    chosen = list(
        PoolItem.objects.filter(pool=pool, topic=topic, selected=True)
        .order_by("selected_order")
        .values_list("document__docid", flat=True)
    )
    if len(chosen) >= share:
        return None
    chooser = strategies.make_chooser(
        pool.strategy,
        ranked,
        depth=pool.depth,
        seed=strategies.topic_seed(pool.seed, topic.qid),
        relevance_level=pool.relevance_level,
    )
    for docid in chosen:
        if chooser.next_document() is None:
            break
        chooser.record(docid, outcomes.get(docid))
    next_docid = chooser.next_document()
    if next_docid is None:
        return None
    item = PoolItem.objects.select_for_update().get(pool=pool, topic=topic, document__docid=next_docid)
    if not item.selected:
        item.selected = True
        item.selected_order = len(chosen) + 1
        item.save(update_fields=["selected", "selected_order"])
    return item

"""Adaptive pools: the strategy chooses the next candidate of a topic to judge."""

from __future__ import annotations

from django.db import models

from pooling.models import Document, Pool, PoolItem, Provenance, Topic


def select_next(*, pool: Pool, topic: Topic, outcomes: dict[str, int | None]) -> PoolItem | None:
    """In an adaptive pool, let the strategy choose the next candidate of `topic` to judge (`cal`: its
    next batch, all selected at once; the first is returned).

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
    texts = None
    if pool.strategy == Pool.Strategy.CAL:  # the only strategy that reads texts
        documents = Document.objects.filter(
            pk__in=PoolItem.objects.filter(pool=pool, topic=topic).values("document")
        ).only("docid", "title", "text")
        texts = strategies.TopicTexts(
            topic=topic.full_text, documents={doc.docid: doc.full_text for doc in documents}
        )
    chooser = strategies.make_chooser(
        pool.strategy,
        ranked,
        depth=pool.depth,
        seed=strategies.topic_seed(pool.seed, topic.qid),
        relevance_level=pool.relevance_level,
        texts=texts,
    )
    for docid in chosen:
        if chooser.next_document() is None:
            break
        chooser.record(docid, outcomes.get(docid))
    # One document, or a batch strategy's whole batch (raters see it in blind order), within the share.
    batch = chooser.next_documents()[: share - len(chosen)]
    if not batch:
        return None
    items = {
        item.document.docid: item
        for item in PoolItem.objects.select_for_update()
        .select_related("document")
        .filter(pool=pool, topic=topic, document__docid__in=batch)
    }
    order = len(chosen)
    for docid in batch:
        item = items[docid]
        if not item.selected:
            order += 1
            item.selected = True
            item.selected_order = order
            item.save(update_fields=["selected", "selected_order"])
    return items[batch[0]]

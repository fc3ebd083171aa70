"""Fitting a model policy (Dawid–Skene, MACE, GLAD, gold-weighted voting) on a pool's current judgements, so
that every release and every read of the current qrels decides its items with the fitted model."""

from __future__ import annotations

import contextlib

from django.db import transaction

from judgements import aggregation
from judgements.models import GoldLabel, Judging
from judgements.release_rows import stream_items
from pooling.models import Pool


def fit_policy(parsed: aggregation.Policy, *, pool: Pool, seed: int = 0) -> aggregation.Policy:
    """``parsed`` with its model fitted on every selected item's current votes (excluded raters' votes
    are not among them: ``stream_items``), over the rubric's grades, the gold labels of the pool feeding
    ``gold-weighted``; any other policy as it is. Deterministic for a given pool state and ``seed``."""
    if parsed.kind not in aggregation.MODEL_POLICIES:
        return parsed
    from judgements import crowd  # imported by a model policy only: a release under a rule never needs it

    judging = Judging.objects.select_related("rubric").get(pool=pool)
    gold_of = dict(GoldLabel.objects.filter(item__pool=pool).values_list("item_id", "grade"))
    items: list[list[tuple[object, int | None]]] = []
    gold: dict[int, int] = {}
    with transaction.atomic(), contextlib.closing(stream_items(pool=pool)) as rows:
        for item, _rows in rows:
            if item.item_id in gold_of:
                gold[len(items)] = int(gold_of[item.item_id])
            items.append(list(item.votes))
    fitted = crowd.fit(parsed.kind, items, grades=judging.rubric.labels, gold=gold, seed=seed)
    return aggregation.Policy(parsed.kind, parsed.rater, fitted)

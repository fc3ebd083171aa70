"""Read-side figures of a pool: its size and cost before the build (estimates) and its export."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from django.db import connection

from pooling.models import Pool, PoolItem, Run, Topic
from pooling.pool_build import depth_rows


def estimate_pool(
    *, pool: Pool, runs: Iterable[Run] | None = None, per_topic: bool = False
) -> dict[str, Any]:
    """Size and cost of a pool before it is built: distinct (topic, document) pairs within depth k.

    `pool` may be an unsaved `Pool` holding the parameters a form is about to pass to `create_pool`, with
    `runs` the runs it would get (default: the pool's runs): the page's preview and the CLI's printed
    estimate are then the same numbers. Adaptive pools judge at most `budget` of the candidates; an item
    needs `judgements_per_item` judgements, or, with `double_judge_fraction`, that many for the fraction
    of the items and one for the others. `per_topic` adds `topics`: the candidates of each topic
    (`[{"qid", "items"}]`, topics without any left out)."""
    if runs is None:
        run_ids = list(pool.pool_runs.values_list("run_id", flat=True))
    else:
        run_ids = [run.pk for run in runs]
    empty: dict[str, Any] = {"candidates": 0, "items": 0, "judgements": 0, "cost": 0.0}
    if per_topic:
        empty["topics"] = []
    if not run_ids:
        return empty
    pooled, params = depth_rows(pool, run_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.topic_id, COUNT(*) FROM (SELECT DISTINCT c.topic_id, c.document_id FROM ({pooled}) c) "
            "c GROUP BY c.topic_id",
            params,
        )
        by_topic = {int(topic_id): int(count) for topic_id, count in cursor.fetchall()}
    candidates = sum(by_topic.values())
    items, judgements = planned_judgements(pool=pool, candidates=candidates)
    estimate: dict[str, Any] = {
        "candidates": candidates,
        "items": items,
        "judgements": judgements,
        "cost": round(judgements * float(pool.price_per_judgement), 2),
    }
    if per_topic:
        qids = dict(Topic.objects.filter(pk__in=by_topic).values_list("pk", "qid"))
        estimate["topics"] = sorted(
            ({"qid": qids[pk], "items": count} for pk, count in by_topic.items()), key=lambda t: t["qid"]
        )
    return estimate


def planned_judgements(*, pool: Pool, candidates: int) -> tuple[int, int]:
    """The items and judgements `pool`'s plan asks for among `candidates` items: an adaptive pool judges at
    most `budget` of them, a depth pool all; an item needs `judgements_per_item` judgements, or, with a
    double-judge fraction f, the expected ``1 + (judgements_per_item - 1) × f``; judgements rounded. The
    estimate before the build reads it, and an adaptive pool's judgements required after it
    (`judgements_required`) for the items its strategy has yet to select."""
    items = min(candidates, pool.budget) if pool.adaptive and pool.budget else candidates
    return items, round(items * _per_item(pool))


def _per_item(pool: Pool) -> float:
    """The judgements an item of `pool` is expected to need before its draw (`planned_judgements`)."""
    if pool.double_judge_fraction is not None:
        return 1 + (pool.judgements_per_item - 1) * pool.double_judge_fraction
    return float(pool.judgements_per_item)


def judgements_required(*, pool: Pool, candidates: int, selected_need: int, selected_items: int) -> int:
    """The judgements `pool` requires, as every page, endpoint and command shows it (the statistics, the
    manager's dashboard, the judging page's and the API's progress): `selected_need`, the sum of
    the need (`models.NEED`) of its `selected_items` selected items, and for an adaptive pool also the plan
    for the items its strategy has yet to select (`planned_judgements` among its `candidates`, the pool's
    items, less those selected, at the expected judgements per item). So a fresh adaptive pool needs its
    plan, and one whose strategy has selected its whole budget needs exactly what those items need: with a
    double-judge fraction, the draw of which items are judged several times, not its expectation, and a
    finished pool reads 100%. Only an adaptive pool's figure reads `candidates` and `selected_items`."""
    to_select = items_to_select(pool=pool, candidates=candidates, selected_items=selected_items)
    return selected_need + round(to_select * _per_item(pool)) if to_select else selected_need


def items_to_select(*, pool: Pool, candidates: int, selected_items: int) -> int:
    """The items an adaptive `pool`'s strategy has yet to select: its plan's items (`planned_judgements`
    among its `candidates`) less the `selected_items` it has selected; 0 for a depth pool, which selects
    every item when it is built. While it is above 0 a rater may be given an item that nobody sees yet
    (leasing asks the strategy when nothing selected is open: `leasing.lease_next`), so the judging page
    offers to start, not "all done"."""
    if not pool.adaptive:
        return 0
    return max(planned_judgements(pool=pool, candidates=candidates)[0] - selected_items, 0)


def estimate_added_runs(*, pool: Pool, runs: Iterable[Run]) -> dict[str, Any]:
    """What adding `runs` to `pool` brings: the items the pool gains, which is what `add_runs` adds (for an
    adaptive pool, candidates), and the judgements and cost its plan gains (`planned_judgements`: an
    adaptive pool's budget caps them, so new candidates add none once its candidates fill the budget).

    Before the build, the difference of two `estimate_pool` figures (the same rule as the pool's own
    estimate). Once built, the pairs of the new runs' depth-k lists (`depth_rows`) that are not items
    yet, against the items the pool holds: an item kept for its judgement after the run that brought it
    was taken out is an item already, not one the run adds again."""
    current = list(Run.objects.filter(pk__in=pool.pool_runs.values("run_id")))
    present = {run.pk for run in current}
    new = [run for run in runs if run.pk not in present]
    if pool.status == Pool.Status.BUILT:
        held = PoolItem.objects.filter(pool=pool).count()
        items = _pairs_not_pooled(pool, [run.pk for run in new]) if new else 0
        judgements = (
            planned_judgements(pool=pool, candidates=held + items)[1]
            - planned_judgements(pool=pool, candidates=held)[1]
        )
    else:
        was, will = estimate_pool(pool=pool, runs=current), estimate_pool(pool=pool, runs=[*current, *new])
        items, judgements = will["candidates"] - was["candidates"], will["judgements"] - was["judgements"]
    return {
        "runs": [run.name for run in new],
        "items": items,
        "judgements": judgements,
        "cost": round(judgements * float(pool.price_per_judgement), 2),
    }


def _pairs_not_pooled(pool: Pool, run_ids: list[int]) -> int:
    """The distinct (topic, document) pairs of `run_ids`' depth-k lists that are not items of `pool`."""
    pooled, params = depth_rows(pool, run_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM (SELECT DISTINCT c.topic_id, c.document_id FROM ({pooled}) c) n "
            f"WHERE NOT EXISTS (SELECT 1 FROM {PoolItem._meta.db_table} pi "
            "WHERE pi.pool_id = %s AND pi.topic_id = n.topic_id AND pi.document_id = n.document_id)",
            [*params, pool.pk],
        )
        return int(cursor.fetchone()[0])


def export_pool(*, pool: Pool, out: IO[str]) -> int:
    """Write `qid<TAB>docid<TAB>run,run,...` (run names sorted), one line per item, sorted by qid then
    docid in byte order. Streams; returns the number of lines."""
    from django.db.models.functions import Collate

    collation = "C" if connection.vendor == "postgresql" else "BINARY"
    # From the items, not the provenance: an item kept for its judgement after its only run was removed
    # has no provenance and still gets its line (with an empty run list).
    rows = (
        PoolItem.objects.filter(pool=pool)
        .annotate(q=Collate("topic__qid", collation), d=Collate("document__docid", collation))
        .order_by("q", "d", "id")
        .values_list("id", "q", "d", "provenance__run__name")
    )
    lines = 0
    current: int | None = None
    key: tuple[str, str] = ("", "")
    names: list[str] = []
    for item_id, qid, docid, run_name in rows.iterator(chunk_size=10000):
        if item_id != current:
            if current is not None:
                out.write(f"{key[0]}\t{key[1]}\t{','.join(sorted(names))}\n")
                lines += 1
            current, key, names = item_id, (qid, docid), []
        if run_name is not None:
            names.append(run_name)
    if current is not None:
        out.write(f"{key[0]}\t{key[1]}\t{','.join(sorted(names))}\n")
        lines += 1
    return lines

"""Pool statistics, computed in the database with GROUP BY aggregates (never item by item in Python).

Definitions (TREC pooling statistics):

- **items per topic**: pool items of the topic; *selected* are those raters judge (all of a depth pool,
  the chosen ones of an adaptive pool); *judged* are selected items with
  ``num_judgements >= required_judgements``.
- **contributed** by a run: pool items whose provenance names the run (the run's top-k within the pool's
  topics). **unique**: those of them no other run's provenance names.
- **overlap** of runs a and b: the Jaccard index ``|A ∩ B| / |A ∪ B|`` of their contributed item sets,
  from a self-join of the provenance on the item grouped by run pair; ``|A ∪ B| = |A| + |B| - |A ∩ B|``.
  The diagonal is 1, and two runs that contributed nothing have overlap 1 (as
  :func:`pooling.strategies.overlap_jaccard`). Before the pool is built there is no provenance: the
  overlap is then that of the runs' top-k (rank <= depth) over the pool's topics, read from the run rows,
  which is what the build will contribute for a depth pool.
- **judgements required**: for a depth pool, the sum of the selected items' need (``need``:
  ``required_judgements``, and for a gold item at least one from every rater of the pool: `models.NEED`);
  for an adaptive pool, that sum plus ``(min(budget, candidates) - selected) × J`` for the items its
  strategy has yet to select, where J is the judgements per item (with a double-judge fraction f, J is
  the expected ``1 + (judgements_per_item - 1) × f``), rounded: the plan the estimate before the build
  reads (`pool_reads.planned_judgements`) while nothing is selected, what the selected items need once
  the budget is. The rule is
  `pool_reads.judgements_required`, which every figure of judgements required calls (the judging page's
  and the API's progress, the manager's dashboard).
  **Estimated cost** = judgements required × price per judgement.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, Sum

from pooling.models import JUDGED, Pool, PoolItem, PoolRun, Provenance, Run
from pooling.pool_reads import estimate_pool, items_to_select, judgements_required
from pooling.strategies import jaccard

__all__ = [
    "PoolEstimate",
    "PoolStatistics",
    "RunContribution",
    "TopicCount",
    "judgement_totals",
    "judgement_totals_of",
    "kept_items",
    "overlap_matrix",
    "pool_estimate",
    "pool_progress",
    "pool_statistics",
    "run_contributions",
    "topic_counts",
    "topic_counts_of",
]


#: The three counts every progress figure shows, as aggregates over pool items: items, selected items and
#: judged items (selected, with the judgements they need: `JUDGED`).
ITEM_COUNTS = {
    "n": Count("id"),
    "n_selected": Count("id", filter=Q(selected=True)),
    "n_judged": Count("id", filter=Q(JUDGED, selected=True)),
}


@dataclass
class TopicCount:
    """One topic of a pool: its items, the selected ones (those raters judge) and the judged ones
    (selected, with the judgements they need)."""

    qid: str
    items: int
    selected: int
    judged: int


@dataclass
class RunContribution:
    """One contributing run of a pool: the items its provenance names, and those no other run's does."""

    run: str
    contributed: int
    unique: int


@dataclass
class PoolStatistics:
    """A pool's statistics (`pool_statistics`), as its page shows them and the API answers them: one object
    whose lists are the pool's topics and runs (whole, not pages: the overlap matrix needs every run), the
    Jaccard overlap of each pair of runs (``{run: {run: jaccard}}``, runs in `overlap_runs` order), the
    judgement totals and cost, and the address of the pool's leave-one-run-out report (null until a
    judgement is done, or when that report does not exist: the API sets it)."""

    pool: str
    topics: list[TopicCount]
    runs: list[RunContribution]
    overlap_runs: list[str]
    overlap: dict[str, dict[str, float]]
    items: int
    selected: int
    judged: int
    judgements_required: int
    judgements_done: int
    cost: float
    price_per_judgement: float
    pool_bias_url: str | None = None

    def overlap_rows(self) -> list[list[float]]:
        """The overlap as a matrix, rows and columns in `overlap_runs` order (the page's heatmap)."""
        return [[self.overlap[a][b] for b in self.overlap_runs] for a in self.overlap_runs]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def topic_counts(pool: Pool) -> list[TopicCount]:
    """Items, selected and judged items of every topic of the pool (zeros for a topic without items),
    in qid order. One GROUP BY over the pool's items (`topic_counts_of`)."""
    return topic_counts_of([pool])[pool.pk]


def topic_counts_of(pools: Iterable[Pool]) -> dict[int, list[TopicCount]]:
    """`topic_counts` of each of `pools`, by pool id: one GROUP BY over their items and one query of
    their topics (`Pool.topics_of`), whatever their number, and one more for the topics of items that
    left a pool's segment since its build, if any."""
    pools = list(pools)
    if not pools:
        return {}
    rows = (
        PoolItem.objects.filter(pool_id__in=[pool.pk for pool in pools])
        .values("pool_id", "topic_id")
        .annotate(**ITEM_COUNTS)
        .order_by()
    )
    by_topic: dict[int, dict[int, dict[str, Any]]] = {pool.pk: {} for pool in pools}
    for counted in rows:
        by_topic[counted["pool_id"]][counted["topic_id"]] = dict(counted)
    out: dict[int, list[TopicCount]] = {}
    for pool, topics in zip(pools, Pool.topics_of(pools), strict=True):
        counts = by_topic[pool.pk]
        out[pool.pk] = []
        for topic in topics:
            row = counts.pop(topic.id, {"n": 0, "n_selected": 0, "n_judged": 0})
            out[pool.pk].append(TopicCount(topic.qid, row["n"], row["n_selected"], row["n_judged"]))
    # items of topics that left the segment since the build: still items of the pool
    if strays := {topic_id for counts in by_topic.values() for topic_id in counts}:
        from pooling.models import Topic

        qids = dict(Topic.objects.filter(pk__in=strays).values_list("id", "qid"))
        for pool_id, counts in by_topic.items():
            if counts:
                out[pool_id].extend(
                    TopicCount(qids[topic_id], row["n"], row["n_selected"], row["n_judged"])
                    for topic_id, row in counts.items()
                )
                out[pool_id].sort(key=lambda t: t.qid)
    return out


def run_contributions(pool: Pool) -> list[RunContribution]:
    """Per contributing run (name order, zeros included): items it contributed and items only it did.

    One statement: the provenance joined to each item's provenance count, grouped by run.
    """
    prov = Provenance._meta.db_table
    item = PoolItem._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT p.run_id, COUNT(*), SUM(CASE WHEN c.n = 1 THEN 1 ELSE 0 END)
            FROM {prov} p
            JOIN (SELECT p2.item_id, COUNT(*) AS n
                  FROM {prov} p2 JOIN {item} i ON i.id = p2.item_id
                  WHERE i.pool_id = %s
                  GROUP BY p2.item_id) c ON c.item_id = p.item_id
            GROUP BY p.run_id
            """,
            [pool.pk],
        )
        counts = {run_id: (int(n), int(unique or 0)) for run_id, n, unique in cursor.fetchall()}
    runs = dict(Run.objects.filter(pk__in={*counts, *_pool_run_ids(pool)}).values_list("id", "name"))
    return sorted(
        (RunContribution(runs[run_id], *counts.get(run_id, (0, 0))) for run_id in runs),
        key=lambda r: r.run,
    )


def kept_items(pool: Pool) -> int:
    """Items of the pool that no current run contributed (no provenance): kept for their judgements when
    the runs that brought them were taken out (`pool_build.remove_run`). The runs table's last row; with
    the runs' contributed items it accounts for every item of the pool. One NOT EXISTS probe of the
    provenance's (item, run) key per item of the pool."""
    contributed = Provenance.objects.filter(item=OuterRef("pk"))
    return PoolItem.objects.filter(pool=pool).exclude(Exists(contributed)).count()


def _pool_run_ids(pool: Pool) -> list[int]:
    return list(PoolRun.objects.filter(pool=pool).values_list("run_id", flat=True))


def overlap_matrix(
    pool: Pool, contributions: list[RunContribution] | None = None
) -> tuple[list[str], list[list[float]]]:
    """The runs (name order) and their pairwise Jaccard overlap within the pool (module docstring).

    The intersections come from one self-join of the provenance on the item, grouped by run pair.
    """
    contributions = contributions if contributions is not None else run_contributions(pool)
    names = [c.run for c in contributions]
    if pool.status != Pool.Status.BUILT:
        return names, _topk_overlap(pool, names)
    size = {c.run: c.contributed for c in contributions}
    prov = Provenance._meta.db_table
    item = PoolItem._meta.db_table
    run = Run._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT ra.name, rb.name, COUNT(*)
            FROM {prov} a
            JOIN {prov} b ON b.item_id = a.item_id AND b.run_id > a.run_id
            JOIN {item} i ON i.id = a.item_id
            JOIN {run} ra ON ra.id = a.run_id
            JOIN {run} rb ON rb.id = b.run_id
            WHERE i.pool_id = %s
            GROUP BY ra.name, rb.name
            """,
            [pool.pk],
        )
        shared = {}
        for a, b, n in cursor.fetchall():
            shared[(a, b)] = shared[(b, a)] = int(n)
    matrix = _jaccard(names, size, shared)
    return names, matrix


def _jaccard(names: list[str], size: dict[str, int], shared: dict[tuple[str, str], int]) -> list[list[float]]:
    matrix: list[list[float]] = []
    for a in names:
        line = []
        for b in names:
            both = size.get(a, 0) if a == b else shared.get((a, b), 0)
            line.append(jaccard(both, size.get(a, 0), size.get(b, 0)))
        matrix.append(line)
    return matrix


def _topk_overlap(pool: Pool, names: list[str]) -> list[list[float]]:
    """Jaccard overlap of the runs' top-`depth` (topic, document) sets over the pool's topics, from the run
    rows: the overlap of a pool not built yet. One statement for the sizes and the pairwise intersections."""
    from pooling.pool_build import depth_rows

    ids = dict(Run.objects.filter(pk__in=_pool_run_ids(pool)).values_list("id", "name"))
    if not ids:
        return _jaccard(names, {}, {})
    pooled, params = depth_rows(pool, list(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH top AS (SELECT DISTINCT c.run_id, c.topic_id, c.document_id FROM ({pooled}) c)
            SELECT a.run_id, b.run_id, COUNT(*) FROM top a
            JOIN top b ON b.topic_id = a.topic_id AND b.document_id = a.document_id AND b.run_id >= a.run_id
            GROUP BY a.run_id, b.run_id
            """,
            params,
        )
        size: dict[str, int] = {}
        shared: dict[tuple[str, str], int] = {}
        for a, b, n in cursor.fetchall():
            if a == b:
                size[ids[a]] = int(n)
            else:
                shared[(ids[a], ids[b])] = shared[(ids[b], ids[a])] = int(n)
    return _jaccard(names, size, shared)


def judgement_totals(pool: Pool) -> dict[str, Any]:
    """Items, selected, judged, judgements required and done, and the estimated cost (module docstring)."""
    return judgement_totals_of([pool])[pool.pk]


def judgement_totals_of(pools: Iterable[Pool]) -> dict[int, dict[str, Any]]:
    """`judgement_totals` of each of `pools`, by pool id: one GROUP BY over their items, whatever their
    number (the judging API's list of pools reads them so)."""
    pools = list(pools)
    rows = (
        PoolItem.objects.filter(pool_id__in=[pool.pk for pool in pools])
        .values("pool_id")
        .annotate(
            **ITEM_COUNTS,
            n_required=Sum("need", filter=Q(selected=True)),
            n_done=Sum("num_judgements"),
        )
        .order_by()
    )
    by_pool: dict[int, dict[str, Any]] = {row["pool_id"]: dict(row) for row in rows}
    none = {"n": 0, "n_selected": 0, "n_judged": 0, "n_required": None, "n_done": None}
    return {pool.pk: _totals(pool, by_pool.get(pool.pk, none)) for pool in pools}


def _totals(pool: Pool, totals: dict[str, Any]) -> dict[str, Any]:
    required = judgements_required(
        pool=pool,
        candidates=totals["n"],
        selected_need=int(totals["n_required"] or 0),
        selected_items=totals["n_selected"],
    )
    price = Decimal(str(pool.price_per_judgement))
    return {
        "items": totals["n"],
        "selected": totals["n_selected"],
        "judged": totals["n_judged"],
        "judgements_required": required,
        "judgements_done": int(totals["n_done"] or 0),
        "cost": float(round(required * price, 2)),
        "price_per_judgement": float(price),
    }


@dataclass
class PoolEstimate:
    """A pool's size and estimated cost (`pool_estimate`), the figures its page and the manager's dashboard
    show. Before the build, what building would select (`pool_reads.estimate_pool`): `candidates`, the
    distinct (topic, document) pairs within depth k of the pool's runs; `items`, those it would judge (an
    adaptive pool at most `budget`); `judgements`, what they need by the plan's judgements per item. Once
    built, what its items require (`judgement_totals`): `candidates`, its items (a judged item kept after
    the run that brought it was taken out included); `items`, its selected items and those an adaptive
    pool's strategy has yet to select; `judgements`, its judgements required. `cost` = judgements × price
    per judgement."""

    candidates: int
    items: int
    judgements: int
    cost: float


def pool_estimate(pool: Pool) -> PoolEstimate:
    """The `PoolEstimate` of `pool`: before the build (`Pool.Status.BUILT`) `pool_reads.estimate_pool`,
    the figure the pool page's "Before building" shows; once built the judgements its items require and
    their cost as `judgement_totals` gives them (the page's judgements required and estimated cost, the
    dashboard's estimate), whatever runs were added or taken out since."""
    if pool.status != Pool.Status.BUILT:
        planned = estimate_pool(pool=pool)
        return PoolEstimate(
            candidates=planned["candidates"],
            items=planned["items"],
            judgements=planned["judgements"],
            cost=planned["cost"],
        )
    totals = judgement_totals(pool)
    to_select = items_to_select(pool=pool, candidates=totals["items"], selected_items=totals["selected"])
    return PoolEstimate(
        candidates=totals["items"],
        items=totals["selected"] + to_select,
        judgements=totals["judgements_required"],
        cost=totals["cost"],
    )


def pool_statistics(pool: Pool) -> PoolStatistics:
    """Everything the statistics page and endpoint show, in a handful of aggregate queries."""
    contributions = run_contributions(pool)
    names, matrix = overlap_matrix(pool, contributions)
    return PoolStatistics(
        pool=pool.name,
        topics=topic_counts(pool),
        runs=contributions,
        overlap_runs=names,
        overlap={a: dict(zip(names, row, strict=True)) for a, row in zip(names, matrix, strict=True)},
        **judgement_totals(pool),
    )


def pool_progress(pools: list[Pool]) -> dict[int, dict[str, int]]:
    """For each pool id: runs, selected items and judged items (``num_judgements >= required``).

    Two GROUP BY queries whatever the number of pools.
    """
    ids = [pool.pk for pool in pools]
    out = {pk: {"runs": 0, "items": 0, "selected": 0, "judged": 0} for pk in ids}
    rows = PoolItem.objects.filter(pool_id__in=ids).values("pool_id").annotate(**ITEM_COUNTS).order_by()
    counted: list[dict[str, Any]] = [dict(row) for row in rows]
    for counts in counted:
        out[counts["pool_id"]].update(
            items=counts["n"], selected=counts["n_selected"], judged=counts["n_judged"]
        )
    runs = PoolRun.objects.filter(pool_id__in=ids).values("pool_id").annotate(n=Count("id")).order_by()
    for link in runs:
        out[link["pool_id"]]["runs"] = link["n"]
    return out

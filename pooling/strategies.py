"""Pure pooling algorithms: depth-k pools, adaptive judging order, pool statistics.

Nothing here imports Django; every function takes plain data and is usable from a notebook. The inputs are
per topic ``ranked: dict[run, list[docid]]`` — each run's ranked list for one topic, already in trec_eval
order (see :func:`trec_order`) — or per campaign ``ranked_by_topic: dict[qid, dict[run, list[docid]]]``
(see :func:`rankings_by_topic`). Qrels are ``dict[qid, dict[docid, int]]``, as pytrec_eval takes them.

Strategies, by name in :data:`STRATEGIES`:

- ``depth``: judge in depth-k order (:func:`depth_order`), the non-adaptive baseline.
- ``mtf``: move-to-front (Cormack, Palmer & Clarke 1998), :class:`MoveToFrontChooser`.
- ``bandit-maxmean`` / ``bandit-thompson``: multi-armed bandits (Losada, Parapar & Barreiro 2016-17),
  :class:`MaxMeanChooser` and :class:`ThompsonChooser`.
- ``cal``: continuous active learning (Cormack & Grossman's BMI), :class:`pooling.cal.CalChooser`: a
  classifier on the topic's and the documents' texts (:class:`TopicTexts`), retrained in growing batches.

The code lives in modules named for what they hold — :mod:`pooling.ranking` (trec order, depth-k pools),
:mod:`pooling.choosers` (the chooser protocol and the run-based choosers), :mod:`pooling.cal` — and this
module, which re-exports them, holds the registry entry points, budgets, the simulation and pool
statistics.

A *chooser* is a small state machine the web app calls between judgements: :meth:`Chooser.next_document`
names the document to judge next, :meth:`Chooser.record` reports its grade, :meth:`Chooser.state` returns
a JSON-serialisable snapshot and :meth:`Chooser.from_state` resumes from it. Everything random comes from
a seeded ``numpy.random.Generator`` whose state is part of the snapshot, so a pool is reproducible (for a
fixed numpy version, whose stream numpy does not promise across versions) and a resumed chooser continues
exactly as an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping

from pooling.bandits import MaxMeanChooser, ThompsonChooser
from pooling.cal import CalChooser
from pooling.choosers import (
    CHOOSERS,
    STATE_VERSION,
    Chooser,
    DepthChooser,
    MoveToFrontChooser,
    TopicTexts,
)
from pooling.ranking import (
    Item,
    Provenance,
    Ranked,
    _truncated,
    depth_k_pool,
    depth_k_pool_by_topic,
    depth_order,
    rankings_by_topic,
    trec_order,
)

__all__ = [
    "STATE_VERSION",
    "STRATEGIES",
    "CalChooser",
    "Chooser",
    "DepthChooser",
    "MaxMeanChooser",
    "MoveToFrontChooser",
    "Provenance",
    "ThompsonChooser",
    "TopicTexts",
    "allocate_budget",
    "depth_k_pool",
    "depth_k_pool_by_topic",
    "depth_order",
    "kendall_tau",
    "leave_one_out_qrels",
    "make_chooser",
    "jaccard",
    "overlap_jaccard",
    "pool_contributions",
    "rankings_by_topic",
    "simulate",
    "topic_seed",
    "topk_sets",
    "trec_order",
    "unique_contributions",
]

Qrels = Mapping[str, Mapping[str, int]]

STRATEGIES: tuple[str, ...] = tuple(
    cls.strategy for cls in (DepthChooser, MoveToFrontChooser, MaxMeanChooser, ThompsonChooser, CalChooser)
)
"""Strategy names, in the order they are offered: ``depth``, ``mtf``, ``bandit-maxmean``,
``bandit-thompson``, ``cal``. Named here rather than read from :data:`CHOOSERS`, whose order is that in
which the modules happened to be imported (``pooling.cal`` imported first put ``cal`` third)."""


def make_chooser(
    strategy: str,
    ranked: Ranked,
    *,
    depth: int | None,
    seed: int,
    relevance_level: int = 1,
    texts: TopicTexts | None = None,
) -> Chooser:
    """A fresh chooser for one topic's ``ranked`` lists. ``depth`` None means the whole lists; ``texts``
    are what ``cal`` learns from (the others ignore them)."""
    if strategy not in CHOOSERS:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return CHOOSERS[strategy](ranked, depth=depth, seed=seed, relevance_level=relevance_level, texts=texts)


def topic_seed(seed: int, qid: str) -> int:
    """The seed of one topic's chooser in a campaign seeded with ``seed``.

    The first 8 bytes (big-endian) of SHA-256 of ``f"{seed}:{qid}"``: stable across processes and Python
    versions (unlike ``hash``), and different topics get unrelated streams.
    """
    return int.from_bytes(hashlib.sha256(f"{seed}:{qid}".encode()).digest()[:8], "big")


def allocate_budget(budget: int, capacities: Mapping[str, int]) -> dict[str, int]:
    """Split a global budget of judgements across topics: even shares, leftovers redistributed.

    Water-filling: find the largest level L such that giving every topic ``min(capacity, L)`` stays within
    the budget; give that, then one more each to the first ``leftover`` topics (sorted qid order) whose
    capacity exceeds L. So every topic gets an even share capped at its capacity (the number of candidates
    it has), what small topics cannot use goes to the others, the result sums to
    ``min(budget, sum(capacities))``, and no topic gets more than one above a topic that still has room.
    This is the classic per-topic setting (each topic then runs its own chooser); the cross-topic "global"
    bandit of Losada et al. is not implemented.
    """
    if budget < 0:
        raise ValueError("budget must be non-negative")
    qids = sorted(capacities)
    caps = {qid: max(0, int(capacities[qid])) for qid in qids}

    def spent(level: int) -> int:
        return sum(min(cap, level) for cap in caps.values())

    low, high = 0, max(caps.values(), default=0)
    while low < high:  # largest level with spent(level) <= budget
        middle = (low + high + 1) // 2
        if spent(middle) <= budget:
            low = middle
        else:
            high = middle - 1
    allocation = {qid: min(caps[qid], low) for qid in qids}
    leftover = budget - spent(low)
    for qid in qids:
        if leftover == 0:
            break
        if caps[qid] > low:
            allocation[qid] += 1
            leftover -= 1
    return allocation


def simulate(
    strategy: str,
    ranked_by_topic: Mapping[str, Ranked],
    qrels: Qrels,
    *,
    budget: int,
    depth: int | None,
    seed: int,
    relevance_level: int = 1,
    texts_by_topic: Mapping[str, TopicTexts] | None = None,
) -> list[Item]:
    """Replay known ``qrels`` as the judge and return the judging order as ``(qid, docid)`` pairs.

    The budget is split across topics by :func:`allocate_budget` (capacity = the topic's candidates within
    ``depth``). Each topic runs its own chooser, seeded with :func:`topic_seed`, for its share; topics are
    judged one after another in sorted qid order (raters work topic by topic). The judge's grade is
    ``qrels[qid][docid]``; a document absent from the qrels is graded 0 (non-relevant). ``texts_by_topic``
    gives ``cal`` the topics' and documents' texts (a topic absent from it has none).
    """
    choosers = {
        qid: make_chooser(
            strategy,
            ranked_by_topic[qid],
            depth=depth,
            seed=topic_seed(seed, qid),
            relevance_level=relevance_level,
            texts=(texts_by_topic or {}).get(qid),
        )
        for qid in sorted(ranked_by_topic)
    }
    allocation = allocate_budget(budget, {qid: len(c._candidates) for qid, c in choosers.items()})
    order: list[Item] = []
    for qid, chooser in choosers.items():
        topic_qrels = qrels.get(qid, {})
        for _ in range(allocation[qid]):
            docid = chooser.next_document()
            if docid is None:  # unreachable: the allocation never exceeds the candidates
                break
            chooser.record(docid, topic_qrels.get(docid, 0))
            order.append((qid, docid))
    return order


# --------------------------------------------------------------------------------------------------------
# Pool statistics and pool bias (Zobel 1998, leave one run out)


def topk_sets(ranked_by_topic: Mapping[str, Ranked], k: int) -> dict[str, set[Item]]:
    """Each run's top-k over all topics: ``{run: {(qid, docid), ...}}`` (runs absent from every topic
    are absent)."""
    out: dict[str, set[Item]] = {}
    for qid, ranked in ranked_by_topic.items():
        for run, docs in _truncated(ranked, k).items():
            out.setdefault(run, set()).update((qid, docid) for docid in docs)
    return out


def pool_contributions(
    provenance: Mapping[str, Mapping[str, Iterable[tuple[str, int]]]],
) -> dict[str, set[Item]]:
    """Invert per-topic provenance (``{qid: {docid: [(run, rank), ...]}}``) to ``{run: {(qid, docid)}}``."""
    out: dict[str, set[Item]] = {}
    for qid, items in provenance.items():
        for docid, pairs in items.items():
            for run, _rank in pairs:
                out.setdefault(run, set()).add((qid, docid))
    return out


def overlap_jaccard(topk: Mapping[str, set[Item]]) -> dict[str, dict[str, float]]:
    """Pairwise Jaccard overlap of runs' item sets: ``J[a][b] = |A ∩ B| / |A ∪ B|``.

    Symmetric, ``J[a][a] = 1``; two empty sets have overlap 1.0 (identical sets, as scipy's Jaccard
    distance 0 for two all-false vectors). Runs in sorted order.
    """
    runs = sorted(topk)
    matrix: dict[str, dict[str, float]] = {run: {} for run in runs}
    for i, a in enumerate(runs):
        for b in runs[i:]:
            matrix[a][b] = matrix[b][a] = jaccard(len(topk[a] & topk[b]), len(topk[a]), len(topk[b]))
    return matrix


def jaccard(shared: int, size_a: int, size_b: int) -> float:
    """The Jaccard index of two sets from their sizes and the size of their intersection:
    ``|A ∩ B| / |A ∪ B|``, and 1.0 for two empty sets (identical sets, as scipy's Jaccard distance 0 for
    two all-false vectors). `overlap_jaccard` and the pool statistics' overlap (`pooling.stats`, from
    counts the database makes) both read it from here."""
    union = size_a + size_b - shared
    return 1.0 if union == 0 else shared / union


def unique_contributions(topk: Mapping[str, set[Item]]) -> dict[str, set[Item]]:
    """For each run, the items no other run has: ``A \\ ⋃ others``.

    Pass :func:`topk_sets` (or :func:`pool_contributions` of a pool's provenance) to get each run's unique
    items in the pool; ``len`` gives the "unique" column of the pool statistics.
    """
    counts: dict[Item, int] = {}
    for items in topk.values():
        for item in items:
            counts[item] = counts.get(item, 0) + 1
    return {run: {item for item in topk[run] if counts[item] == 1} for run in sorted(topk)}


def kendall_tau(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> float:
    """Kendall's τ-b between two system rankings given as ``{run: score}`` over the same runs.

    ``scipy.stats.kendalltau`` (variant ``b``, which corrects for ties) on the two score vectors, runs
    aligned by name. Different run sets raise ``ValueError``; fewer than two runs, or a ranking whose
    scores are all equal, gives NaN (τ is undefined).
    """
    if set(scores_a) != set(scores_b):
        raise ValueError("both rankings must score the same runs")
    runs = sorted(scores_a)
    if len(runs) < 2:
        return math.nan
    a = [float(scores_a[run]) for run in runs]
    b = [float(scores_b[run]) for run in runs]
    if len(set(a)) == 1 or len(set(b)) == 1:
        return math.nan
    from scipy.stats import kendalltau  # here: scipy.stats takes a second; every process loads this module

    return float(kendalltau(a, b, variant="b").statistic)


def leave_one_out_qrels(
    qrels: Qrels, provenance: Mapping[str, Mapping[str, Iterable[tuple[str, int]]]], run: str
) -> dict[str, dict[str, int]]:
    """Qrels as if ``run`` had not contributed to the pool (Zobel 1998, leave-one-run-out).

    ``provenance`` is the per-topic ``{qid: {docid: [(run, rank), ...]}}`` of the pool. Every judged item
    whose provenance names ``run`` and no other run is removed — it becomes unjudged, not non-relevant.
    Items without provenance (judged by other means) are kept. Every topic of ``qrels`` stays, possibly
    with fewer (or no) judged documents. The input is not modified.
    """
    out: dict[str, dict[str, int]] = {}
    for qid, judged in qrels.items():
        items = provenance.get(qid, {})
        kept: dict[str, int] = {}
        for docid, grade in judged.items():
            runs = {r for r, _rank in items.get(docid, ())}
            if runs != {run}:
                kept[docid] = grade
        out[qid] = kept
    return out

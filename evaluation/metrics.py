"""Ranking metrics with trec_eval's semantics, vectorised with numpy (pure: no Django).

Every metric takes a ``Ranked`` — the ranked lists of all topics, flattened into arrays, built by
``rank_lists`` — and returns one float64 value per topic (``Ranked.topics`` order). ``evaluate`` does it all
for a notebook: dicts or ``trec_io`` tables in, a ``Result`` with per-topic values and means out.

Conventions, exactly as trec_eval 10:

- The ranked list of a topic is its run rows ordered by score descending (as doubles), ties broken by
  docid descending in byte order (``strcmp(b, a)``); rank 1 is the first. The run's rank column is ignored.
- Each retrieved document has a label: its qrels grade if the qrels judge it with a grade >= 0; otherwise
  it is unjudged — either absent from the qrels (``UNPOOLED``) or present with a negative grade, "in the
  pool but not judged" (``UNJUDGED``).
- Relevant means judged with grade >= the relevance level (default 1). R = number of judged documents of
  the topic with grade >= the level, whether retrieved or not; N = judged documents with 0 <= grade < level.
- Unjudged policy ``nonrelevant`` (trec_eval's default): unjudged documents stay in the list and count as
  non-relevant everywhere (bpref and infAP have their own rules, see them). ``condensed`` (trec_eval -J):
  unjudged documents are removed from the list first and the rest re-ranked 1, 2, ...
- Depth (trec_eval -M): only the first ``depth`` documents of each list are used, cut before condensing.
- A measure with a zero denominator (R = 0, an ideal DCG of 0) is 0.
- Averaging ``common`` (trec_eval's default): over qrels topics the run has. ``all`` (trec_eval -c): over all
  qrels topics, a topic the run lacks scoring 0 on every measure (num_rel still counts its R). Run topics
  without qrels are ignored, as trec_eval does. The aggregate of ``num_ret``, ``num_rel`` and
  ``num_rel_ret`` is their sum, as trec_eval prints it; every other measure is averaged.

Longer than 400 lines: every trec_eval measure is here with the docstring that defines it, beside the
ranked lists they share and trec_eval's measure syntax. A split by family (binary, graded, set, measure
names) is not done yet.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from pooling.trec_io import KeyIndex, QrelsTable, RunTable, trec_order

__all__ = [
    "DEFAULT_CUTOFFS",
    "MEASURE_FAMILIES",
    "UNJUDGED",
    "UNPOOLED",
    "MissingTopicsWarning",
    "PairedTest",
    "Ranked",
    "Result",
    "Rows",
    "P_k",
    "Rprec",
    "bpref",
    "evaluate",
    "infAP",
    "judged_k",
    "map",
    "ndcg",
    "ndcg_cut_k",
    "num_rel",
    "num_rel_ret",
    "num_ret",
    "paired_randomisation_test",
    "paired_t_test",
    "parse_measures",
    "rank_lists",
    "recall_k",
    "recip_rank",
    "segment_means",
]

Gain = Literal["linear", "exp"]
Unjudged = Literal["nonrelevant", "condensed"]
Average = Literal["common", "all"]
Version = Literal["10", "9"]

UNPOOLED = -1  # retrieved, absent from the qrels (trec_eval's RELVALUE_NONPOOL)
UNJUDGED = -2  # retrieved, in the qrels with a negative grade (trec_eval's RELVALUE_UNJUDGED)
INFAP_EPSILON = 0.00001  # trec_eval's INFAP_EPSILON

#: trec_eval's default cutoffs for P, recall and ndcg_cut (also used for judged).
DEFAULT_CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


class MissingTopicsWarning(UserWarning):
    """Averaging over common topics while the run lacks some qrels topics."""


# ---------------------------------------------------------------------------------------------------------
# Ranked lists


@dataclass(eq=False)
class Ranked:
    """The evaluated ranked lists of every qrels topic, flattened.

    Rows ``offsets[t]:offsets[t + 1]`` are topic t's list in rank order; ``label[i]`` is the qrels grade of
    row i, or ``UNPOOLED`` / ``UNJUDGED``. ``judged`` holds, per topic, the grades >= 0 of every judged
    document (retrieved or not) in descending order, at ``judged_offsets`` — the material of the ideal
    ranking. ``present[t]`` says whether the run has topic t at all.
    """

    topics: list[str]
    offsets: np.ndarray
    label: np.ndarray
    judged: np.ndarray
    judged_offsets: np.ndarray
    present: np.ndarray
    relevance_level: int = 1
    condensed: bool = False  # unjudged documents were dropped (-J)
    _terms: dict[tuple[str, Gain], tuple[np.ndarray, ...]] = field(default_factory=dict, repr=False)

    @property
    def n_topics(self) -> int:
        return len(self.topics)

    def topic_of(self, rows: np.ndarray) -> np.ndarray:
        """Topic index of the given (sorted) rows."""
        return np.searchsorted(self.offsets, rows, side="right") - 1

    def select(self, mask: np.ndarray) -> Rows:
        """The rows satisfying ``mask``, with their topic and 1-based rank."""
        rows = np.flatnonzero(mask)
        topic = self.topic_of(rows)
        return Rows(rows, topic, rows - self.offsets[topic] + 1)

    @cached_property
    def interpolation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """What interpolated precision reads at every recall fraction (``_interpolation``): computed once
        for all of iprec_at_recall's and 11pt_avg's fractions."""
        return _interpolation(self)

    @cached_property
    def row_topic(self) -> np.ndarray:
        """The topic index of every row."""
        return np.repeat(np.arange(self.n_topics), np.diff(self.offsets))

    @cached_property
    def row_rank(self) -> np.ndarray:
        """The 1-based rank of every row in its topic's list."""
        return np.arange(len(self.label)) - self.offsets[self.row_topic] + 1

    @cached_property
    def relevant(self) -> Rows:
        """Retrieved relevant documents: grade >= the relevance level."""
        return self.select(self.label >= self.relevance_level)

    @cached_property
    def judged_rows(self) -> Rows:
        """Retrieved judged documents: grade >= 0."""
        return self.select(self.label >= 0)

    @cached_property
    def nonrelevant(self) -> Rows:
        """Retrieved judged non-relevant documents: 0 <= grade < the relevance level."""
        judged = self.judged_rows
        keep = self.label[judged.rows] < self.relevance_level
        return Rows(judged.rows[keep], judged.topic[keep], judged.rank[keep])

    @cached_property
    def positive(self) -> Rows:
        """Retrieved documents with a grade > 0 (the only ones with a gain)."""
        return self.select(self.label > 0)

    def dcg_terms(self, gain: Gain) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(topic, rank, gain / log2(rank + 1)) of every retrieved document with a grade > 0: the terms of
        DCG, computed once for every cutoff."""
        if ("dcg", gain) not in self._terms:
            pos = self.positive
            self._terms["dcg", gain] = (
                pos.topic,
                pos.rank,
                _gains(self.label[pos.rows], gain) / np.log2(pos.rank + 1.0),
            )
        topic, rank, terms = self._terms["dcg", gain]
        return topic, rank, terms

    def ideal_dcg_terms(self, gain: Gain) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(topic, position, gain / log2(position + 1)) of every judged document with a grade > 0 in the
        ideal ranking (``judged``): the terms of the ideal DCG, computed once for every cutoff."""
        if ("ideal", gain) not in self._terms:
            topic, position = self.ideal_positions
            rows = self.judged > 0
            self._terms["ideal", gain] = (
                topic[rows],
                position[rows],
                _gains(self.judged[rows], gain) / np.log2(position[rows] + 1.0),
            )
        topic, position, terms = self._terms["ideal", gain]
        return topic, position, terms

    @cached_property
    def ideal_positions(self) -> tuple[np.ndarray, np.ndarray]:
        """Per judged document (``judged``: grades >= 0 by grade descending, per topic): its topic and its
        1-based position in the ideal ranking. Shared: not to be written to."""
        topic = np.repeat(np.arange(self.n_topics), np.diff(self.judged_offsets))
        return topic, np.arange(len(self.judged)) - self.judged_offsets[topic] + 1

    @cached_property
    def num_rel(self) -> np.ndarray:
        """R per topic: judged documents with grade >= the relevance level."""
        topic = self.ideal_positions[0]
        return np.bincount(topic[self.judged >= self.relevance_level], minlength=self.n_topics)

    @cached_property
    def num_nonrel(self) -> np.ndarray:
        """N per topic: judged documents with 0 <= grade < the relevance level."""
        return np.diff(self.judged_offsets) - self.num_rel

    def count(self, topic: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Per topic: how many of the given row topics (or the sum of their weights)."""
        return np.bincount(topic, weights=weights, minlength=self.n_topics).astype(np.float64, copy=False)

    def count_above(self, marked: np.ndarray, rows: Rows) -> np.ndarray:
        """For each of ``rows``: rows of the same topic ranked strictly above it among ``marked`` (row
        indices, ascending)."""
        return np.searchsorted(marked, rows.rows) - np.searchsorted(marked, self.offsets[rows.topic])

    @staticmethod
    def rank_among(rows: Rows) -> np.ndarray:
        """For each of ``rows``: its 1-based position among ``rows`` of its topic."""
        n_topics = int(rows.topic[-1]) + 1 if len(rows.topic) else 0
        counts = np.bincount(rows.topic, minlength=n_topics)
        first = np.cumsum(counts) - counts
        return np.arange(len(rows.rows)) - first[rows.topic] + 1


@dataclass(frozen=True)
class Rows:
    """A subset of a Ranked's rows (in order), with the topic index and 1-based rank of each."""

    rows: np.ndarray
    topic: np.ndarray
    rank: np.ndarray


_JOIN_WINDOW = 1 << 16  # run and qrels rows joined at once: their hash table stays in cache
_JOIN_SLOTS_PER_KEY = 8  # most run rows are not in the qrels: a sparse table ends their probes at once


def _join(
    qrels: QrelsTable,
    run: RunTable,
    run_topic: np.ndarray,
    qrels_topic: np.ndarray,
    run_rows: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the run rows whose (topic, docid) the qrels have, and the matching qrels rows.

    The run is given grouped by topic: position i is row ``run_rows[i]`` of ``run`` (row i if None), of
    topic ``run_topic[i]`` (ascending). Rows are matched by their 64-bit key (see ``trec_io.hash_bytes``),
    a window of whole topics at a time: the qrels keys of those topics in an open-addressing hash table
    (``trec_io.KeyIndex``, small enough to stay in cache) probed by the run's keys of the same topics; a key
    match is confirmed by comparing topic and docid. If two qrels rows of a window share a key the join is
    done exactly with a dict instead.
    """
    none = (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))
    if not len(qrels) or not len(run_topic):
        return none
    n_topics = int(max(run_topic[-1], qrels_topic.max())) + 1
    qorder = (
        None if not np.any(qrels_topic[1:] < qrels_topic[:-1]) else np.argsort(qrels_topic, kind="stable")
    )
    qkeys = qrels.key if qorder is None else qrels.key[qorder]
    rkeys = run.key if run_rows is None else run.key[run_rows]
    topics = np.arange(n_topics + 1)
    r_bounds = np.searchsorted(run_topic, topics)
    q_bounds = np.searchsorted(qrels_topic if qorder is None else qrels_topic[qorder], topics)
    both = r_bounds + q_bounds
    positions: list[np.ndarray] = []
    sorted_rows: list[np.ndarray] = []
    t0 = 0
    while t0 < n_topics:
        t1 = max(int(np.searchsorted(both, both[t0] + _JOIN_WINDOW, side="right")) - 1, t0 + 1)
        ra, rb, qa, qb = int(r_bounds[t0]), int(r_bounds[t1]), int(q_bounds[t0]), int(q_bounds[t1])
        t0 = t1
        if ra == rb or qa == qb:
            continue
        index = KeyIndex(qkeys[qa:qb], slots_per_key=_JOIN_SLOTS_PER_KEY)
        if not index.unique:  # two qrels rows share a key
            rdocids = run.docid if run_rows is None else run.docid[run_rows]
            return _join_exact(run_topic, rdocids, qrels_topic, qrels.docid)
        found = index.lookup(rkeys[ra:rb])
        hit = np.flatnonzero(found >= 0)
        positions.append(hit + ra)
        sorted_rows.append(found[hit] + qa)
    if not positions:
        return none
    position = np.concatenate(positions)
    qrels_rows = np.concatenate(sorted_rows)
    if qorder is not None:
        qrels_rows = qorder[qrels_rows]
    rows = position if run_rows is None else run_rows[position]
    right = (run_topic[position] == qrels_topic[qrels_rows]) & (run.docid[rows] == qrels.docid[qrels_rows])
    return position[right], qrels_rows[right]


def _join_exact(
    run_topic: np.ndarray, run_docid: np.ndarray, qrels_topic: np.ndarray, qrels_docid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`_join` by a dict of (topic, docid), for qrels in which two rows share a key: the positions of the
    run rows (topics ``run_topic``, docids ``run_docid``) the qrels have, and the matching qrels rows."""
    index = {
        (t, d): i for i, (t, d) in enumerate(zip(qrels_topic.tolist(), qrels_docid.tolist(), strict=True))
    }
    found = np.array(
        [index.get(key, -1) for key in zip(run_topic.tolist(), run_docid.tolist(), strict=True)],
        dtype=np.intp,
    )
    position = np.flatnonzero(found >= 0)
    return position, found[position]


def _as_qrels(qrels: QrelsTable | Mapping[str, Mapping[str, int]]) -> QrelsTable:
    return qrels if isinstance(qrels, QrelsTable) else QrelsTable.from_dict(qrels)


def _as_run(run: RunTable | Mapping[str, Mapping[str, float]]) -> RunTable:
    return run if isinstance(run, RunTable) else RunTable.from_dict(run)


def rank_lists(
    qrels: QrelsTable | Mapping[str, Mapping[str, int]],
    run: RunTable | Mapping[str, Mapping[str, float]],
    *,
    relevance_level: int = 1,
    unjudged: Unjudged = "nonrelevant",
    depth: int | None = None,
) -> Ranked:
    """Build the ranked, labelled lists of every qrels topic (topics sorted by qid in byte order).

    Run rows of topics absent from the qrels are dropped. ``depth`` keeps the first ``depth`` documents of
    each list; then ``unjudged="condensed"`` removes the unjudged ones (trec_eval applies -M before -J).
    """
    if unjudged not in ("nonrelevant", "condensed"):
        raise ValueError(f"unjudged must be 'nonrelevant' or 'condensed', not {unjudged!r}")
    if depth is not None and depth < 1:
        raise ValueError(f"depth must be a positive integer, not {depth!r}")
    if relevance_level < 0:
        raise ValueError(f"relevance_level must be >= 0, not {relevance_level!r}")
    qt = _as_qrels(qrels)
    rt = _as_run(run)

    topics = sorted(set(qt.topic_ids), key=lambda q: q.encode("utf-8"))
    code = {q: i for i, q in enumerate(topics)}
    n_topics = len(topics)
    q_map = np.array([code[q] for q in qt.topic_ids], dtype=np.int32)
    r_map = np.array([code.get(q, -1) for q in rt.topic_ids], dtype=np.int32)
    qrels_topic = q_map[qt.topic] if len(qt) else np.zeros(0, dtype=np.int32)
    run_topic = r_map[rt.topic] if len(rt) else np.zeros(0, dtype=np.int32)

    present = np.zeros(n_topics, dtype=bool)
    present[r_map[r_map >= 0]] = True

    # Rank the rows of the qrels' topics, then label each from the qrels.
    rows: np.ndarray | None = None  # the run row at each position (None: position i is row i)
    if len(run_topic) and run_topic.min() < 0:
        rows = np.flatnonzero(run_topic >= 0)
        run_topic, score, docid = run_topic[rows], rt.score[rows], rt.docid[rows]
    else:
        score, docid = rt.score, rt.docid
    order = trec_order(run_topic, score, docid, n_topics)
    if order is not None:
        run_topic = run_topic[order]
        rows = order if rows is None else rows[order]
    matched, qrels_rows = _join(qt, rt, run_topic, qrels_topic, rows)
    label = np.full(len(run_topic), UNPOOLED, dtype=np.int64)
    grade = qt.grade[qrels_rows]
    label[matched] = np.where(grade < 0, UNJUDGED, grade)
    offsets = np.concatenate(([0], np.cumsum(np.bincount(run_topic, minlength=n_topics))))

    if depth is not None or unjudged == "condensed":
        keep = np.ones(len(label), dtype=bool)
        if depth is not None:
            keep &= np.arange(len(label)) - offsets[run_topic] < depth
        if unjudged == "condensed":
            keep &= label >= 0
        label = label[keep]
        offsets = np.concatenate(([0], np.cumsum(np.bincount(run_topic[keep], minlength=n_topics))))

    # The ideal ranking's material: every judged grade (>= 0) per topic, descending.
    judged_rows = np.flatnonzero(qt.grade >= 0) if len(qt) else np.zeros(0, dtype=np.intp)
    jt = qrels_topic[judged_rows]
    jg = qt.grade[judged_rows]
    jorder = _by_topic_then_grade_descending(jt, jg, n_topics)
    judged = jg[jorder]
    judged_offsets = np.concatenate(([0], np.cumsum(np.bincount(jt, minlength=n_topics))))

    return Ranked(
        topics=topics,
        offsets=offsets.astype(np.intp, copy=False),
        label=label.astype(np.int64, copy=False),
        judged=judged.astype(np.int64, copy=False),
        judged_offsets=judged_offsets.astype(np.intp, copy=False),
        present=present,
        relevance_level=relevance_level,
        condensed=unjudged == "condensed",
    )


def _by_topic_then_grade_descending(topic: np.ndarray, grade: np.ndarray, n_topics: int) -> np.ndarray:
    """``np.lexsort((-grade, topic))``: as a radix sort of one 16-bit key when topic and grade fit in one."""
    if len(grade):
        top = int(grade.max())
        span = top - int(grade.min()) + 1
        if n_topics * span <= 1 << 16:
            key = (topic.astype(np.int64) * span + (top - grade)).astype(np.uint16)
            return np.argsort(key, kind="stable")
    return np.lexsort((-grade, topic))


# ---------------------------------------------------------------------------------------------------------
# Metrics: each returns one value per topic of the Ranked.


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(len(num), dtype=np.float64)
    nz = den > 0
    out[nz] = num[nz] / den[nz]
    return out


def num_ret(ranked: Ranked) -> np.ndarray:
    """Number of documents in the evaluated list (after the depth limit, and condensing if asked)."""
    return np.diff(ranked.offsets).astype(np.float64)


def num_rel(ranked: Ranked) -> np.ndarray:
    """R: judged documents of the topic with grade >= the relevance level, retrieved or not."""
    return ranked.num_rel.astype(np.float64)


def num_rel_ret(ranked: Ranked) -> np.ndarray:
    """Relevant documents (grade >= the level) in the evaluated list."""
    return ranked.count(ranked.relevant.topic)


def P_k(ranked: Ranked, k: int) -> np.ndarray:
    """Precision at k: relevant documents among ranks 1..k, divided by k (by k even when fewer than k were
    retrieved). Unjudged documents count as non-relevant."""
    rel = ranked.relevant
    return ranked.count(rel.topic[rel.rank <= k]) / k


def recall_k(ranked: Ranked, k: int) -> np.ndarray:
    """Recall at k: relevant documents among ranks 1..k, divided by R (0 if R = 0)."""
    rel = ranked.relevant
    return _safe_div(ranked.count(rel.topic[rel.rank <= k]), ranked.num_rel)


def recip_rank(ranked: Ranked) -> np.ndarray:
    """Reciprocal rank: 1 / rank of the first relevant document, 0 if none is retrieved."""
    out = np.zeros(ranked.n_topics, dtype=np.float64)
    rel = ranked.relevant
    if len(rel.rows):
        first = np.flatnonzero(np.concatenate(([True], rel.topic[1:] != rel.topic[:-1])))
        out[rel.topic[first]] = 1.0 / rel.rank[first]
    return out


def map(ranked: Ranked) -> np.ndarray:  # noqa: A001 - trec_eval's name
    """Average precision: Σ over relevant retrieved documents of (relevant documents at or above it) / its
    rank, divided by R (0 if R = 0). Unretrieved relevant documents thus contribute 0."""
    rel = ranked.relevant
    precision = ranked.rank_among(rel) / rel.rank
    return _safe_div(ranked.count(rel.topic, precision), ranked.num_rel)


def Rprec(ranked: Ranked) -> np.ndarray:
    """R-precision: relevant documents among ranks 1..R, divided by R (0 if R = 0)."""
    rel = ranked.relevant
    r = ranked.num_rel
    return _safe_div(ranked.count(rel.topic[rel.rank <= r[rel.topic]]), r)


def _gains(values: np.ndarray, gain: Gain) -> np.ndarray:
    positive = np.maximum(values, 0).astype(np.float64)
    if gain == "linear":
        return positive
    if gain == "exp":
        return np.exp2(positive) - 1.0
    raise ValueError(f"gain must be 'linear' or 'exp', not {gain!r}")


def _dcg(ranked: Ranked, k: int | None, gain: Gain) -> np.ndarray:
    return _sum_to(ranked, *ranked.dcg_terms(gain), k)


def _ideal_dcg(ranked: Ranked, k: int | None, gain: Gain) -> np.ndarray:
    return _sum_to(ranked, *ranked.ideal_dcg_terms(gain), k)


def _sum_to(
    ranked: Ranked, topic: np.ndarray, rank: np.ndarray, terms: np.ndarray, k: int | None
) -> np.ndarray:
    """Per topic: the sum of the terms at ranks 1..k (all of them if k is None), in rank order."""
    if k is None:
        return ranked.count(topic, terms)
    within = rank <= k
    return ranked.count(topic[within], terms[within])


def ndcg(ranked: Ranked, gain: Gain = "linear", gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """nDCG over the whole list: DCG = Σ_i gain(grade_i) / log2(i + 1) over ranks i = 1, 2, ...; gain
    ``linear`` = the grade (trec_eval's), ``exp`` = 2^grade − 1; unjudged documents and grades <= 0 gain 0.
    Divided by the DCG of the ideal ranking — every judged document of the topic (grade >= 0, retrieved or
    not) by grade descending — or 0 if that is 0. Ties in the run were already broken by docid.

    ``gain_map`` is trec_eval's ``ndcg.1=3,2=9,4=4.5``: the gain of each listed grade (any real number,
    grade 0 included), every other grade >= 0 gaining its own value and unjudged documents 0; the ideal
    ranking then orders the judged documents by gain, descending, and stops at the first gain <= 0."""
    if gain_map is None:
        return _safe_div(_dcg(ranked, None, gain), _ideal_dcg(ranked, None, gain))
    return _ndcg_mapped(ranked, gain_map)


def _mapped_gains(grades: np.ndarray, gain_map: Mapping[int, float]) -> np.ndarray:
    out = np.where(grades >= 0, grades, 0).astype(np.float64)
    for grade, value in gain_map.items():
        out[grades == grade] = value
    return out


def _trec_level_order(levels: int, gain_map: Mapping[int, float]) -> list[int]:
    """The relevance levels from the highest gain down, as trec_eval's ideal ranking walks them.

    setup_gains (gain_init.c) lists the levels named by the map (in the order given), then the other
    levels 0..levels-1, and qsorts them with ``return (ptr1->gain - ptr2->gain)``: the difference is
    truncated to an int, so two gains less than 1 apart compare equal and keep the order the (glibc,
    merge sort) qsort leaves them in. This is that sort, step for step."""
    entries = [(g, float(v)) for g, v in gain_map.items()]
    named = {g for g, _ in entries}
    entries += [(g, float(g)) for g in range(levels) if g not in named]

    def msort(items: list[tuple[int, float]]) -> list[tuple[int, float]]:
        if len(items) <= 1:
            return items
        half = len(items) // 2
        left, right = msort(items[:half]), msort(items[half:])
        out: list[tuple[int, float]] = []
        while left and right:
            out.append(left.pop(0) if int(left[0][1] - right[0][1]) <= 0 else right.pop(0))
        return out + left + right

    return [g for g, _ in reversed(msort(entries))]


def _trec_ideal_gains(ranked: Ranked, gain_map: Mapping[int, float]) -> np.ndarray:
    """Per topic at ``Ranked.judged_offsets``: the gain of every judged document in trec_eval's ideal order
    (``_trec_level_order``), 0 from the first gain <= 0 on (trec_eval's ideal stops there)."""
    itopic = ranked.ideal_positions[0]
    grades = ranked.judged
    levels = np.zeros(ranked.n_topics, dtype=np.int64)
    has = np.diff(ranked.judged_offsets) > 0
    levels[has] = grades[ranked.judged_offsets[:-1][has]] + 1  # judged is by grade descending
    key = np.zeros(len(grades), dtype=np.int64)
    for n in np.unique(levels[itopic]).tolist():
        position = {g: i for i, g in enumerate(_trec_level_order(int(n), gain_map))}
        at = levels[itopic] == n
        key[at] = [position[g] for g in grades[at].tolist()]
    order = np.lexsort((key, itopic))
    ideal = _mapped_gains(grades[order], gain_map)
    stopped = _within_topic_cumsum(itopic, (ideal <= 0).astype(np.float64)) > 0
    return np.where(stopped, 0.0, ideal)


def _ndcg_mapped(ranked: Ranked, gain_map: Mapping[int, float]) -> np.ndarray:
    return _safe_div(*_dcg_pair(ranked, gain_map))


def dcg(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """DCG of the list (trec_eval's dcg): Σ_i gain(grade_i) / log2(i + 1), gains as in ``ndcg``."""
    return _dcg_pair(ranked, gain_map or {})[0]


def ideal_dcg(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """DCG of the ideal ranking (trec_eval's ideal_dcg): the judged documents by gain descending, positive
    gains only, gains as in ``ndcg``."""
    return _dcg_pair(ranked, gain_map or {})[1]


def _dcg_pair(ranked: Ranked, gain_map: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero(ranked.label >= 0)
    topic = ranked.topic_of(rows)
    rank = rows - ranked.offsets[topic] + 1
    found = ranked.count(topic, _mapped_gains(ranked.label[rows], gain_map) / np.log2(rank + 1.0))
    itopic = ranked.ideal_positions[0]
    ideal = _trec_ideal_gains(ranked, gain_map)
    position = np.arange(len(ideal)) - ranked.judged_offsets[itopic] + 1
    keep = ideal > 0
    idcg = ranked.count(itopic[keep], ideal[keep] / np.log2(position[keep] + 1.0))
    return found, idcg


def ndcg_cut_k(ranked: Ranked, k: int, gain: Gain = "linear") -> np.ndarray:
    """nDCG at k: as ``ndcg`` with both the list and the ideal ranking cut at rank k."""
    return _safe_div(_dcg(ranked, k, gain), _ideal_dcg(ranked, k, gain))


def bpref(ranked: Ranked) -> np.ndarray:
    """bpref (Buckley & Voorhees 2004, trec_eval's m_bpref.c): (1/R) Σ over relevant retrieved documents r
    of [1 − min(n_above(r), R) / min(N, R)], where n_above(r) counts judged non-relevant documents
    (0 <= grade < level) ranked above r and the term is 1 when n_above(r) = 0. Unjudged documents are
    skipped: they neither count nor shift anything. 0 if R = 0."""
    rel = ranked.relevant
    above = ranked.count_above(ranked.nonrelevant.rows, rel).astype(np.float64)
    r = ranked.num_rel[rel.topic].astype(np.float64)
    n = ranked.num_nonrel[rel.topic].astype(np.float64)
    term = np.ones(len(above))
    some = above > 0
    term[some] = 1.0 - np.minimum(above[some], r[some]) / np.minimum(n[some], r[some])
    return _safe_div(ranked.count(rel.topic, term), ranked.num_rel)


def infAP(ranked: Ranked) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam 2006), exactly as trec_eval's m_infap.c. For the relevant document at
    0-based position j (positions count every retrieved document), with rel, nonrel and unj the relevant,
    judged non-relevant and in-pool-unjudged (negative grade) documents above it and ε = 1e-5:
    term = 1 if j = 0, else 1/(j+1) + (j/(j+1)) · ((rel + nonrel + unj)/j) · ((rel + ε)/(rel + nonrel + 2ε)).
    infAP = Σ term / R (0 if R = 0). Documents absent from the qrels are skipped in the counts."""
    rel = ranked.relevant
    j = (rel.rank - 1).astype(np.float64)
    rel_above = (ranked.rank_among(rel) - 1).astype(np.float64)
    nonrel_above = ranked.count_above(ranked.nonrelevant.rows, rel)
    unj_above = ranked.count_above(np.flatnonzero(ranked.label == UNJUDGED), rel)
    term = np.ones(len(j))
    later = j > 0
    jl = j[later]
    ra = rel_above[later]
    na = nonrel_above[later].astype(np.float64)
    ua = unj_above[later].astype(np.float64)
    term[later] = 1.0 / (jl + 1.0) + (jl / (jl + 1.0)) * ((ra + na + ua) / jl) * (
        (ra + INFAP_EPSILON) / (ra + na + 2 * INFAP_EPSILON)
    )
    return _safe_div(ranked.count(rel.topic, term), ranked.num_rel)


def judged_k(ranked: Ranked, k: int) -> np.ndarray:
    """Judged at k: documents among ranks 1..k with a grade >= 0 in the qrels, divided by k. A negative
    qrels grade (in the pool, not judged) is NOT judged. Computed on the evaluated list, so under
    ``condensed`` it is the share of the k slots that judged documents fill."""
    judged = ranked.judged_rows
    return ranked.count(judged.topic[judged.rank <= k]) / k


def num_nonrel_judged_ret(ranked: Ranked) -> np.ndarray:
    """Judged non-relevant documents (0 <= grade < the level) in the evaluated list."""
    return ranked.count(ranked.nonrelevant.topic)


def _first_relevant_index(ranked: Ranked, rel: Rows) -> np.ndarray:
    """Per topic: the index in ``rel`` of the topic's first relevant row (== the next topic's if none)."""
    return np.searchsorted(rel.topic, np.arange(ranked.n_topics))


def _interpolated_precision(ranked: Ranked, fractions: Iterable[float], version: Version) -> np.ndarray:
    """Interpolated precision (max precision at this or any later rank) at each recall fraction: an
    (n_topics, n_fractions) array. The fraction p of R relevant documents is the count c = floor(p·R + 0.9)
    (trec_eval 9.0.8 and 10 alike); the value is the highest precision at or after the
    c-th relevant retrieved document (c = 0: after the first), 0 if fewer than c were retrieved. An empty
    list (a topic the run lacks under -c, or nothing judged left under -J) gives NaN where c = 0, as
    trec_eval's 0/0 does."""
    suffix, first, found = ranked.interpolation
    r = ranked.num_rel.astype(np.float64)
    # trec_eval 10 scores a topic the run lacks (-c) on a one-document stand-in ranking that is not in the
    # pool: precision 0, not 0/0; only -J can leave that list (or any other) empty.
    empty = (np.diff(ranked.offsets) == 0) & (ranked.present | ranked.condensed)
    fractions = list(fractions)
    out = np.zeros((ranked.n_topics, len(fractions)), dtype=np.float64)
    for j, p in enumerate(fractions):
        c = _recall_count(p, r, version)
        ok = (found > 0) & (c <= found)
        out[ok, j] = suffix[first[ok] + np.maximum(c[ok] - 1, 0)]
        out[empty & (c == 0), j] = math.nan  # trec_eval divides 0 by 0 retrieved here
    return out


def _interpolation(ranked: Ranked) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the highest precision at or after each relevant retrieved row, within its topic; per topic the
    index of its first relevant row in ``ranked.relevant``; per topic the relevant retrieved)."""
    rel = ranked.relevant
    precision = ranked.rank_among(rel) / rel.rank
    # Suffix maximum within each topic: walk backwards with each topic lifted above the ones after it, on
    # the values' ranks (integers, so the lift loses no bit of the precision trec_eval prints).
    distinct, order = np.unique(precision, return_inverse=True)
    lift = (ranked.n_topics - rel.topic).astype(np.int64) * (len(distinct) + 1)
    lifted = order.astype(np.int64).reshape(-1) + lift
    suffix = distinct[(np.maximum.accumulate(lifted[::-1]) - lift[::-1])[::-1]]
    first = _first_relevant_index(ranked, rel)
    found = np.diff(np.append(first, len(rel.rows)))  # relevant retrieved per topic
    return suffix, first, found


def _recall_count(p: float, r: np.ndarray, version: Version) -> np.ndarray:
    # trec_eval 9.0.8 and 10 alike (m_iprec_at_recall.c, m_11pt_avg.c): (long) (p * R + 0.9)
    return np.floor(p * r + 0.9).astype(np.int64)


def iprec_at_recall(ranked: Ranked, p: float, version: Version = "10") -> np.ndarray:
    """Interpolated precision at recall p (trec_eval's iprec_at_recall_p): with c = floor(p·R + 0.9)
    (trec_eval's (long) (p * R + 0.9)), the highest precision P@n over every rank n at or
    after the c-th relevant retrieved document (c = 0: the highest anywhere), 0 if fewer than c relevant
    documents are retrieved or R = 0; NaN where nothing is retrieved and c = 0 (trec_eval's 0/0)."""
    return _interpolated_precision(ranked, [p], version)[:, 0]


def eleven_pt_avg(ranked: Ranked, fractions: Iterable[float] = (), version: Version = "10") -> np.ndarray:
    """11-point average (trec_eval's 11pt_avg): the mean of iprec_at_recall over the recall fractions
    (default 0.0, 0.1, ..., 1.0); NaN when nothing is retrieved (see iprec_at_recall)."""
    fractions = tuple(fractions) or IPREC_FRACTIONS
    return _interpolated_precision(ranked, fractions, version).mean(axis=1)


def _precision_at(ranked: Ranked, cut: np.ndarray) -> np.ndarray:
    """Per topic: relevant documents among ranks 1..cut[t], divided by cut[t] (0 where cut[t] = 0)."""
    rel = ranked.relevant
    within = ranked.count(rel.topic[rel.rank <= cut[rel.topic]])
    return _safe_div(within, cut.astype(np.float64))


def Rprec_mult(ranked: Ranked, p: float) -> np.ndarray:
    """R-precision at a multiple of R (trec_eval's Rprec_mult_p): P@c with c = floor(p·R + 0.9), counting
    the c slots even beyond the end of the list; 0 if c = 0."""
    c = np.floor(p * ranked.num_rel.astype(np.float64) + 0.9).astype(np.int64)
    return _precision_at(ranked, c)


def map_cut_k(ranked: Ranked, k: int) -> np.ndarray:
    """Average precision cut at k: Σ over relevant documents at ranks 1..k of P@rank, divided by R
    (0 if R = 0)."""
    rel = ranked.relevant
    precision = ranked.rank_among(rel) / rel.rank
    within = rel.rank <= k
    return _safe_div(ranked.count(rel.topic[within], precision[within]), ranked.num_rel)


def success_k(ranked: Ranked, k: int) -> np.ndarray:
    """Success at k: 1 if a relevant document is among ranks 1..k, else 0."""
    rel = ranked.relevant
    return (ranked.count(rel.topic[rel.rank <= k]) > 0).astype(np.float64)


def relative_P_k(ranked: Ranked, k: int) -> np.ndarray:
    """Relative precision at k: relevant documents among ranks 1..k, divided by min(k, R) (0 if R = 0)."""
    rel = ranked.relevant
    return _safe_div(ranked.count(rel.topic[rel.rank <= k]), np.minimum(ranked.num_rel, k).astype(np.float64))


def set_P(ranked: Ranked) -> np.ndarray:
    """Set precision: relevant retrieved / retrieved (0 if nothing is retrieved)."""
    return _safe_div(num_rel_ret(ranked), num_ret(ranked))


def set_recall(ranked: Ranked) -> np.ndarray:
    """Set recall: relevant retrieved / R (0 if R = 0)."""
    return _safe_div(num_rel_ret(ranked), ranked.num_rel.astype(np.float64))


def set_relative_P(ranked: Ranked) -> np.ndarray:
    """Set relative precision: relevant retrieved / min(retrieved, R) (0 if either is 0)."""
    return _safe_div(num_rel_ret(ranked), np.minimum(num_ret(ranked), ranked.num_rel.astype(np.float64)))


def set_map(ranked: Ranked) -> np.ndarray:
    """Set map: relevant retrieved² / (retrieved · R) (0 if either is 0), i.e. set precision × set recall."""
    found = num_rel_ret(ranked)
    return _safe_div(found * found, num_ret(ranked) * ranked.num_rel)


def set_F(ranked: Ranked, beta: float = 1.0) -> np.ndarray:
    """Set F (trec_eval's set_F with parameter β, default 1): (β + 1)·P·R / (β·P + R) with P = set precision
    and R = set recall; 0 when nothing is retrieved, R = 0 or no relevant document is retrieved."""
    p, r = set_P(ranked), set_recall(ranked)
    return _safe_div((beta + 1.0) * p * r, beta * p + r)


def utility(ranked: Ranked, params: Sequence[float] = (1.0, -1.0, 0.0, 0.0)) -> np.ndarray:
    """Set utility (trec_eval's utility.p1,p2,p3,p4, default 1,-1,0,0): p1·relevant retrieved + p2·other
    retrieved + p3·relevant not retrieved + p4·(−retrieved − R + relevant retrieved), the last term with
    trec_eval's -N 0 (no collection size). A topic the run lacks (under -c) is 0, as trec_eval resets it."""
    if len(params) != 4:
        raise ValueError("utility takes 4 coefficients, e.g. utility.1,-1,0,0")
    p1, p2, p3, p4 = params
    found, ret, r = num_rel_ret(ranked), num_ret(ranked), ranked.num_rel.astype(np.float64)
    value = p1 * found + p2 * (ret - found) + p3 * (r - found) + p4 * (found - ret - r)
    return np.where(ranked.present, value, 0.0)


def binG(ranked: Ranked) -> np.ndarray:
    """binG (trec_eval, experimental): Σ over relevant retrieved documents of 1 / log2(2 + n), n = the
    documents above it that are not relevant (unjudged ones included), divided by R (0 if none found)."""
    rel = ranked.relevant
    above = (rel.rank - ranked.rank_among(rel)).astype(np.float64)
    return _safe_div(ranked.count(rel.topic, 1.0 / np.log2(2.0 + above)), ranked.num_rel.astype(np.float64))


def _within_topic_cumsum(topic: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` within each topic (``topic`` sorted), inclusive."""
    total = np.cumsum(values)
    if not len(total):
        return total
    first = np.flatnonzero(np.concatenate(([True], topic[1:] != topic[:-1])))
    before = np.concatenate(([0.0], total))[first]
    return total - np.repeat(before, np.diff(np.append(first, len(total))))


def _ideal_prefix(ranked: Ranked, values: np.ndarray, topic: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Σ of ``values`` (one per judged-document row, ideal order) over ideal positions 1..k of ``topic``."""
    n_ideal = np.diff(ranked.judged_offsets)[topic]
    cut = np.minimum(k, n_ideal)
    running = np.append(np.cumsum(values), 0.0)
    start = np.concatenate(([0.0], running))[ranked.judged_offsets[topic]]
    at = running[np.maximum(ranked.judged_offsets[topic] + cut - 1, 0)]
    return np.where(cut > 0, at - start, 0.0)


@dataclass(frozen=True)
class _GainView:
    """The gains G, ndcg_rel and Rndcg see: ``rows``, the retrieved documents whose gain is not 0 (only those
    add a term), with their ``gain``; ``ideal``, per topic at ``Ranked.judged_offsets``, the gain of every
    judged document, descending."""

    rows: Rows
    gain: np.ndarray
    ideal: np.ndarray


def _gain_view(ranked: Ranked, gain_map: Mapping[int, float] | None) -> _GainView:
    """Gains as trec_eval's ``setup_gains`` gives them, for the metrics that take a ``rel_level=gain`` list
    (``-m NAME.1=3.5,2=9``; G, ndcg_rel, Rndcg): the gain of each listed grade (any real number, grade 0
    included), every other judged grade gaining its own value; unjudged documents gain 0 (unless the map
    names -1, absent from the qrels, or -2, a negative grade, as trec_eval's would). The ideal ranking
    orders the judged documents by gain, descending, as trec_eval sorts its levels (a comparison that
    truncates the difference of two gains to an integer: see ``_trec_level_order``)."""
    if not gain_map:
        pos = ranked.positive
        return _GainView(pos, ranked.label[pos.rows].astype(np.float64), ranked.judged.astype(np.float64))
    gains = _mapped_gains(ranked.label, gain_map)
    rows = ranked.select(gains != 0)
    return _GainView(rows, gains[rows.rows], _trec_ideal_gains(ranked, gain_map))


def G(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """G (trec_eval, experimental): Σ over retrieved documents with a gain g ≠ 0 at rank i of
    g / log2(2 + cost(i) − gained(i)), where gained(i) is the gain of ranks 1..i and cost(i) =
    Σ_{j<=i} max(ideal gain at rank j, 1) (the ideal ranking: every judged document by gain, descending; 1
    past its positive gains); divided by the sum of the positive gains of the judged documents (0 if that
    is 0). Gains are the grades by default; unjudged documents gain 0.

    ``gain_map`` is trec_eval's ``rel_level=gain`` list (``-m NAME.1=3.5,2=9``), read as ``_gain_view``
    says: the gains, and the ideal ranking they give."""
    view = _gain_view(ranked, gain_map)
    rows = view.rows
    gained = _within_topic_cumsum(rows.topic, view.gain)
    cost = _ideal_prefix(ranked, np.maximum(view.ideal, 1.0), rows.topic, rows.rank)
    cost += rows.rank - np.minimum(rows.rank, np.diff(ranked.judged_offsets)[rows.topic])  # 1 a rank beyond
    term = view.gain / np.log2(2.0 + cost - gained)
    itopic = ranked.ideal_positions[0]
    total_ideal = ranked.count(itopic, np.maximum(view.ideal, 0.0))
    return _safe_div(ranked.count(rows.topic, term), total_ideal)


def ndcg_rel(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """ndcg_rel (trec_eval, experimental): the mean, over the n judged documents of the topic with a gain
    > 0, of nDCG at each retrieved document with a gain > 0 — DCG of ranks 1..i (every gain ≠ 0 counts)
    over the ideal DCG of ranks 1..i (positive gains only) — where each of the n not matched by a
    retrieved one counts the nDCG of the whole list; 0 if that sum is not positive. Gains are the grades
    by default; unjudged documents gain 0.

    ``gain_map`` is trec_eval's ``rel_level=gain`` list (``-m NAME.1=3.5,2=9``), read as ``_gain_view``
    says: the gains, and the ideal ranking they give."""
    view = _gain_view(ranked, gain_map)
    rows = view.rows
    discounted = view.gain / np.log2(rows.rank + 1.0)
    dcg_here = _within_topic_cumsum(rows.topic, discounted)
    itopic, iposition = ranked.ideal_positions
    ideal_gain = np.maximum(view.ideal, 0.0)
    ideal_discounted = ideal_gain / np.log2(iposition + 1.0)
    gaining = view.gain > 0
    idcg_here = _ideal_prefix(ranked, ideal_discounted, rows.topic[gaining], rows.rank[gaining])
    n_positive = ranked.count(itopic[ideal_gain > 0])
    found = ranked.count(rows.topic[gaining])
    with np.errstate(divide="ignore", invalid="ignore"):  # trec_eval divides as C does
        total = ranked.count(rows.topic[gaining], dcg_here[gaining] / idcg_here)
    full_dcg = ranked.count(rows.topic, discounted)
    full_idcg = ranked.count(itopic, ideal_discounted)
    total += (n_positive - found) * _safe_div(full_dcg, full_idcg)
    return np.where(total > 0, _safe_div(total, n_positive), 0.0)


def rbp(ranked: Ranked, p: float = 0.9) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel 2008; trec_eval's rbp, ``-m rbp.p=0.95``): (1 − p) Σ_i g_i ·
    p^(i−1) over ranks i, with g = the grade, divided by the topic's highest judged grade when that is
    above 1 (trec_eval scales the gains into [0, 1]); unjudged documents gain 0."""
    pos = ranked.positive
    rows, topic, rank = pos.rows, pos.topic, pos.rank
    top = np.zeros(ranked.n_topics, dtype=np.float64)
    listed = np.diff(ranked.judged_offsets) > 0
    top[listed] = ranked.judged[ranked.judged_offsets[:-1][listed]]  # each topic's first: its highest grade
    scale = np.where(top > 1, top, 1.0)
    gains = ranked.label[rows] / scale[topic]
    return (1.0 - p) * ranked.count(topic, gains * _powers(ranked, p)[rank - 1])


def _powers(ranked: Ranked, p: float) -> np.ndarray:
    """p^0, p^1, ... up to the longest list, each the previous times p as trec_eval's loop computes them
    (``cur_p = cur_p * p``): np.power can differ in the last bit."""
    longest = int(np.diff(ranked.offsets).max(initial=0))
    return np.cumprod(np.concatenate(([1.0], np.full(longest, p))))


def rbp_resid(ranked: Ranked) -> np.ndarray:
    """RBP residual at p = 0.9 (trec_eval's rbp_resid): the RBP the unjudged documents could still add,
    p^n + (1 − p) Σ over unjudged documents (absent from the qrels or negative) of p^(rank−1), n = the
    length of the list; 0 if no document of the list is unjudged."""
    p = 0.9
    powers = _powers(ranked, p)
    lengths = np.diff(ranked.offsets)
    # Over every row, 0 for the judged ones: the same additions, in the same (rank) order, as over the
    # unjudged rows alone (x + 0.0 is x), without gathering the rows of (nearly) the whole run.
    if len(lengths) and np.all(lengths == lengths[0]):  # lists of one length (a run's usual 1,000)
        by_topic = ranked.label.reshape(len(lengths), int(lengths[0]))
        unjudged = np.where(by_topic < 0, powers[: int(lengths[0])], 0.0).reshape(-1)
    else:
        unjudged = np.where(ranked.label < 0, powers[ranked.row_rank - 1], 0.0)
    value = powers[lengths] + (1.0 - p) * ranked.count(ranked.row_topic, unjudged)
    return np.where(lengths - ranked.count(ranked.judged_rows.topic) > 0, value, 0.0)


def unj_k(ranked: Ranked, k: int) -> np.ndarray:
    """Unjudged at k (trec_eval's unj): documents among ranks 1..k absent from the qrels or with a negative
    grade, divided by k (by k even when fewer were retrieved)."""
    judged = ranked.judged_rows  # the few judged rows: the retrieved top k less those
    top_k = np.minimum(np.diff(ranked.offsets), k)
    return (top_k - ranked.count(judged.topic[judged.rank <= k])) / k


def relstring(ranked: Ranked, n: int = 10) -> list[str]:
    """The labels of the first n documents of each list as one character each (trec_eval's relstring):
    the grade 0-9, '>' above 9, '-' absent from the qrels, '.' a negative grade."""
    n = max(n, 0)
    if n == 0 or not len(ranked.label):
        return [""] * ranked.n_topics
    # All topics at once: an (n_topics, n) matrix of characters, NUL past a list's end (a bytes_ value
    # ends at its first trailing NUL).
    starts = ranked.offsets[:-1]
    position = starts[:, None] + np.arange(n)
    labels = ranked.label[np.minimum(position, len(ranked.label) - 1)]
    chars = np.full(labels.shape, ord("<"), dtype=np.uint8)
    digits = (labels >= 0) & (labels <= 9)
    chars[digits] = (labels[digits] + ord("0")).astype(np.uint8)
    chars[labels > 9] = ord(">")
    chars[labels == UNPOOLED] = ord("-")
    chars[labels == UNJUDGED] = ord(".")
    chars[position >= ranked.offsets[1:, None]] = 0
    return [text.decode("ascii") for text in chars.view(f"S{n}").reshape(-1).tolist()]


def Rndcg(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """Rndcg (trec_eval, experimental): the mean of nDCG@b over the b at which the ideal ranking's gain
    changes — after each block of equal positive gains, the last one where the positive gains end — plus,
    when the list is longer than that + 1, the nDCG of the whole list; DCG counts every gain ≠ 0, the ideal
    DCG the positive ones. 0 if R = 0 (judged documents with a grade >= the relevance level); NaN (printed
    -nan, trec_eval's 0/0) if R > 0 but no judged document has a positive gain. Gains are the grades by
    default; unjudged documents gain 0.

    ``gain_map`` is trec_eval's ``rel_level=gain`` list (``-m NAME.1=3.5,2=9``), read as ``_gain_view``
    says: the gains, and the ideal ranking they give."""
    view = _gain_view(ranked, gain_map)
    pos = view.rows
    dcg_here = _within_topic_cumsum(pos.topic, view.gain / np.log2(pos.rank + 1.0))
    n_ret = np.diff(ranked.offsets)
    span = int(n_ret.max()) + 2 if len(n_ret) else 2
    keys = pos.topic.astype(np.int64) * span + pos.rank

    def dcg_at(t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """DCG of ranks 1..k of topic t: the running DCG at its last gaining document up to rank k."""
        i = np.searchsorted(keys, t.astype(np.int64) * span + np.minimum(k, span - 1), side="right") - 1
        ok = (i >= 0) & (pos.topic[np.maximum(i, 0)] == t) if len(keys) else np.zeros(len(t), bool)
        return np.where(ok, dcg_here[np.maximum(i, 0)] if len(keys) else 0.0, 0.0)

    ideal = np.maximum(view.ideal, 0.0)
    itopic, iposition = ranked.ideal_positions
    ideal_discounted = ideal / np.log2(iposition + 1.0)
    n_pos = ranked.count(itopic[ideal > 0]).astype(np.int64)
    # Boundaries: 1-based ideal positions b <= n_pos where the next ideal gain differs (or is 0).
    nxt = np.append(ideal[1:], 0.0)
    same_topic_next = np.append(itopic[1:] == itopic[:-1], False)
    b_rows = np.flatnonzero((ideal > 0) & ((nxt != ideal) | ~same_topic_next))
    bt, b = itopic[b_rows], iposition[b_rows]
    total = ranked.count(bt, dcg_at(bt, b) / _ideal_prefix(ranked, ideal_discounted, bt, b))
    count = ranked.count(bt)
    t_all = np.arange(ranked.n_topics)
    extra = (n_ret > n_pos + 1) & (n_pos > 0)
    full_ideal = _ideal_prefix(ranked, ideal_discounted, t_all, n_pos)
    total += np.where(extra, _safe_div(dcg_at(t_all, n_ret), full_ideal), 0.0)
    count += extra
    with np.errstate(invalid="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return np.where(ranked.num_rel > 0, mean, 0.0)


# ---------------------------------------------------------------------------------------------------------
# Measure names (trec_eval's and pytrec_eval's syntax)


@dataclass(frozen=True)
class Family:
    """A trec_eval measure family. ``kind``: ``single`` (one value, no parameter), ``long`` (an integer
    count, printed with %ld), ``cut`` (integer cutoffs, one value per cutoff named ``family_k``), ``fcut``
    (fractional cutoffs, named ``family_%3.2f``), ``fparam`` (one value with float parameters, named
    ``family`` or, when parameters are given, ``family_<params as written>``), ``meta`` (runid). ``summary``:
    how the ``all`` line aggregates the per-topic values: ``mean``, ``sum``, ``gm`` (geometric mean with the
    values floored at 1e-5, trec_eval's MIN_GEO_MEAN) or ``count`` (num_q). ``per_topic``: whether trec_eval
    prints a per-topic line for it under -q."""

    name: str
    kind: Literal["single", "long", "cut", "fcut", "fparam", "pairs", "text", "meta"]
    default: tuple[float, ...] = ()
    summary: Literal["mean", "sum", "gm", "count"] = "mean"
    per_topic: bool = True


IPREC_FRACTIONS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
RPREC_MULT_FRACTIONS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
MIN_GEO_MEAN = 0.00001  # trec_eval's MIN_GEO_MEAN

#: Every family, in trec_eval's output order (its te_trec_measures table); ``judged`` is the platform's.
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("runid", "meta", per_topic=False),
        Family("num_q", "long", summary="count", per_topic=False),
        Family("num_ret", "long", summary="sum"),
        Family("num_rel", "long", summary="sum"),
        Family("num_rel_ret", "long", summary="sum"),
        Family("map", "single"),
        Family("gm_map", "single", summary="gm", per_topic=False),
        Family("Rprec", "single"),
        Family("bpref", "single"),
        Family("recip_rank", "single"),
        Family("iprec_at_recall", "fcut", IPREC_FRACTIONS),
        Family("P", "cut", DEFAULT_CUTOFFS),
        Family("relstring", "text", (10,)),
        Family("recall", "cut", DEFAULT_CUTOFFS),
        Family("infAP", "single"),
        Family("gm_bpref", "single", summary="gm", per_topic=False),
        Family("Rprec_mult", "fcut", RPREC_MULT_FRACTIONS),
        Family("utility", "fparam", (1.0, -1.0, 0.0, 0.0)),
        Family("11pt_avg", "fparam", IPREC_FRACTIONS),
        Family("binG", "single"),
        Family("G", "pairs"),
        Family("dcg", "pairs"),
        Family("ideal_dcg", "pairs"),
        Family("ndcg", "pairs"),
        Family("ndcg_rel", "pairs"),
        Family("Rndcg", "pairs"),
        Family("ndcg_cut", "cut", DEFAULT_CUTOFFS),
        Family("map_cut", "cut", DEFAULT_CUTOFFS),
        Family("relative_P", "cut", DEFAULT_CUTOFFS),
        Family("success", "cut", (1, 5, 10)),
        Family("set_P", "single"),
        Family("set_relative_P", "single"),
        Family("set_recall", "single"),
        Family("set_map", "single"),
        Family("set_F", "fparam", (1.0,)),
        Family("num_nonrel_judged_ret", "long", summary="sum"),
        Family("rbp", "pairs"),
        Family("rbp_resid", "single"),
        Family("unj", "cut", (5, 10, 20)),
        Family("judged", "cut", DEFAULT_CUTOFFS),
    )
}
#: Families in output order, with whether they take parameters (kept for callers of the old table).
MEASURE_FAMILIES: dict[str, bool] = {f.name: f.kind in ("cut", "fcut", "fparam") for f in FAMILIES.values()}
# trec_eval's own lists (measures.c), in its order; a family the platform lacks is left out of the nickname.
_COUNTS = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret"]  # every list starts with these
_OFFICIAL = [*_COUNTS, "map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P"]
_SET_MEASURES = ["set_P", "set_recall", "set_relative_P", "set_map", "set_F"]
_NICKNAMES: dict[str, list[str]] = {
    "official": _OFFICIAL,
    "all_trec": [
        *_OFFICIAL,
        "relstring",
        "recall",
        "unj",
        "rbp",
        "rbp_resid",
        "infAP",
        "gm_bpref",
        "utility",
        "11pt_avg",
        "ndcg",
        "relative_P",
        "Rprec_mult",
        "success",
        "map_cut",
        "ndcg_cut",
        "ndcg_rel",
        "Rndcg",
        "binG",
        "G",
        *_SET_MEASURES,
        "num_nonrel_judged_ret",
    ],  # fmt: skip
    "set": [*_COUNTS, "utility", *_SET_MEASURES],
}
#: trec_eval families the platform does not compute (see the README).
NOT_SUPPORTED = (
    "prefs_*", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "yaap",  # other qrels formats (prefs, qrels_jg)
)  # fmt: skip
_PYTREC_NAME = re.compile(r"^(?P<family>[A-Za-z0-9_]+?)_(?P<param>\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class Measure:
    """One value per topic: its printed name, its family and its parameter (a cutoff, a fraction, or the
    float parameters of an ``fparam`` family)."""

    name: str
    family: Family
    param: Any = None


def supported_measures() -> list[str]:
    """The family names and nicknames accepted by ``parse_measures``."""
    return [*FAMILIES, *_NICKNAMES]


def plan_measures(specs: Iterable[str]) -> list[Measure]:
    """Expand measure specifications into the measures to compute, in trec_eval's output order.

    trec_eval's syntax: ``P.5,10`` (cutoffs, sorted; a duplicate is an error), ``iprec_at_recall.0.1,0.5``,
    ``11pt_avg.0.2,0.5,0.8``, ``set_F.0.5``, a bare family for its default parameters, nicknames
    (``official``, ``all_trec``, ``set``). As in trec_eval, the first parameters given for a family win:
    ``-m P.5 -m P.20`` computes P_5 only. pytrec_eval's names (``P_5``, ``ndcg_cut_10``,
    ``iprec_at_recall_0.10``) are accepted too; those of one family add up (``P_5``, ``P_10``: both),
    with the first trec_eval-style parameters of the family if any. Unknown names: ValueError listing the
    supported ones.
    """
    marked: list[str] = []
    dotted: dict[str, str] = {}
    underscored: dict[str, list[str]] = {}
    for spec in specs:
        for part in spec.split():
            family, params, style = _parse_one(part)
            for name in _NICKNAMES.get(family, [family]):
                if name not in marked:
                    marked.append(name)
            if params is None:
                continue
            if style == "dot":
                dotted.setdefault(family, params)
            else:
                underscored.setdefault(family, []).append(params)
    plan: list[Measure] = []
    for fam in FAMILIES.values():
        if fam.name not in marked:
            continue
        given = dotted.get(fam.name)
        if fam.name in underscored:
            given = ",".join(([given] if given else []) + underscored[fam.name])
            plan.extend(_expand(fam, given, dedupe=True, printable=None))
        else:
            plan.extend(_expand(fam, given, dedupe=False, printable=given))
    return plan


def parse_measures(specs: Iterable[str]) -> list[str]:
    """The printed names of ``plan_measures(specs)``, e.g. ``['map', 'P_5', 'P_10', 'ndcg_cut_10']``."""
    return [m.name for m in plan_measures(specs)]


def _unknown(part: str) -> ValueError:
    return ValueError(
        f"unknown measure {part!r}; supported: {', '.join(supported_measures())} "
        f"(with parameters as in trec_eval, e.g. P.5,10 or iprec_at_recall.0.5)"
    )


def _parse_one(part: str) -> tuple[str, str | None, str]:
    if part in FAMILIES or part in _NICKNAMES:
        return part, None, ""
    match = _PYTREC_NAME.match(part)
    if match and match["family"] in FAMILIES and FAMILIES[match["family"]].kind in ("cut", "fcut"):
        return match["family"], match["param"], "underscore"
    family, dot, params = part.partition(".")
    if dot and family in FAMILIES and FAMILIES[family].kind in ("cut", "fcut", "fparam", "pairs", "text"):
        if not params:
            raise ValueError(f"measure {part!r} has an empty parameter")
        return family, params, "dot"
    raise _unknown(part)


def _numbers(family: Family, params: str) -> Any:
    if family.kind == "pairs":  # grade=gain,grade=gain (trec_eval's gain maps)
        try:
            pairs = [p.split("=") for p in params.split(",")]
            key = str if family.name == "rbp" else int  # ndcg, dcg, G, ...: grade=gain; rbp: p=0.95
            return {key(name): float(value) for name, value in pairs}
        except ValueError:
            raise ValueError(
                f"bad parameters {params!r} for {family.name!r}: write grade=gain,... (ndcg.1=3,2=9) "
                "or p=VALUE (rbp.p=0.95)"
            ) from None
    try:
        values = [float(p) for p in params.split(",")]
    except ValueError:
        raise ValueError(f"bad parameters {params!r} for measure {family.name!r}") from None
    if family.kind == "cut":
        if any(v != int(v) for v in values):
            raise ValueError(f"cutoffs of {family.name!r} must be integers, not {params!r}")
        if min(values) < 1:
            raise ValueError(f"cutoffs must be positive in measure {family.name}.{params}")
    return values


def _expand(family: Family, params: str | None, *, dedupe: bool, printable: str | None) -> list[Measure]:
    values = list(family.default) if params is None else _numbers(family, params)
    if family.kind in ("single", "long", "meta"):
        return [Measure(family.name, family)]
    if family.kind in ("fparam", "pairs", "text"):
        name = family.name if printable is None else f"{family.name}_{printable}"
        return [Measure(name, family, values or None if family.kind == "pairs" else tuple(values))]
    values = sorted(set(values)) if dedupe else sorted(values)
    if len(set(values)) != len(values):
        raise ValueError(f"duplicate cutoffs in measure {family.name}.{params}")  # trec_eval refuses too
    if family.kind == "cut":
        return [Measure(f"{family.name}_{int(v)}", family, int(v)) for v in values]
    return [Measure(f"{family.name}_{v:3.2f}", family, v) for v in values]


def _measure_function(measure: Measure, gain: Gain, version: Version) -> Callable[[Ranked], np.ndarray]:
    simple: dict[str, Callable[[Ranked], np.ndarray]] = {
        "num_q": lambda r: np.ones(r.n_topics, dtype=np.float64),
        "num_ret": num_ret,
        "num_rel": num_rel,
        "num_rel_ret": num_rel_ret,
        "map": map,
        "gm_map": map,
        "Rprec": Rprec,
        "bpref": bpref,
        "gm_bpref": bpref,
        "recip_rank": recip_rank,
        "infAP": infAP,
        "set_P": set_P,
        "set_relative_P": set_relative_P,
        "set_recall": set_recall,
        "set_map": set_map,
        "num_nonrel_judged_ret": num_nonrel_judged_ret,
        "binG": binG,
        "rbp_resid": rbp_resid,
    }
    cut: dict[str, Callable[[Ranked, Any], np.ndarray]] = {
        "P": P_k,
        "recall": recall_k,
        "ndcg_cut": lambda r, k: ndcg_cut_k(r, k, gain),
        "map_cut": map_cut_k,
        "relative_P": relative_P_k,
        "success": success_k,
        "judged": judged_k,
        "iprec_at_recall": lambda r, p: iprec_at_recall(r, p, version),
        "Rprec_mult": Rprec_mult,
        "11pt_avg": lambda r, ps: eleven_pt_avg(r, ps, version),
        "set_F": lambda r, ps: set_F(r, ps[0]),
        "utility": utility,
        "unj": unj_k,
        "rbp": lambda r, pairs: rbp(r, (pairs or {}).get("p", 0.9)),
        "ndcg": lambda r, gains: ndcg(r, gain, gains),
        "dcg": dcg,
        "ideal_dcg": ideal_dcg,
        "G": G,
        "ndcg_rel": ndcg_rel,
        "Rndcg": Rndcg,
    }
    name = measure.family.name
    if name in simple:
        return simple[name]
    if name in cut:
        return lambda r: cut[name](r, measure.param)
    raise ValueError(f"unknown measure {measure.name!r}")


# ---------------------------------------------------------------------------------------------------------
# Evaluation


@dataclass(frozen=True)
class Result:
    """Per-topic values and their aggregate for one run.

    ``values[measure][i]`` is the value of ``topics[i]``; the topics are those averaged over (common or
    all qrels topics, byte order of qid). ``means`` is trec_eval's ``all`` line: the arithmetic mean over
    those topics, except the sum for num_ret, num_rel, num_rel_ret and num_nonrel_judged_ret, the count
    for num_q and the geometric mean for gm_map and gm_bpref (whose per-topic values are AP and bpref).
    ``overrides`` replace an aggregate where trec_eval computes it apart (num_rel under trec_eval 9 -c).
    """

    topics: tuple[str, ...]
    measures: tuple[str, ...]
    values: Mapping[str, np.ndarray]
    relevance_level: int
    gain: Gain
    unjudged: Unjudged
    depth: int | None
    average: Average
    missing_topics: tuple[str, ...] = ()
    ignored_topics: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    run_name: str = ""
    run_tag: str = ""
    trec_eval: Version = "10"
    overrides: Mapping[str, float] = field(default_factory=dict)
    unjudged_topics: tuple[str, ...] = ()
    texts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # relstring: one string per topic

    @property
    def means(self) -> dict[str, float]:
        return {m: self.overrides.get(m, _aggregate(m, self.values[m])) for m in self.measures}

    @property
    def per_topic(self) -> dict[str, dict[str, float]]:
        """``{qid: {measure: value}}``, pytrec_eval's layout."""
        columns = [self.values[m].tolist() for m in self.measures]
        return (
            {
                qid: dict(zip(self.measures, row, strict=True))
                for qid, row in zip(self.topics, zip(*columns, strict=True), strict=True)
            }
            if self.measures
            else {qid: {} for qid in self.topics}
        )

    def topic_values(self, measure: str) -> dict[str, float]:
        """``{qid: value}`` of one measure."""
        return dict(zip(self.topics, self.values[measure].tolist(), strict=True))

    def segment_means(self, segments: Mapping[str, Iterable[str]]) -> dict[str, dict[str, float]]:
        """See ``segment_means``."""
        return segment_means(self, segments)


def summary_of(measure: str) -> str:
    """How the ``all`` line aggregates a measure: ``sum`` (num_ret, num_rel, num_rel_ret,
    num_nonrel_judged_ret), ``count`` (num_q), ``gm`` (gm_map, gm_bpref) or ``mean``."""
    if measure in FAMILIES:
        return FAMILIES[measure].summary
    return "mean"


def _aggregate(measure: str, values: np.ndarray) -> float:
    kind = summary_of(measure)
    if kind == "sum":
        return float(values.sum())
    if kind == "count":
        return float(len(values))
    if not len(values):
        return math.nan
    # trec_eval adds the topics' values one by one in topic order, then divides (meas_acc.c, meas_avg.c);
    # numpy's pairwise sum can differ in the last bit, and so in the 4th decimal printed.
    if kind == "gm":
        return float(np.exp(_running_sum(np.log(np.maximum(values, MIN_GEO_MEAN))) / len(values)))
    return _running_sum(values) / len(values)


def _running_sum(values: np.ndarray) -> float:
    return float(np.cumsum(values, dtype=np.float64)[-1])


@dataclass(frozen=True)
class JudgedSplit:
    """A qrels split by whether anyone judged the topic. `qrels` keeps only the judged topics."""

    qrels: dict[str, dict[str, int]]
    judged: tuple[str, ...]
    not_judged: tuple[str, ...]


def split_judged(qrels: Mapping[str, Mapping[str, int]], *, topics: Iterable[str] = ()) -> JudgedSplit:
    """The platform's one rule for topics nobody judged: a topic is *judged* when at least one of its
    documents has a grade >= 0; any other topic (only pending or unrateable items, -1, or none at all,
    such as the extra qids in `topics`) is *not judged*. Not judged topics are counted and shown apart
    and never scored: trec_eval would give them 0 on every measure, a failure nobody observed.
    Both tuples are in qid order."""
    judged = sorted(q for q, docs in qrels.items() if any(g >= 0 for g in docs.values()))
    kept = set(judged)
    not_judged = sorted(set(qrels).union(topics) - kept)
    return JudgedSplit({q: dict(qrels[q]) for q in judged}, tuple(judged), tuple(not_judged))


def evaluate(
    qrels: QrelsTable | Mapping[str, Mapping[str, int]],
    run: RunTable | Mapping[str, Mapping[str, float]],
    measures: Iterable[str] | str = ("map", "ndcg_cut_10", "P_10", "recall_100", "recip_rank"),
    *,
    relevance_level: int = 1,
    gain: Gain = "linear",
    unjudged: Unjudged = "nonrelevant",
    depth: int | None = None,
    average: Average = "common",
    trec_eval: Version = "10",
    skip_unjudged_topics: bool = False,
) -> Result:
    """Score a run on qrels with trec_eval's semantics (see the module docstring).

    ``qrels`` is ``{qid: {docid: grade}}`` or a ``trec_io.QrelsTable``; ``run`` is ``{qid: {docid: score}}``
    or a ``trec_io.RunTable``. ``measures`` uses trec_eval's or pytrec_eval's names (``plan_measures``);
    ``runid`` is accepted and left to the printer (``Result.run_tag``). With ``average="common"`` a
    ``MissingTopicsWarning`` names the qrels topics the run lacks (also kept in ``Result.warnings``).

    ``trec_eval="10"`` (default) or ``"9"`` picks where the two versions differ in a value: the ``all``
    line of num_rel under ``average="all"`` (10: the sum of R at the relevance level; 9.0.8: every qrels
    line with a grade > 0, whatever the level, over all topics).

    ``skip_unjudged_topics``: the rule of :func:`split_judged`, applied to the ranked table: a qrels
    topic none of whose documents has a grade >= 0 (only pending or
    unrateable items, written -1) is left out of the topics and of every mean, under either averaging,
    and named in ``Result.unjudged_topics`` and a warning: nobody judged it, so it measures nothing about
    the run (trec_eval would count it as 0, or abort when it sorts first).
    """
    if isinstance(measures, str):
        measures = [measures]
    everything = plan_measures(measures)
    plan = [m for m in everything if m.family.kind not in ("meta", "text")]
    names = [m.name for m in plan]
    if gain not in ("linear", "exp"):
        raise ValueError(f"gain must be 'linear' or 'exp', not {gain!r}")
    if average not in ("common", "all"):
        raise ValueError(f"average must be 'common' or 'all', not {average!r}")
    if trec_eval not in ("10", "9"):
        raise ValueError(f"trec_eval must be '10' or '9', not {trec_eval!r}")
    qt = _as_qrels(qrels)
    rt = _as_run(run)
    ranked = rank_lists(qt, rt, relevance_level=relevance_level, unjudged=unjudged, depth=depth)
    values_all: dict[str, np.ndarray] = {}
    done: dict[Callable[[Ranked], np.ndarray], np.ndarray] = {}  # gm_map is map's per-topic values, ...
    for m in plan:
        function = _measure_function(m, gain, trec_eval)
        if function not in done:
            done[function] = function(ranked)
        values_all[m.name] = done[function]

    nobody = np.diff(ranked.judged_offsets) == 0 if skip_unjudged_topics else np.zeros(ranked.n_topics, bool)
    unjudged_topics = tuple(ranked.topics[i] for i in np.flatnonzero(nobody).tolist())
    missing = tuple(
        t
        for t, p, n in zip(ranked.topics, ranked.present.tolist(), nobody.tolist(), strict=True)
        if not (p or n)
    )
    qrels_topics = set(ranked.topics)
    ignored = tuple(sorted((t for t in set(rt.topic_ids) if t not in qrels_topics), key=str.encode))
    notes: list[str] = []
    if unjudged_topics:
        notes.append(
            f"{len(unjudged_topics)} of {len(ranked.topics)} qrels topics have no judged document (only "
            f"pending or unrateable items), left out of every mean, with -c too: {_shown(unjudged_topics)}"
        )
    if average == "common":
        keep = np.flatnonzero(ranked.present & ~nobody)
        if missing:
            notes.append(
                f"the run has no results for {len(missing)} of {len(ranked.topics)} qrels topics, "
                f"left out of the means (use average='all' / -c to count them as 0): {_shown(missing)}"
            )
            warnings.warn(notes[-1], MissingTopicsWarning, stacklevel=2)
    else:
        keep = np.flatnonzero(~nobody)
    topics = tuple(ranked.topics[i] for i in keep.tolist())
    values = {name: v[keep] for name, v in values_all.items()}
    texts = {}
    for m in everything:
        if m.family.kind == "text":
            strings = relstring(ranked, int(m.param[0]))
            texts[m.name] = tuple(strings[i] for i in keep.tolist())
    overrides: dict[str, float] = {}
    if trec_eval == "9" and average == "all" and "num_rel" in values:
        # trec_eval 9.0.8's m_num_rel.c re-counts the qrels under -c: every line with rel > 0.
        # (A topic nobody judged has no such line, so leaving it out changes nothing here.)
        overrides["num_rel"] = float(np.count_nonzero(qt.grade > 0))
    return Result(
        topics=topics,
        measures=tuple(names),
        values=values,
        relevance_level=relevance_level,
        gain=gain,
        unjudged=unjudged,
        depth=depth,
        average=average,
        missing_topics=missing,
        ignored_topics=ignored,
        warnings=tuple(notes),
        run_name=rt.name,
        run_tag=rt.name,
        trec_eval=trec_eval,
        overrides=overrides,
        unjudged_topics=unjudged_topics,
        texts=texts,
    )


def _shown(topics: Sequence[str]) -> str:
    return ", ".join(topics[:20]) + (f", ... ({len(topics)} in all)" if len(topics) > 20 else "")


def segment_means(result: Result, segments: Mapping[str, Iterable[str]]) -> dict[str, dict[str, float]]:
    """Aggregate per segment: ``segments`` maps qid -> its segments (e.g. ``{"301": ["head", "nav"]}``).

    Returns ``{segment: {"num_q": topics, measure: aggregate, ...}}`` over the result's topics in each
    segment (aggregate as ``Result.means``: mean, or sum for num_*). Topics without segments are left out.
    """
    members: dict[str, list[int]] = {}
    for i, qid in enumerate(result.topics):
        for segment in dict.fromkeys(segments.get(qid, ())):
            members.setdefault(segment, []).append(i)
    out: dict[str, dict[str, float]] = {}
    for segment in sorted(members):
        index = np.array(members[segment], dtype=np.intp)
        row: dict[str, float] = {"num_q": float(len(index))}
        for measure in result.measures:
            row[measure] = _aggregate(measure, result.values[measure][index])
        out[segment] = row
    return out


# ---------------------------------------------------------------------------------------------------------
# Paired significance tests between two runs' per-topic values


@dataclass(frozen=True)
class PairedTest:
    """A paired test over the topics both runs have: ``mean_difference`` = mean(x − y)."""

    test: str
    n: int
    mean_x: float
    mean_y: float
    mean_difference: float
    statistic: float
    p_value: float
    details: dict[str, Any] = field(default_factory=dict)


def _paired(
    x: Mapping[str, float] | Result, y: Mapping[str, float] | Result, measure: str | None
) -> tuple[np.ndarray, np.ndarray]:
    def as_map(v: Mapping[str, float] | Result) -> Mapping[str, float]:
        if isinstance(v, Result):
            if measure is None:
                raise ValueError("give measure= when passing Results")
            return v.topic_values(measure)
        return v

    xm, ym = as_map(x), as_map(y)
    common = sorted(set(xm) & set(ym))
    if len(common) < 2:
        raise ValueError(f"a paired test needs at least 2 common topics, found {len(common)}")
    return (
        np.array([xm[q] for q in common], dtype=np.float64),
        np.array([ym[q] for q in common], dtype=np.float64),
    )


def paired_t_test(
    x: Mapping[str, float] | Result, y: Mapping[str, float] | Result, *, measure: str | None = None
) -> PairedTest:
    """Two-sided paired Student t-test on the per-topic values of the topics both have
    (``scipy.stats.ttest_rel``). Pass ``{qid: value}`` maps, or two Results and ``measure=``."""
    from scipy import stats

    a, b = _paired(x, y, measure)
    diff = a - b
    if np.all(diff == diff[0]):
        statistic, p_value = (0.0, 1.0) if diff[0] == 0 else (math.copysign(math.inf, diff[0]), 0.0)
    else:
        res = stats.ttest_rel(a, b)
        statistic, p_value = float(res.statistic), float(res.pvalue)
    return PairedTest(
        "paired t-test", len(a), float(a.mean()), float(b.mean()), float(diff.mean()), statistic, p_value
    )


def paired_randomisation_test(
    x: Mapping[str, float] | Result,
    y: Mapping[str, float] | Result,
    *,
    measure: str | None = None,
    n_permutations: int = 10_000,
    seed: int = 0,
) -> PairedTest:
    """Two-sided paired randomisation (sign-flip permutation) test on the mean difference.

    Each permutation swaps the two runs' values of each common topic with probability 1/2 (seeded
    ``numpy.random.default_rng(seed)``); p = (1 + #{|mean diff*| >= |mean diff|}) / (1 + n_permutations).
    """
    a, b = _paired(x, y, measure)
    diff = a - b
    observed = abs(diff.mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    batch = max(1, min(n_permutations, 2_000_000 // max(len(diff), 1)))
    done = 0
    tolerance = 1e-12 * max(1.0, observed)
    while done < n_permutations:
        size = min(batch, n_permutations - done)
        signs = rng.integers(0, 2, size=(size, len(diff)), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diff) / len(diff)
        extreme += int(np.count_nonzero(means >= observed - tolerance))
        done += size
    p_value = (1 + extreme) / (1 + n_permutations)
    return PairedTest(
        "paired randomisation test",
        len(a),
        float(a.mean()),
        float(b.mean()),
        float(diff.mean()),
        float(diff.mean()),
        p_value,
        {"n_permutations": n_permutations, "seed": seed},
    )

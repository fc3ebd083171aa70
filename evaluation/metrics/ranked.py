"""The ranked lists every measure reads, and what the measure modules share.

``Ranked`` holds the ranked lists of all qrels topics flattened into arrays, with what several measures
read (relevant rows, DCG terms, the ideal ranking, interpolated precision) computed once; ``rank_lists``
builds it from a run and qrels in trec_eval's order, labelling each row with its grade or ``UNPOOLED`` /
``UNJUDGED``. Also here: the option types (``Gain``, ``Unjudged``, ``Average``, ``Version``), what those
shared terms are computed with (``_gains``, ``_interpolation``) and ``_safe_div``, which every measure
module divides with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np

from evaluation.metrics.join import _join
from judgements.release_topics import is_judged, judged_topics
from pooling.trec_io import QrelsTable, RunTable, trec_order

Gain = Literal["linear", "exp"]
Unjudged = Literal["nonrelevant", "condensed"]
Average = Literal["common", "all"]
Version = Literal["10", "9"]

UNPOOLED = -1  # retrieved, absent from the qrels (trec_eval's RELVALUE_NONPOOL)
UNJUDGED = -2  # retrieved, in the qrels with a negative grade (trec_eval's RELVALUE_UNJUDGED)


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
    def judged_topics(self) -> np.ndarray:
        """Per topic: whether anyone judged it (``judgements.release_topics.judged_topics`` over its judged
        qrels lines, ``judged``)."""
        topic = np.repeat(np.arange(self.n_topics), np.diff(self.judged_offsets))
        return judged_topics(topic, self.judged, self.n_topics)

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
    judged_rows = np.flatnonzero(is_judged(qt.grade)) if len(qt) else np.zeros(0, dtype=np.intp)
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


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(len(num), dtype=np.float64)
    nz = den > 0
    out[nz] = num[nz] / den[nz]
    return out


def _gains(values: np.ndarray, gain: Gain) -> np.ndarray:
    positive = np.maximum(values, 0).astype(np.float64)
    if gain == "linear":
        return positive
    if gain == "exp":
        return np.exp2(positive) - 1.0
    raise ValueError(f"gain must be 'linear' or 'exp', not {gain!r}")


def _first_relevant_index(ranked: Ranked, rel: Rows) -> np.ndarray:
    """Per topic: the index in ``rel`` of the topic's first relevant row (== the next topic's if none)."""
    return np.searchsorted(rel.topic, np.arange(ranked.n_topics))


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

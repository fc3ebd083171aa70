"""Re-scoring every run on many versions of the labels, fast (pure: no Django).

A noise-floor report scores the same runs on hundreds of label variants: one per rater, per random split
of the raters, per resample of each item's votes. Ranking a run (the join with the qrels and trec_eval's
sort) is the expensive part of :func:`evaluation.metrics.evaluate` and does not depend on the labels, so
:class:`Scorer` ranks every run once and then, for each variant, only relabels the ranked rows and calls
the metrics of :mod:`evaluation.metrics` (the one implementation of every measure) on all runs at once.

The labels of a variant are one integer per pool item (:class:`Items`): a grade >= 0; ``UNJUDGED`` (-1:
pending or unrateable, trec_eval's "in the pool, unjudged"); or ``ABSENT`` (-2: not in this variant's
qrels at all, e.g. an item a rater never judged in their own qrels). A topic is scored in a variant only
if the variant judged it (``judgements.release_topics``, ``metrics.split_judged``'s rule: at least one
grade >= 0) and the run has it; every other cell is NaN, so it never enters a mean as a zero.

A little over 400 lines on purpose: the items, the votes and their resamples, and the scorer are the one
fast path of every noise-floor figure, kept in one module so that a label variant is made and scored in
one place.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation import metrics
from evaluation.metrics.measures import _measure_function
from judgements import aggregation
from judgements.release_topics import is_judged, judged_topics
from pooling.trec_io import QrelsTable, RunTable

UNJUDGED = -1
ABSENT = -2

Qrels = Mapping[str, Mapping[str, int]]
RunLike = RunTable | Mapping[str, Mapping[str, float]]


@dataclass(frozen=True)
class Items:
    """The pool items, ``keys[i] = (qid, docid)``, in qid then docid order; ``topic[i]`` indexes
    ``topics`` (byte order of qid, as ``metrics.rank_lists`` sorts them)."""

    keys: tuple[tuple[str, str], ...]
    topics: tuple[str, ...]
    topic: np.ndarray

    @classmethod
    def of(cls, qrels: Qrels) -> Items:
        """Every (qid, docid) of ``qrels``, whatever its grade (-1 included)."""
        topics = tuple(sorted(qrels, key=lambda q: q.encode("utf-8")))
        keys = tuple((q, d) for q in topics for d in sorted(qrels[q], key=lambda d: d.encode("utf-8")))
        code = {q: i for i, q in enumerate(topics)}
        return cls(keys, topics, np.array([code[q] for q, _ in keys], dtype=np.intp))

    def __len__(self) -> int:
        return len(self.keys)

    def labels(self, qrels: Qrels) -> np.ndarray:
        """A qrels as one label per item: its grade, -1 if negative, ``ABSENT`` if the qrels lack it."""
        out = np.full(len(self.keys), ABSENT, dtype=np.int64)
        for i, (q, d) in enumerate(self.keys):
            grade = qrels.get(q, {}).get(d)
            if grade is not None:
                out[i] = max(int(grade), UNJUDGED)
        return out

    def judged_topics(self, labels: np.ndarray) -> np.ndarray:
        """Per topic: whether the variant judged it (``judgements.release_topics.judged_topics``, the rule
        ``metrics.split_judged`` calls too, on the label vector)."""
        return judged_topics(self.topic, labels, len(self.topics))


#: Measures whose value depends only on the first k rows of each list and the first k documents of the
#: ideal ranking (k their cutoff): scored on lists cut at k, an exact shortcut (trec_eval -M k changes
#: none of them).
TOP_K = frozenset({"P", "ndcg_cut", "success", "judged"})
#: Measures that read nothing of a list after its last pooled document (rows that are unjudged in every
#: variant and ranked below every pooled one add nothing to them): scored on lists cut there.
THROUGH_POOLED = frozenset({"map", "recip_rank", "ndcg", "Rprec", "recall", "map_cut", "bpref"})


@dataclass(frozen=True)
class _Rows:
    """The ranked rows one group of measures reads: ``n`` of them, the positions ``in_pool`` of those that
    retrieved a pool item and that ``item``, each row's ``cell`` (run * topics + topic), the offsets."""

    n: int
    in_pool: np.ndarray
    item: np.ndarray
    cell: np.ndarray
    offsets: np.ndarray


class Scorer:
    """Every run ranked once over the pool items; :meth:`score` re-scores all of them on any labels.

    ``measures`` are trec_eval names (``metrics.plan_measures``), kept in the order given; ``unjudged`` is
    the unjudged policy (``condensed`` drops the rows unjudged *in each variant* before the metric, as
    trec_eval -J would on that variant's qrels); ``depth`` is trec_eval -M. ``gain`` and
    ``relevance_level`` as in ``metrics.evaluate``; the scores equal ``metrics.evaluate`` on the variant's
    qrels, topic by topic (tests/evaluation/test_noise.py checks it for every shortcut above). ``average``
    as there: ``common`` leaves a topic the run lacks out (NaN), ``all`` (trec_eval -c) scores it 0 when
    the variant judged it.
    """

    def __init__(
        self,
        runs: Mapping[str, RunLike],
        items: Items,
        measures: Sequence[str],
        *,
        relevance_level: int = 1,
        gain: metrics.Gain = "linear",
        unjudged: metrics.Unjudged = "nonrelevant",
        depth: int | None = None,
        average: metrics.Average = "common",
    ) -> None:
        if average not in ("common", "all"):
            raise ValueError(f"average must be 'common' or 'all', not {average!r}")
        self.items = items
        self.average = average
        self.names = tuple(runs)
        self.relevance_level = relevance_level
        self.unjudged = unjudged
        asked = list(measures)
        plan = sorted(  # the order asked for (plan_measures gives trec_eval's), so measures[0] is the key one
            metrics.plan_measures(asked),
            key=lambda m: asked.index(m.name) if m.name in asked else len(asked),
        )
        self.measures = tuple(m.name for m in plan)
        # The one implementation of each measure (evaluate's own dispatch), grouped by the rows it reads.
        self._groups: dict[int | None, list[tuple[int, Callable[[metrics.Ranked], np.ndarray]]]] = {}
        for position, m in enumerate(plan):
            name = m.family.name
            cut: int | None = -1  # -1: every row
            if name in TOP_K:
                cut = int(m.param)
            elif name in THROUGH_POOLED:
                cut = None
            function = _measure_function(m, gain)
            self._groups.setdefault(cut, []).append((position, function))
        # The qrels "grade" of each item is its index: rank_lists then labels each ranked row with the
        # item it retrieved (>= 0) or UNPOOLED, and sorts as trec_eval does, once per run.
        index: dict[str, dict[str, int]] = {}
        for i, (q, d) in enumerate(items.keys):
            index.setdefault(q, {})[d] = i
        index_table = QrelsTable.from_dict(index)
        n_topics = len(items.topics)
        item_rows, counts, present = [], [], []
        for name in self.names:
            ranked = metrics.rank_lists(index_table, runs[name], depth=depth)
            if tuple(ranked.topics) != items.topics:
                raise ValueError("the pool items and the ranked topics disagree")  # cannot happen
            item_rows.append(ranked.label)
            counts.append(np.diff(ranked.offsets))
            present.append(ranked.present)
        self.n_runs, self.n_topics = len(self.names), n_topics
        self.n_cells = self.n_runs * n_topics
        row_item = np.concatenate(item_rows) if item_rows else np.zeros(0, dtype=np.int64)
        cell = np.repeat(np.arange(self.n_cells), np.concatenate(counts) if counts else np.zeros(0, np.intp))
        self.present = np.array(present, dtype=bool).reshape(self.n_runs, n_topics)
        first = np.searchsorted(cell, np.arange(self.n_cells))
        rank = np.arange(len(cell)) - first[cell]  # 0-based
        pooled = row_item >= 0
        last = np.full(self.n_cells, -1)
        np.maximum.at(last, cell[pooled], rank[pooled])
        # Per group, the rows it reads (before condensing, which depends on the variant): which of them are
        # pooled and the item each of those retrieved, and (without condensing) the lists' offsets.
        self._rows: dict[int | None, _Rows] = {}
        for cut in self._groups:
            if cut == -1:
                keep = np.ones(len(cell), dtype=bool)
            elif cut is None or unjudged == "condensed":
                keep = rank <= last[cell]  # condensed lists are cut at k after condensing
            else:
                keep = rank < cut
            rows = np.flatnonzero(keep)
            in_pool = np.flatnonzero(pooled[rows])
            offsets = np.concatenate(([0], np.cumsum(np.bincount(cell[rows], minlength=self.n_cells))))
            self._rows[cut] = _Rows(
                len(rows), in_pool, row_item[rows][in_pool], cell[rows], offsets.astype(np.intp)
            )
        self._pseudo_topics = [""] * self.n_cells  # Ranked only counts them

    def _ranked(
        self, codes: np.ndarray, cut: int | None, judged: tuple[np.ndarray, np.ndarray]
    ) -> metrics.Ranked:
        group = self._rows[cut]
        row_label = np.full(group.n, metrics.UNPOOLED, dtype=np.int64)
        row_label[group.in_pool] = codes[group.item]
        offsets = group.offsets
        if self.unjudged == "condensed":
            keep = row_label >= 0
            row_label, cell = row_label[keep], group.cell[keep]
            if cut is not None and cut > 0:
                first = np.searchsorted(cell, np.arange(self.n_cells))
                keep = np.arange(len(cell)) - first[cell] < cut
                row_label, cell = row_label[keep], cell[keep]
            offsets = np.concatenate(([0], np.cumsum(np.bincount(cell, minlength=self.n_cells)))).astype(
                np.intp
            )
        grades, per_topic = judged
        if cut is not None and cut > 0:  # the ideal ranking's first k documents are all it reads
            starts = np.concatenate(([0], np.cumsum(per_topic)))[:-1]
            position = np.arange(len(grades)) - np.repeat(starts, per_topic)
            grades = grades[position < cut]
            per_topic = np.minimum(per_topic, cut)
        return metrics.Ranked(
            topics=self._pseudo_topics,
            offsets=offsets,
            label=row_label,
            judged=np.tile(grades, self.n_runs),
            judged_offsets=np.concatenate(([0], np.cumsum(np.tile(per_topic, self.n_runs)))).astype(np.intp),
            present=self.present.ravel(),
            relevance_level=self.relevance_level,
        )

    def score(self, labels: np.ndarray, *, topics: np.ndarray | None = None) -> np.ndarray:
        """Scores on one label variant: shape (measures, runs, topics), NaN where the run lacks the topic
        (under ``common``), the variant judged nothing in it, or ``topics`` (a boolean mask) leaves it out."""
        # The ideal ranking's material: each topic's judged grades, descending.
        judged = is_judged(labels)
        judged_items = np.flatnonzero(judged)
        order = np.lexsort((-labels[judged_items], self.items.topic[judged_items]))
        grades = labels[judged_items[order]]
        per_topic = np.bincount(self.items.topic[judged_items], minlength=self.n_topics)
        valid = np.broadcast_to(self.items.judged_topics(labels)[None, :], self.present.shape)
        if self.average == "common":
            valid = valid & self.present
        if topics is not None:
            valid = valid & topics[None, :]
        # Each item's label as a ranked row carries it: a grade, UNJUDGED, or UNPOOLED when ABSENT.
        codes = np.where(judged, labels, np.where(labels == ABSENT, metrics.UNPOOLED, metrics.UNJUDGED))
        out = np.empty((len(self.measures), self.n_runs, self.n_topics))
        for cut, functions in self._groups.items():
            ranked = self._ranked(codes, cut, (grades, per_topic))
            for position, function in functions:
                values = function(ranked).reshape(self.n_runs, self.n_topics)
                out[position] = np.where(valid, values, np.nan)
        return out


def run_means(scores: np.ndarray) -> np.ndarray:
    """Means over each run's scored topics (NaN cells left out): shape (measures, runs)."""
    valid = ~np.isnan(scores)
    total = np.where(valid, scores, 0.0).sum(axis=-1)
    n = valid.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, total / np.maximum(n, 1), np.nan)


def pair_means(scores: np.ndarray, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """Each pair (a, b) of runs compared: the mean of a − b over the topics both have (a cell NaN in
    either left out, as ``noise.topic_bootstrap`` pairs them): shape (measures, pairs), NaN with no topic
    in common. Never the difference of the runs' means, each over its own topics."""
    a = np.array([p[0] for p in pairs], dtype=np.intp)
    b = np.array([p[1] for p in pairs], dtype=np.intp)
    return run_means(scores[:, a] - scores[:, b])


@dataclass(frozen=True)
class Votes:
    """Every item's votes, flattened: item i's are ``grade[offsets[i]:offsets[i + 1]]`` (a grade >= 0, or
    -1 for unrateable) by ``rater[...]`` (indexes into ``raters``). An item with a fixed label (an
    adjudication) carries it as its only vote, rater -1."""

    grade: np.ndarray
    rater: np.ndarray
    offsets: np.ndarray
    raters: tuple[str, ...]

    @classmethod
    def of(
        cls,
        items: Items,
        votes: Mapping[tuple[str, str], Sequence[tuple[str, int | None]]],
        fixed: Mapping[tuple[str, str], int] | None = None,
    ) -> Votes:
        """From ``{(qid, docid): [(rater, grade or None for unrateable), ...]}``; ``fixed`` maps items to
        a decided label (an adjudication: a grade, or -1 for unrateable) that replaces their votes."""
        fixed = fixed or {}
        raters = sorted({r for vs in votes.values() for r, _ in vs})
        code = {r: i for i, r in enumerate(raters)}
        grades: list[int] = []
        who: list[int] = []
        counts = np.zeros(len(items), dtype=np.intp)
        for i, key in enumerate(items.keys):
            if key in fixed:
                grades.append(max(int(fixed[key]), UNJUDGED))
                who.append(-1)
                counts[i] = 1
                continue
            for rater, grade in votes.get(key, ()):
                grades.append(UNJUDGED if grade is None else int(grade))
                who.append(code[rater])
                counts[i] += 1
        return cls(
            np.array(grades, dtype=np.int64),
            np.array(who, dtype=np.intp),
            np.concatenate(([0], np.cumsum(counts))).astype(np.intp),
            tuple(raters),
        )

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sample(self, base: np.ndarray, rng: np.random.Generator, n: int, *, policy: str) -> np.ndarray:
        """``n`` label vectors, shape (n, items), by a bootstrap of each item's raters: an item the
        consensus ``base`` judged (a grade >= 0) draws as many votes as it has from its own votes, with
        replacement (a multinomial draw of its counts per grade), and takes the label ``policy`` gives
        those votes (:func:`policy_labels`, ``required`` 1). The resamples are the consensus the policy
        would have released had other votes of the same raters come in, so their scores spread around
        the score ``policy`` gives, and move with it. Every other item keeps its ``base`` label: one
        without votes, an adjudicated one (its fixed vote), and one the consensus leaves unjudged
        (pending: fewer votes than it requires; unrateable), which no resample may judge, as
        :meth:`sample_posterior` keeps it too (else the resamples judge items the scores they bracket do
        not, and the interval leaves the score).

        Under a rater policy (``rater:NAME``: one rater's label per item) a bootstrap of NAME's one vote
        would give it back every time, a spread of 0 that measures nothing; the resample is then of the
        size the policy reads, one vote: each drawn item takes one of its votes drawn uniformly (its
        grade, or unjudged for an unrateable one), the label a one-rater qrels would hold had another of
        the item's raters been the one."""
        counts = self.counts
        fixed = np.zeros(len(counts), dtype=bool)
        fixed[np.repeat(np.arange(len(counts)), counts)[self.rater < 0]] = True
        drawn = np.flatnonzero((counts > 0) & (base >= 0) & ~fixed)
        out = np.tile(base, (n, 1))
        if not len(drawn):
            return out
        if aggregation.parse_policy(policy).kind == "rater":
            one = self.offsets[drawn] + (rng.random((n, len(drawn))) * counts[drawn]).astype(np.intp)
            out[:, drawn] = np.maximum(self.grade[one], UNJUDGED)
            return out
        # Each vote of a drawn item, in every sample, is one of that item's votes drawn uniformly.
        times = counts[drawn]
        slot = np.repeat(np.arange(len(drawn)), times)  # the drawn item each vote belongs to
        pick = self.offsets[drawn][slot] + (rng.random((n, len(slot))) * times[slot]).astype(np.intp)
        column = self.grade[pick] + 1  # the vote-count column of each drawn vote
        width, most = int(self.grade.max()) + 2, int(times.max()) + 1
        if width * math.log2(most) >= 62:  # too many grades or votes for one integer per tally
            row = np.arange(n)[:, None] * len(drawn) + slot[None, :]  # (sample, item) as one row
            tallies = np.bincount((row * width + column).ravel(), minlength=n * len(drawn) * width)
            out[:, drawn] = policy_labels(tallies.reshape(-1, width), policy=policy).reshape(n, len(drawn))
            return out
        # Each (sample, item)'s tally as one integer, its counts the digits in base ``most``; the policy
        # decides each distinct tally once.
        power = most ** np.arange(width, dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(times)[:-1]))
        keys = np.add.reduceat(power[column], starts, axis=1)
        if most**width <= 1 << 20:  # few possible tallies: a table of them, no sort
            seen = np.zeros(most**width, dtype=bool)
            seen[keys] = True
            distinct = np.flatnonzero(seen)
            table = np.empty(most**width, dtype=np.int64)
            table[distinct] = policy_labels((distinct[:, None] // power) % most, policy=policy)
            out[:, drawn] = table[keys]
        else:
            distinct, inverse = np.unique(keys, return_inverse=True)
            decided = policy_labels((distinct[:, None] // power) % most, policy=policy)
            out[:, drawn] = decided[inverse.reshape(keys.shape)]
        return out

    def sample_posterior(
        self, base: np.ndarray, posterior: np.ndarray, rng: np.random.Generator, n: int
    ) -> np.ndarray:
        """``n`` label vectors drawn from an aggregation model's posterior: ``posterior[i, g]`` is the
        probability that item i's true grade is g; an item whose row is all zero (no model decision: an
        adjudicated, pending or unrateable item) keeps its ``base`` label."""
        drawn = np.flatnonzero(posterior.sum(axis=1) > 0)
        out = np.tile(base, (n, 1))
        if len(drawn):
            cumulative = np.cumsum(posterior[drawn], axis=1)
            cumulative /= cumulative[:, -1:]
            u = rng.random((n, len(drawn), 1))
            out[:, drawn] = (u > cumulative[None, :, :]).sum(axis=2)
        return out

    def of_raters(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The votes of the raters in the boolean mask ``keep`` (fixed votes always kept): (grade, item,
        rater) arrays."""
        item = np.repeat(np.arange(len(self.counts)), self.counts)
        mine = (self.rater < 0) | keep[np.maximum(self.rater, 0)]
        return self.grade[mine], item[mine], self.rater[mine]


def vote_counts(grade: np.ndarray, item: np.ndarray, n_items: int) -> np.ndarray:
    """The votes ``grade[k]`` on items ``item[k]`` as the vote-count matrix :func:`policy_labels` reads:
    shape (n_items, max grade + 2), column 0 counting each item's unrateable votes (-1), column g + 1 its
    votes of grade g."""
    width = int(grade.max()) + 2 if len(grade) else 1
    return np.bincount(item * width + grade + 1, minlength=n_items * width).reshape(n_items, width)


def policy_labels(counts: np.ndarray, *, policy: str) -> np.ndarray:
    """One label per row of the vote-count matrix ``counts`` (:func:`vote_counts`: column 0 an item's
    unrateable votes, column g + 1 its votes of grade g): ``judgements.aggregation.aggregate`` of those
    votes under ``policy`` (``required`` 1), its qrels grade, so ``UNJUDGED`` where the policy leaves the
    item unjudged (unrateable, or no vote: pending). ``policy`` is one of ``aggregation.RULES``, which read
    only how many votes each grade has (never who gave them): the rows are grouped by their counts and
    the policy runs once per distinct row, whatever the number of rows."""
    if policy not in aggregation.RULES:
        raise ValueError(
            f"a vote count decides only a rule policy ({', '.join(aggregation.RULES)}), not {policy!r}"
        )
    labels = np.full(len(counts), UNJUDGED, dtype=np.int64)
    voted = np.flatnonzero(counts.sum(axis=1) > 0)
    if not len(voted):
        return labels
    width = counts.shape[1]
    base = int(counts.max()) + 1  # each row of counts as one integer, to group the rows by it
    if width * math.log2(base) < 62:
        keys = counts[voted] @ (base ** np.arange(width, dtype=np.int64))
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        distinct = counts[voted[first]]
    else:  # too many grades or votes for one integer key: group the rows themselves (slower)
        distinct, inverse = np.unique(counts[voted], axis=0, return_inverse=True)
    decided = np.empty(len(distinct), dtype=np.int64)
    for k, row in enumerate(distinct):
        ballot: list[tuple[int, int | None]] = []
        for column, times in enumerate(row.tolist()):
            vote = None if column == 0 else column - 1
            ballot += [(len(ballot) + j, vote) for j in range(times)]
        decided[k] = aggregation.aggregate(ballot, policy=policy).qrels_grade  # UNJUDGED unless judged
    labels[voted] = decided[np.asarray(inverse).ravel()]
    return labels

"""Scoring a run: ``evaluate`` (qrels and a run in, every asked measure per topic out, as a ``Result``),
the ``all`` line's aggregates (mean, sum, count, geometric mean, as trec_eval adds them up), the topics
averaged over (common or all, ``split_judged``'s rule for topics nobody judged) and ``segment_means``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from evaluation.metrics.binary import relstring
from evaluation.metrics.measures import FAMILIES, _measure_function, plan_measures
from evaluation.metrics.ranked import (
    Average,
    Gain,
    Ranked,
    Unjudged,
    Version,
    _as_qrels,
    _as_run,
    rank_lists,
)
from judgements.release_topics import topic_is_judged
from pooling.trec_io import QrelsTable, RunTable

MIN_GEO_MEAN = 0.00001  # trec_eval's MIN_GEO_MEAN


class MissingTopicsWarning(UserWarning):
    """Averaging over common topics while the run lacks some qrels topics."""


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
    """The platform's one rule for topics nobody judged (``judgements.release_topics``, which the release
    and every score call): a topic is *judged* when at least one of its documents has a grade >= 0; any
    other topic (only pending or unrateable items, -1, or none at all, such as the extra qids in
    `topics`) is *not judged*. Not judged topics are counted and shown apart and never scored: trec_eval
    would give them 0 on every measure, a failure nobody observed. Both tuples are in qid order."""
    judged = sorted(q for q, docs in qrels.items() if topic_is_judged(docs.values()))
    kept = set(judged)
    not_judged = sorted(set(qrels).union(topics) - kept)
    return JudgedSplit({q: dict(qrels[q]) for q in judged}, tuple(judged), tuple(not_judged))


def compared_topics(has: np.ndarray) -> np.ndarray:
    """The platform's one rule for the topics runs are ranked against each other on: the judged topics
    every one of them has a score on, so that every run of a ranking is ranked on the same topics (a run
    ranked by its mean over its own topics is compared with the others on different ones). ``has`` is
    runs × topics, True where the run has a score on that judged topic (under averaging ``all`` a judged
    topic the run lacks is scored 0, so it has it); the answer is True on the topics every row has, and
    on none without rows. Which runs to rank is the caller's: a run with no such topic at all leaves
    nothing in common, and the noise floor leaves it out of its rankings, saying so."""
    has = np.asarray(has, dtype=bool)
    return np.asarray(has.all(axis=0)) if len(has) else np.zeros(has.shape[-1], dtype=bool)


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
    """Score a run on qrels with trec_eval's semantics (see the docstring of ``evaluation.metrics``).

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
        function = _measure_function(m, gain)
        if function not in done:
            done[function] = function(ranked)
        values_all[m.name] = done[function]

    nobody = ~ranked.judged_topics if skip_unjudged_topics else np.zeros(ranked.n_topics, bool)
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
                f"the run has no results for {len(missing)} of {len(ranked.topics) - len(unjudged_topics)} "
                f"qrels topics ({_shown(missing)}): its means are over the {len(keep)} it has "
                "(average='all', trec_eval -c, counts them as 0)"
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

"""The noise-floor report of a campaign: every run and pair of runs with the noise of raters and of topics
(pure: no Django). The statistics are in :mod:`evaluation.noise`; the scoring in :mod:`evaluation.resample`.

A run's raters interval (and a pair's raters half-width) is that of the report's policy: the labels are
resampled by bootstrapping each judged item's votes and aggregating each resample by that same policy
(``Votes.sample``); under a model policy the labels are drawn from the model's posterior instead, and
under ``rater:NAME`` (one rater's labels) each item takes one of its votes (``label_source``). The
interval is as wide as the resampled scores' 2.5–97.5 percentiles and placed around the score printed
beside it (``noise.interval_around``), so it holds that score and changes with the policy as it does.
Items the consensus leaves unjudged stay unjudged and adjudicated items keep their label in every
resample. When every item's votes agree, every resample is the consensus: an interval of width 0 at the
score.

Seeded: each part draws from its own stream ``numpy.random.default_rng([seed, part])``, so changing the
number of label samples does not move the topic bootstrap, and the same inputs and seed give the same
report, number for number.

The report is declared once, as the dataclasses it is built as (:class:`NoiseReport` and the bodies in it,
which the API's serializers read); :func:`report` and :func:`stability` hand them on as dicts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation import metrics, noise
from evaluation.noise_bodies import (
    NoiseMeasure,
    NoisePair,
    NoiseReport,
    NoiseRun,
    NoiseSettings,
    SplitTau,
    Stability,
    Tau,
)
from evaluation.resample import Items, RunLike, Scorer, Votes, pair_means, run_means
from judgements import aggregation
from judgements.aggregation import DEFAULT_POLICY
from labeling.bodies import as_dict

TOPIC_STREAM, LABEL_STREAM, SPLIT_STREAM = 1, 2, 3
DEFAULT_MEASURES = (
    "ndcg_cut_10",
    "P_10",
)  # cut-off measures: scored on the top 10 rows only (resample.TOP_K)

VoteMap = Mapping[tuple[str, str], Sequence[tuple[str, int | None]]]


@dataclass(frozen=True)
class Campaign:
    """What a report needs: the scorer over the pool items, the consensus (the policy's qrels, one label
    per item) and every item's votes."""

    scorer: Scorer
    consensus: np.ndarray
    votes: Votes
    not_judged: tuple[str, ...]

    @classmethod
    def of(
        cls,
        runs: Mapping[str, RunLike],
        consensus: Mapping[str, Mapping[str, int]],
        votes: VoteMap,
        *,
        measures: Sequence[str] = DEFAULT_MEASURES,
        fixed: Mapping[tuple[str, str], int] | None = None,
        relevance_level: int = 1,
        gain: metrics.Gain = "linear",
        unjudged: metrics.Unjudged = "nonrelevant",
        depth: int | None = None,
        topics: Iterable[str] = (),
        average: metrics.Average = "common",
    ) -> Campaign:
        """``consensus`` is ``{qid: {docid: grade}}`` with -1 for pending or unrateable items (the
        platform's current qrels); ``votes`` ``{(qid, docid): [(rater, grade or None), ...]}``; ``fixed``
        the adjudicated items, whose label no resample changes; ``topics`` every topic of the campaign
        (one with no item in ``consensus`` is one nobody judged, as ``metrics.split_judged`` counts it);
        ``average`` as in ``metrics.evaluate``: ``all`` (trec_eval -c) scores a judged topic a run lacks 0,
        in its mean and in every comparison of it."""
        items = Items.of(consensus)
        scorer = Scorer(
            runs,
            items,
            measures,
            relevance_level=relevance_level,
            gain=gain,
            unjudged=unjudged,
            depth=depth,
            average=average,
        )
        not_judged = metrics.split_judged(consensus, topics=topics).not_judged
        return cls(scorer, items.labels(consensus), Votes.of(items, votes, fixed), not_judged)


def _rng(seed: int, stream: int) -> np.random.Generator:
    return np.random.default_rng([seed, stream])


def _clean(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), 6)


def _defined(stat: Callable[[np.ndarray], Any], values: Sequence[float] | np.ndarray) -> float:
    """`stat` of the values that are defined (not NaN), NaN when none is: an undefined split or spread is
    left out, and with nothing defined the figure is undefined (numpy's nan-functions would give the
    same NaN with a warning of an empty or all-NaN slice, an error where warnings are)."""
    array = np.asarray(values, dtype=float)
    defined = array[~np.isnan(array)]
    return float(stat(defined)) if len(defined) else math.nan


def _taus(reference: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    ok = np.isfinite(reference) & np.isfinite(other)
    if ok.sum() < 2:
        return math.nan, math.nan
    return noise.kendall_tau(reference[ok], other[ok]), noise.tau_ap(reference[ok], other[ok])


@dataclass(frozen=True)
class _Rankings:
    """Two label variants' rankings of the same runs on the same topics: each compared run's mean per
    measure (measures × runs, NaN for a run left out), the runs compared and the topics compared on."""

    first: np.ndarray
    second: np.ndarray
    runs: np.ndarray
    topics: np.ndarray


def _rankings(first: np.ndarray, second: np.ndarray) -> _Rankings:
    """Rank the runs on both variants' scores (measures × runs × topics, NaN where a run has no score)
    over one topic set, ``metrics.compared_topics``' rule (the pool-bias figure's): the topics both
    variants judged that every compared run has a score on in both. Under ``average="all"`` a judged topic
    a run lacks is scored 0, so that set is every topic both variants judged; under ``common`` it is the
    judged topics every compared run has results for. A run with no score on any topic both variants judged
    has nothing to be ranked on: it is left out of the rankings (``runs`` False) rather than emptying the
    common set for every other run."""
    has = ~(np.isnan(first).any(axis=0) | np.isnan(second).any(axis=0))  # runs × topics
    runs = has.any(axis=1)
    topics = metrics.compared_topics(has[runs])
    keep = runs[None, :, None] & topics[None, None, :]
    return _Rankings(
        run_means(np.where(keep, first, np.nan)), run_means(np.where(keep, second, np.nan)), runs, topics
    )


def stability_body(
    campaign: Campaign, *, n_splits: int, max_raters: int, seed: int, policy: str = DEFAULT_POLICY
) -> Stability:
    """Ranking stability across raters, for each measure: each rater's own qrels (the ``max_raters``
    raters with most votes) against the consensus on the topics that rater judged, and ``n_splits`` random
    halvings of the raters, half against half (each half aggregated by ``split_policy``); τ, τ_AP, and per
    pair of runs the swap rate over the splits.

    The two rankings of a τ rank the runs on one topic set (:func:`_rankings`, ``metrics.compared_topics``'
    rule): under ``average="all"`` every topic both label variants judged (a run lacking one scores 0
    there), under ``common`` those of them every compared run has. A run with no score on any of them is
    left out of that τ and named in ``runs_left_out`` (over every comparison); each rater's row counts
    the topics compared (``compared_topics``). The swap rate is paired, pair by pair (``pair_means``).

    ``split_policy`` is ``policy`` when it is a rule (``aggregation.RULES``) that aggregates any set of
    votes; a rater policy (``rater:NAME``: one rater's labels, nothing of a half without NAME) and a model
    policy (fitted on every rater's votes, not a half's) aggregate no half, so the halves then take the
    default rule, and ``split_policy`` says so. A rater's own qrels are their votes whatever the rule (a
    rule of one vote is that vote)."""
    scorer, votes = campaign.scorer, campaign.votes
    split_policy = policy if policy in aggregation.RULES else DEFAULT_POLICY
    n_items = len(scorer.items)
    n_raters = len(votes.raters)
    measures = scorer.measures
    names = scorer.names
    left_out: set[str] = set()
    per_rater = []
    by_votes = np.bincount(votes.rater[votes.rater >= 0], minlength=n_raters)
    for r in np.argsort(-by_votes, kind="stable")[:max_raters].tolist():
        keep = np.zeros(n_raters, dtype=bool)
        keep[r] = True
        labels = noise.rater_labels(votes, n_items, keep, policy=split_policy)
        judged = scorer.items.judged_topics(labels)
        ranked = _rankings(scorer.score(campaign.consensus, topics=judged), scorer.score(labels))
        left_out.update(name for name, kept in zip(names, ranked.runs.tolist(), strict=True) if not kept)
        row: dict[str, Any] = {
            "rater": votes.raters[r],
            "votes": int(by_votes[r]),
            "topics": int(judged.sum()),
            "compared_topics": int(ranked.topics.sum()),
        }
        for m, name in enumerate(measures):
            tau, tap = _taus(ranked.first[m], ranked.second[m])
            row[name] = Tau(tau=_clean(tau), tau_ap=_clean(tap))
        per_rater.append(row)

    pairs = list(itertools.combinations(range(scorer.n_runs), 2))
    swaps = np.zeros((len(measures), len(pairs)))
    taus: list[list[float]] = [[] for _ in measures]
    taps: list[list[float]] = [[] for _ in measures]
    rng = _rng(seed, SPLIT_STREAM)
    done = 0
    if n_raters >= 2:
        for _ in range(n_splits):
            half = np.zeros(n_raters, dtype=bool)
            half[rng.permutation(n_raters)[: n_raters // 2]] = True
            left_scores = scorer.score(noise.rater_labels(votes, n_items, half, policy=split_policy))
            right_scores = scorer.score(noise.rater_labels(votes, n_items, ~half, policy=split_policy))
            ranked = _rankings(left_scores, right_scores)
            left_out.update(name for name, kept in zip(names, ranked.runs.tolist(), strict=True) if not kept)
            if pairs:  # a swap: the paired difference (over the topics both runs have) changes sign
                swaps += np.sign(pair_means(left_scores, pairs)) != np.sign(pair_means(right_scores, pairs))
            for m in range(len(measures)):
                tau, tap = _taus(ranked.first[m], ranked.second[m])
                taus[m].append(tau)
                taps[m].append(tap)
            done += 1
    return Stability(
        raters=per_rater,
        raters_shown=len(per_rater),
        raters_total=n_raters,
        splits=done,
        split_policy=split_policy,
        runs_left_out=sorted(left_out),
        split_tau={
            name: SplitTau(
                tau_mean=_clean(_defined(np.mean, taus[m])),
                tau_min=_clean(_defined(np.min, taus[m])),
                tau_ap_mean=_clean(_defined(np.mean, taps[m])),
            )
            for m, name in enumerate(measures)
        },
        swap_rate={
            name: {
                f"{names[i]}\t{names[j]}": _clean(swaps[m][k] / done) if done else None
                for k, (i, j) in enumerate(pairs)
            }
            for m, name in enumerate(measures)
        },
    )


def label_samples(
    campaign: Campaign,
    *,
    n_samples: int,
    seed: int,
    posterior: np.ndarray | None = None,
    policy: str = DEFAULT_POLICY,
) -> tuple[np.ndarray, np.ndarray]:
    """On ``n_samples`` re-drawn label vectors: every run's mean, shape (samples, measures, runs), and
    every pair's paired difference (``resample.pair_means``, the pairs in ``itertools.combinations``
    order), shape (samples, measures, pairs). The labels are a bootstrap of each item's votes aggregated
    by ``policy`` (``Votes.sample``; under ``rater:NAME`` one of each item's votes, ``label_source``), or,
    given a model's ``posterior``, drawn from it (``Votes.sample_posterior``)."""
    rng = _rng(seed, LABEL_STREAM)
    scorer = campaign.scorer
    pairs = list(itertools.combinations(range(scorer.n_runs), 2))
    out = np.empty((n_samples, len(scorer.measures), scorer.n_runs))
    paired = np.empty((n_samples, len(scorer.measures), len(pairs)))
    batch = 16  # label vectors drawn a batch at a time: bounded memory, same stream
    for start in range(0, n_samples, batch):
        size = min(batch, n_samples - start)
        if posterior is None:
            drawn = campaign.votes.sample(campaign.consensus, rng, size, policy=policy)
        else:
            drawn = campaign.votes.sample_posterior(campaign.consensus, posterior, rng, size)
        for k in range(size):
            scores = scorer.score(drawn[k])
            out[start + k] = run_means(scores)
            if pairs:
                paired[start + k] = pair_means(scores, pairs)
    return out, paired


def label_source(policy: str, posterior: np.ndarray | None = None) -> str:
    """What the label resamples are (``Votes.sample``): ``posterior``, drawn from a model policy's
    posterior; ``one_vote``, under ``rater:NAME``, one of each item's votes (the noise of a one-rater
    qrels: a bootstrap of NAME's own single vote would always give it back); ``votes``, a bootstrap of
    each item's votes aggregated by the policy."""
    if posterior is not None:
        return "posterior"
    return "one_vote" if aggregation.parse_policy(policy).kind == "rater" else "votes"


def report_body(
    campaign: Campaign,
    *,
    n_topic_samples: int = 1000,
    n_label_samples: int = 200,
    n_splits: int = 20,
    max_raters: int = 30,
    seed: int = 0,
    alpha: float = noise.ALPHA,
    power: float = noise.POWER,
    posterior: np.ndarray | None = None,
    policy: str = DEFAULT_POLICY,
    planner_deltas: Sequence[float] = noise.PLANNER_DELTAS,
) -> NoiseReport:
    """The whole noise-floor report: runs with their rater intervals, every pair of runs with
    its difference, both half-widths, the bootstrap p-value, the swap rate and the verdict, per measure;
    discriminative power, minimum detectable difference and the topic planner per measure; stability."""
    scorer = campaign.scorer
    names, measures = scorer.names, scorer.measures
    base = scorer.score(campaign.consensus)
    means = run_means(base)
    judged = scorer.items.judged_topics(campaign.consensus)
    topic_index = np.flatnonzero(judged)
    weights = noise.bootstrap_weights(len(topic_index), n_topic_samples, _rng(seed, TOPIC_STREAM))
    # Rater noise needs an item with two votes or more (a qrels file has none: raters not measured).
    disagreement_possible = bool((campaign.votes.counts >= 2).any())
    samples = paired_samples = None
    if n_label_samples and disagreement_possible:
        samples, paired_samples = label_samples(
            campaign, n_samples=n_label_samples, seed=seed, posterior=posterior, policy=policy
        )
    steady = stability_body(campaign, n_splits=n_splits, max_raters=max_raters, seed=seed, policy=policy)
    lo_q, hi_q = 100 * alpha / 2, 100 * (1 - alpha / 2)
    if samples is not None:
        intervals = noise.interval_around(means, samples, alpha=alpha)

    runs = []
    for r, name in enumerate(names):
        run_means_: dict[str, float | None] = {}
        raters: dict[str, list[float | None]] = {}
        for m, measure in enumerate(measures):
            run_means_[measure] = _clean(means[m, r])
            if samples is not None:
                raters[measure] = [_clean(intervals[0, m, r]), _clean(intervals[1, m, r])]
        runs.append(
            NoiseRun(run=name, topics=int((~np.isnan(base[0, r])).sum()), means=run_means_, raters=raters)
        )

    pairs: dict[str, list[NoisePair]] = {}
    summary: dict[str, NoiseMeasure] = {}
    for m, measure in enumerate(measures):
        boot = noise.topic_bootstrap(base[m][:, topic_index], weights, alpha=alpha)
        rater_hw = np.full(len(boot.pairs), math.nan)
        if paired_samples is not None and boot.pairs:
            lo, hi = noise.percentiles(paired_samples[:, m, :], [lo_q, hi_q], axis=0)
            rater_hw = (hi - lo) / 2.0
        swap = steady.swap_rate[measure]
        rows = []
        for k, (i, j) in enumerate(boot.pairs):
            delta = float(boot.delta[k])  # paired: over the topics both runs have, as the interval
            rows.append(
                NoisePair(
                    a=names[i],
                    b=names[j],
                    delta=_clean(delta),
                    topics=int(boot.n[k]),
                    raters_half_width=_clean(rater_hw[k]),
                    topics_interval=[_clean(boot.low[k]), _clean(boot.high[k])]
                    if boot.n[k] >= noise.MIN_TOPICS
                    else [None, None],
                    topics_half_width=_clean(boot.half_width[k]),
                    p_value=_clean(boot.p_value[k]),
                    significant=bool(boot.p_value[k] < alpha),
                    swap_rate=swap.get(f"{names[i]}\t{names[j]}"),
                    verdict=noise.verdict(
                        measure, delta, raters=float(rater_hw[k]), topics=float(boot.half_width[k])
                    ),
                )
            )
        pairs[measure] = rows
        sigma = _defined(np.median, boot.sd)  # NaN when no pair has a spread
        n = len(topic_index)
        summary[measure] = NoiseMeasure(
            label=noise.measure_label(measure),
            discriminative_power=_clean(float(np.mean(boot.p_value < alpha))) if len(boot.pairs) else None,
            sd_of_differences=_clean(sigma),
            minimum_detectable_difference=_clean(
                noise.minimum_detectable_difference(sigma, n, alpha=alpha, power=power)
            ),
            planner={
                f"{d:g}": (
                    noise.topics_needed(d, sigma, alpha=alpha, power=power) if math.isfinite(sigma) else None
                )
                for d in planner_deltas
            },
        )
    return NoiseReport(
        measures=list(measures),
        key_measure=measures[0] if measures else None,
        seed=seed,
        settings=NoiseSettings(
            topic_samples=n_topic_samples,
            label_samples=n_label_samples if samples is not None else 0,
            label_source=label_source(policy, posterior),
            splits=n_splits,
            alpha=alpha,
            power=power,
            unjudged=scorer.unjudged,
        ),
        judged_topics=len(topic_index),
        not_judged_topics=list(campaign.not_judged),
        runs=runs,
        pairs=pairs,
        measures_summary=summary,
        stability=steady,
    )


#: `report_body` and `stability_body` as dicts, for the callers that index them (the pages, the command).
report = as_dict(report_body)
stability = as_dict(stability_body)


def comparisons(data: Mapping[str, Any], measure: str | None = None) -> list[str]:
    """The verdict lines of a report (one per pair of runs, ``a vs b: verdict``) for ``measure`` (default
    the key measure)."""
    measure = measure or data["key_measure"]
    return [f"{row['a']} vs {row['b']}: {row['verdict']}" for row in data["pairs"].get(measure, [])]

"""The noise floor of a comparison between runs (pure: no Django).

Three sources of noise, each measured, seeded and reproducible (``numpy.random.default_rng(seed)``):

- **Raters** — *ranking stability*: every run scored on each rater's own qrels and on the two halves of
  random splits of the raters (each half aggregated by the platform's policy, ``judgements.aggregation``,
  or by the default rule when the policy aggregates no half: ``rater:NAME``, a model);
  Kendall's τ (τ-b) and τ_AP (Yilmaz, Aslam & Robertson 2008) between the system rankings, each ranking
  the runs on the same topics (``metrics.compared_topics``), and the swap
  rate of each pair of runs (Voorhees 2000: the share of splits whose two halves order the pair
  differently). *Label uncertainty*: a bootstrap of the raters' votes — each judged item draws as many
  votes as it has from its own, with replacement, and takes the label the policy gives them
  (``resample.Votes.sample``; under ``rater:NAME``, one of its votes) — or, under a model policy, each
  label drawn from the model's posterior;
  every run re-scored on each resample; each run's mean and each pair's difference get the 2.5–97.5
  percentile interval that rater disagreement alone produces; a run's is placed around the score the
  policy gives (:func:`interval_around`).
- **Topics** — a paired bootstrap over topics (Sakai 2006) for each pair of runs: the percentile 95%
  interval of the mean difference, and p = 2 · min(share of resampled differences <= 0, share >= 0)
  (capped at 1), so a pair is significant exactly when its interval excludes 0. Discriminative power of a
  measure = share of run pairs significant at α. Minimum detectable difference at α and power:
  (z₁₋α/₂ + z_power) · σ / √n, σ the median over pairs of the standard deviation of per-topic differences;
  the topic planner inverts it, n = ⌈((z₁₋α/₂ + z_power) · σ / δ)²⌉.
- A **verdict** beside each comparison: a difference is a decision only when it is larger than both
  half-widths (raters and topics); otherwise it is within the noise floor.

Scores come from :class:`evaluation.resample.Scorer`, which calls :mod:`evaluation.metrics`; a topic nobody
judged (``metrics.split_judged``'s rule) is never scored, in any variant.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evaluation import metrics
from evaluation.resample import Votes, policy_labels, vote_counts
from judgements import aggregation

ALPHA = 0.05
POWER = 0.8
PLANNER_DELTAS = (0.01, 0.02, 0.05)

__all__ = [
    "kendall_tau",
    "tau_ap",
    "topic_bootstrap",
    "minimum_detectable_difference",
    "topics_needed",
    "verdict",
    "measure_label",
]


def measure_label(measure: str) -> str:
    """``ndcg_cut_10`` → ``nDCG@10``, ``P_10`` → ``P@10``, ``map`` → ``MAP``, ``recip_rank`` → ``MRR``."""
    names = {"map": "MAP", "recip_rank": "MRR", "ndcg": "nDCG", "bpref": "bpref", "Rprec": "R-prec"}
    if measure in names:
        return names[measure]
    for prefix, shown in (
        ("ndcg_cut_", "nDCG@"),
        ("P_", "P@"),
        ("recall_", "recall@"),
        ("judged_", "judged@"),
    ):
        if measure.startswith(prefix):
            return shown + measure[len(prefix) :]
    return measure


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b between two systems' score vectors (as ``scipy.stats.kendalltau``): Σ_{i<j}
    sign(xᵢ−xⱼ)·sign(yᵢ−yⱼ) / √(pairs untied in x · pairs untied in y); 1.0 for identical orderings, NaN
    when either vector is constant. Over N systems in O(N²), which is nothing for the few runs compared."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) < 2:
        return math.nan
    upper = np.triu_indices(len(a), 1)
    sx = np.sign(a[:, None] - a[None, :])[upper]
    sy = np.sign(b[:, None] - b[None, :])[upper]
    denominator = math.sqrt(float(np.abs(sx).sum()) * float(np.abs(sy).sum()))
    return float((sx * sy).sum() / denominator) if denominator else math.nan


def tau_ap(reference: Sequence[float], other: Sequence[float]) -> float:
    """τ_AP (Yilmaz, Aslam & Robertson 2008) of ``other`` against the ``reference`` ranking:
    2/(N−1) · Σ_{i=2..N} C(i)/(i−1) − 1, systems in the reference's order (score descending, ties by
    position), C(i) = systems above the i-th in the reference that ``other`` also ranks above it (ties in
    ``other`` broken the same way). Swaps near the top cost more than swaps near the bottom."""
    ref, oth = np.asarray(reference, dtype=float), np.asarray(other, dtype=float)
    n = len(ref)
    if n < 2:
        return math.nan
    order = np.lexsort((np.arange(n), -ref))
    rank_other = np.empty(n, dtype=np.intp)
    rank_other[np.lexsort((np.arange(n), -oth))] = np.arange(n)
    positions = rank_other[order]
    total = 0.0
    for i in range(1, n):
        total += np.count_nonzero(positions[:i] < positions[i]) / i
    return float(2.0 * total / (n - 1) - 1.0)


#: The fewest topics a pair of runs must share for the topics' noise to be measured at all.
MIN_TOPICS = metrics.MIN_COMMON_TOPICS


@dataclass(frozen=True)
class Bootstrap:
    """Paired bootstrap over topics for every pair of runs (rows of ``pairs``), one measure."""

    pairs: tuple[tuple[int, int], ...]
    delta: np.ndarray  # observed mean difference (a − b) over the topics both have
    low: np.ndarray
    high: np.ndarray
    p_value: np.ndarray
    sd: np.ndarray  # standard deviation of the per-topic differences
    n: np.ndarray  # topics both have

    @property
    def half_width(self) -> np.ndarray:
        """Half the interval's width; NaN (not measured) for a pair with fewer than ``MIN_TOPICS`` topics in
        common: the resamples of one topic are all that topic, an interval of width 0 that is no floor."""
        return np.where(self.n >= MIN_TOPICS, (self.high - self.low) / 2.0, np.nan)


def bootstrap_weights(n_topics: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each topic is drawn in each resample: shape (n_samples, n_topics), rows summing to
    n_topics (topics drawn with replacement)."""
    draws = rng.integers(0, n_topics, size=(n_samples, n_topics))
    rows = np.repeat(np.arange(n_samples), n_topics)
    weights = np.zeros((n_samples, n_topics))
    np.add.at(weights, (rows, draws.ravel()), 1.0)
    return weights


def topic_bootstrap(scores: np.ndarray, weights: np.ndarray, *, alpha: float = ALPHA) -> Bootstrap:
    """Paired bootstrap of every pair of runs from per-topic ``scores`` (runs × topics, NaN where a run
    has no score), resampling topics by ``weights`` (``bootstrap_weights``); see the module docstring."""
    n_runs = scores.shape[0]
    pairs = tuple(itertools.combinations(range(n_runs), 2))
    a = np.array([p[0] for p in pairs], dtype=np.intp)
    b = np.array([p[1] for p in pairs], dtype=np.intp)
    diff = scores[a] - scores[b]
    valid = ~np.isnan(diff)
    d = np.where(valid, diff, 0.0)
    v = valid.astype(np.float64)
    n = v.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = d.sum(axis=1) / n
        sd = np.sqrt(np.maximum((d * d).sum(axis=1) - n * delta**2, 0.0) / np.maximum(n - 1, 1))
        n_star = v @ weights.T
        means = (d @ weights.T) / n_star
    finite = np.isfinite(means)
    tol = 1e-12
    below = np.where(finite, means <= tol, False).sum(axis=1)
    above = np.where(finite, means >= -tol, False).sum(axis=1)
    count = np.maximum(finite.sum(axis=1), 1)
    p = np.minimum(1.0, 2.0 * np.minimum(below, above) / count)
    p = np.where(n >= MIN_TOPICS, p, np.nan)  # one topic tests nothing (its resamples are all alike)
    if len(pairs):
        qs = [100 * alpha / 2, 100 * (1 - alpha / 2)]
        low, high = percentiles(np.where(finite, means, np.nan), qs, axis=1)
    else:
        low = high = n
    return Bootstrap(pairs, delta, np.asarray(low), np.asarray(high), p, sd, n)


def percentiles(values: np.ndarray, qs: Sequence[float], axis: int) -> np.ndarray:
    """``numpy.nanpercentile`` along ``axis``, vectorised when nothing is NaN (the usual case; numpy's
    NaN-aware version loops in Python over every other index). A slice with no number at all (nothing
    judged to compare) has NaN percentiles, undefined, without numpy's "All-NaN slice" warning."""
    missing = np.isnan(values)
    if not missing.any():
        return np.asarray(np.percentile(values, qs, axis=axis))
    lanes = np.moveaxis(values, axis, -1)
    empty = np.moveaxis(missing, axis, -1).all(axis=-1)
    out = np.full((len(qs), *empty.shape), np.nan)
    if not empty.all():
        out[:, ~empty] = np.nanpercentile(lanes[~empty], qs, axis=-1)
    return out


def interval_around(score: np.ndarray, samples: np.ndarray, *, alpha: float = ALPHA) -> np.ndarray:
    """The interval that the resampled ``samples`` (first axis: the resamples of each ``score``) give
    around ``score``: the α/2 and 1 − α/2 percentiles of the samples, moved as far as their median is off
    the score, shape (2, *score.shape). It always holds the score and is as wide as the samples' own
    percentile interval. The move is needed because the resampled labels of a rounding or tie-breaking
    policy are not centred on the consensus (the majority of (3, 0) is 0, the majority of a resample of
    those votes 0 or 3), so with many items the samples' own interval can lie entirely beside the score;
    its width is the noise, its place is the score's."""
    low, middle, high = percentiles(samples, [100 * alpha / 2, 50.0, 100 * (1 - alpha / 2)], axis=0)
    return np.stack([score + (low - middle), score + (high - middle)])


def _z(alpha: float, power: float) -> float:
    from scipy import stats  # here: scipy.stats takes a second; every process loads this module

    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


def minimum_detectable_difference(
    sigma: float, n_topics: int, *, alpha: float = ALPHA, power: float = POWER
) -> float:
    """The smallest true mean difference a two-sided paired test at ``alpha`` detects with probability
    ``power`` over ``n_topics`` topics, per-topic differences of standard deviation ``sigma`` (normal
    approximation): (z₁₋α/₂ + z_power) · σ / √n."""
    if n_topics < 1:
        return math.inf
    return _z(alpha, power) * sigma / math.sqrt(n_topics)


def topics_needed(delta: float, sigma: float, *, alpha: float = ALPHA, power: float = POWER) -> int:
    """The topic planner: how many topics a campaign needs to detect a true difference ``delta`` at
    ``alpha`` with ``power`` (the inverse of :func:`minimum_detectable_difference`, at least 2)."""
    if delta <= 0:
        raise ValueError(f"delta must be positive, not {delta!r}")
    return max(2, math.ceil((_z(alpha, power) * sigma / delta) ** 2))


def verdict(measure: str, delta: float, *, raters: float | None, topics: float | None) -> str:
    """One plain sentence on a difference: a decision only when the topics' noise is measured and the
    difference is larger than it and than the raters' (when measured)."""
    name = measure_label(measure)
    parts = [
        f"±{raters:.3f} from raters"
        if raters is not None and math.isfinite(raters)
        else "raters not measured",
        f"±{topics:.3f} from topics"
        if topics is not None and math.isfinite(topics)
        else "topics not measured",
    ]
    floors = [x for x in (raters, topics) if x is not None and math.isfinite(x)]
    if not math.isfinite(delta):
        return f"Δ {name}: not comparable (no judged topic both runs have: nothing to compare them on)."
    if topics is None or not math.isfinite(topics):
        return (
            f"Δ {name} = {delta:.3f} ({', '.join(parts)}: fewer than {MIN_TOPICS} judged topics both runs "
            "have): not a decision."
        )
    if abs(delta) > max(floors):
        return f"Δ {name} = {delta:.3f}, beyond the noise floor ({', '.join(parts)}): a decision."
    return f"Δ {name} = {delta:.3f}, within the noise floor ({', '.join(parts)}): not a decision."


# ---------------------------------------------------------------------------------------------------------
# Variants of the labels from the votes


def rater_labels(
    votes: Votes, n_items: int, keep: np.ndarray, *, policy: str = aggregation.DEFAULT_POLICY
) -> np.ndarray:
    """One label per item from the votes of the raters in ``keep`` (and every fixed vote), aggregated by
    ``judgements.aggregation.aggregate`` under ``policy`` (``required`` 1, :func:`resample.policy_labels`);
    -1 where they left the item unjudged."""
    grade, item, _ = votes.of_raters(keep)
    return policy_labels(vote_counts(grade, item, n_items), policy=policy)

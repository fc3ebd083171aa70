"""The offline–online tracker's statistics (pure: numpy and scipy's normal quantile, no Django).

For a set of past ranking changes ("experiments"), each with an offline delta (a metric on human labels,
treatment − baseline) and an online delta (an A/B metric, or an interleaving preference for the
treatment): do the offline deltas predict the online ones?

* **Pearson's r** with the Fisher interval: z = atanh(r), se = 1/√(n − 3), r ∈ tanh(z ± z_{1−α/2}·se)
  (needs n ≥ 4; r = ±1 gives the point as its interval).
* **Spearman's ρ**: Pearson's r of the ranks, ties given their average rank.
* **Kendall's τb**: (concordant − discordant) / √((n₀ − n₁)(n₀ − n₂)), n₀ = n(n − 1)/2 and n₁, n₂ the
  pairs tied in x and in y (a pair tied in either is neither concordant nor discordant).
* **Sign agreement**: experiments whose offline and online deltas have the same sign, over the experiments
  where neither delta is exactly 0 (a zero has no direction), with the Wilson score interval.
* **The verdict** (``verdict``), in plain words; the thresholds are constants below, stated on the page.

Undefined is None, never NaN: a statistic whose denominator is 0 (fewer experiments than it needs, or all
deltas equal) is None and the page prints it as "undefined".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

#: The offline metric can gate changes when the lower end of Pearson's interval reaches this…
GATE_LOWER_R = 0.5
#: …and the lower end of the sign agreement's interval is above a coin's 1/2.
GATE_LOWER_SIGNS = 0.5
#: Below this point estimate of r (or with an interval reaching 0) the correlation is too weak to gate on.
WEAK_R = 0.3
#: Fewer experiments than this say nothing either way.
MIN_EXPERIMENTS = 5


@dataclass(frozen=True)
class Correlation:
    """The tracker's statistics over n experiments (None where undefined, see the module)."""

    n: int
    pearson: float | None
    pearson_interval: tuple[float, float] | None
    spearman: float | None
    kendall_tau_b: float | None
    signs_agree: int
    signs_compared: int
    signs_interval: tuple[float, float] | None
    level: float
    verdict: str
    gate: bool


def _arrays(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.shape != ys.shape or xs.ndim != 1:
        raise ValueError("x and y must be two lists of the same length")
    if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("every delta must be a finite number")
    return xs, ys


def pearson(x: ArrayLike, y: ArrayLike) -> float | None:
    """Pearson's r; None for fewer than 2 points or a constant x or y."""
    xs, ys = _arrays(x, y)
    if len(xs) < 2:
        return None
    dx, dy = xs - xs.mean(), ys - ys.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denominator == 0:
        return None
    return max(-1.0, min(1.0, float(dx @ dy) / denominator))


def fisher_interval(r: float | None, n: int, *, level: float = 0.95) -> tuple[float, float] | None:
    """The Fisher z interval of Pearson's r over n points; None for r undefined or n < 4."""
    if r is None or n < 4:
        return None
    if abs(r) == 1:
        return (r, r)
    from scipy.stats import norm  # here, not at the top: see wilson_interval

    z, half = math.atanh(r), float(norm.ppf(0.5 + level / 2)) / math.sqrt(n - 3)
    return (math.tanh(z - half), math.tanh(z + half))


def average_ranks(values: ArrayLike) -> np.ndarray:
    """1-based ranks, ties given the mean of the ranks they span."""
    xs = np.asarray(values, dtype=float)
    order = np.argsort(xs, kind="stable")
    ranks = np.empty(len(xs))
    sorted_values = xs[order]
    start = 0
    while start < len(xs):
        end = start
        while end + 1 < len(xs) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    """Spearman's ρ: Pearson's r of the average ranks."""
    xs, ys = _arrays(x, y)
    return pearson(average_ranks(xs), average_ranks(ys))


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> float | None:
    """Kendall's τb (see the module); None for fewer than 2 points or when every pair ties in x or in y."""
    xs, ys = _arrays(x, y)
    n = len(xs)
    if n < 2:
        return None
    i, j = np.triu_indices(n, k=1)
    sx, sy = np.sign(xs[i] - xs[j]), np.sign(ys[i] - ys[j])
    n0 = len(i)
    tied_x, tied_y = int((sx == 0).sum()), int((sy == 0).sum())
    denominator = math.sqrt((n0 - tied_x) * (n0 - tied_y))
    if denominator == 0:
        return None
    return float((sx * sy).sum()) / denominator


def wilson_interval(successes: int, n: int, *, level: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion successes / n; None for n = 0."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError("successes must be between 0 and n")
    from scipy.stats import norm  # here: scipy.stats takes a second; every process loads this module

    z = float(norm.ppf(0.5 + level / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def sign_agreement(x: ArrayLike, y: ArrayLike) -> tuple[int, int]:
    """(experiments whose deltas share a sign, experiments where neither delta is 0)."""
    xs, ys = _arrays(x, y)
    compared = (xs != 0) & (ys != 0)
    agree = compared & (np.sign(xs) == np.sign(ys))
    return int(agree.sum()), int(compared.sum())


def verdict(
    n: int, r: float | None, r_interval: tuple[float, float] | None, signs: tuple[float, float] | None
) -> tuple[str, bool]:
    """The plain sentence for the page, and whether the offline metric may gate changes here."""
    if n < MIN_EXPERIMENTS or r is None or r_interval is None:
        return (
            f"Too few experiments to tell ({n}; at least {MIN_EXPERIMENTS} with varying deltas are needed): "
            "do not gate on the offline metric yet.",
            False,
        )
    low = r_interval[0]
    if r < WEAK_R or low <= 0:
        return (
            f"The correlation is too weak to gate on (r = {r:.2f}, its interval reaches {low:.2f}): here "
            "the offline metric is not a decision tool. Decide ranking changes online.",
            False,
        )
    if low >= GATE_LOWER_R and signs is not None and signs[0] > GATE_LOWER_SIGNS:
        return (
            f"Offline deltas have predicted online deltas here (r = {r:.2f}, at least {low:.2f}; the signs "
            f"agree more often than a coin would, at least {signs[0]:.0%}): the offline metric is a usable "
            "filter; online experiments still decide.",
            True,
        )
    return (
        f"The offline metric predicts the online one only loosely (r = {r:.2f}, perhaps as low as "
        f"{low:.2f}): use it to filter out clear losses, not to decide.",
        False,
    )


def correlate(offline: ArrayLike, online: ArrayLike, *, level: float = 0.95) -> Correlation:
    """Every statistic of the module over paired deltas, and the verdict."""
    xs, ys = _arrays(offline, online)
    n = len(xs)
    r = pearson(xs.tolist(), ys.tolist())
    r_interval = fisher_interval(r, n, level=level)
    agree, compared = sign_agreement(xs.tolist(), ys.tolist())
    signs = wilson_interval(agree, compared, level=level)
    text, gate = verdict(n, r, r_interval, signs)
    return Correlation(
        n=n,
        pearson=r,
        pearson_interval=r_interval,
        spearman=spearman(xs.tolist(), ys.tolist()),
        kendall_tau_b=kendall_tau_b(xs.tolist(), ys.tolist()),
        signs_agree=agree,
        signs_compared=compared,
        signs_interval=signs,
        level=level,
        verdict=text,
        gate=gate,
    )

"""Paired significance tests between two runs' per-topic values (a ``Result`` or ``{qid: value}`` each):
the paired t-test and the paired randomisation (sign-flip permutation) test."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.metrics.scoring import Result


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


#: The fewest topics two runs must share for a paired test (or a bootstrap over topics) to test anything.
MIN_COMMON_TOPICS = 2


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
    if len(common) < MIN_COMMON_TOPICS:
        raise ValueError(
            f"a paired test needs at least {MIN_COMMON_TOPICS} common topics, found {len(common)}"
        )
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

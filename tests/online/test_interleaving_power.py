"""The power planner answers the smallest number of decisive impressions whose exact sign test reaches the
power (the exact power saw-tooths in n, so the first n that reaches it is not found by stepping), checked
against a brute-force scan of every n. Pure: no database."""

from __future__ import annotations

import time

import numpy as np
import pytest
from scipy import stats

from online.preference import plan_power, sign_test_power


def brute_force_smallest(win_share: float, alpha: float, power: float, limit: int) -> int:
    """The first n in 1..limit whose exact two-sided sign test reaches `power`: the critical count c(n)
    (the largest c with 2·P(X ≤ c | 1/2) ≤ alpha, never smaller than c(n-1)) walked up one n at a time,
    then the power P(X ≤ c) + P(X ≥ n − c) under `win_share` of every n at once."""
    critical = np.empty(limit, dtype=np.int64)
    c = -1
    for n in range(1, limit + 1):
        while 2 * stats.binom.cdf(c + 1, n, 0.5) <= alpha:
            c += 1
        critical[n - 1] = c
    every = np.arange(1, limit + 1)
    powers = np.where(
        critical >= 0,
        stats.binom.cdf(critical, every, win_share) + stats.binom.sf(every - critical - 1, every, win_share),
        0.0,
    )
    reached = np.flatnonzero(powers >= power)
    assert len(reached), "raise the limit"
    return int(reached[0]) + 1


CASES = [
    # delta, tie_share, click_rate, alpha, power
    (0.01, 0.2, 0.5, 0.05, 0.8),  # the audit's: 12622 answered where 12575 reaches 0.80007
    (0.05, 0.2, 0.5, 0.05, 0.8),
    (0.1, 0.0, 1.0, 0.05, 0.8),
    (0.03, 0.5, 1.0, 0.01, 0.9),
    (0.2, 0.3, 0.4, 0.05, 0.95),
    (0.02, 0.0, 1.0, 0.05, 0.5),
    (0.4, 0.0, 1.0, 0.05, 0.8),
]


@pytest.mark.parametrize(("delta", "tie_share", "click_rate", "alpha", "power"), CASES)
def test_it_answers_the_smallest_n_that_reaches_the_power(delta, tie_share, click_rate, alpha, power) -> None:
    plan = plan_power(delta, tie_share=tie_share, click_rate=click_rate, alpha=alpha, power=power)
    win_share = 0.5 + delta / (1 - tie_share)
    assert plan.decisive == brute_force_smallest(win_share, alpha, power, plan.decisive + 10)
    assert plan.achieved_power == pytest.approx(sign_test_power(plan.decisive, win_share, alpha))
    assert plan.achieved_power >= power


def test_the_audits_case_needs_12575_decisive_impressions() -> None:
    plan = plan_power(0.01, tie_share=0.2, click_rate=0.5)
    assert plan.decisive == 12575
    assert sign_test_power(12575, 0.5125, 0.05) == pytest.approx(0.80007, abs=1e-5)


def test_it_plans_a_small_delta_quickly() -> None:
    started = time.perf_counter()
    plan = plan_power(0.002, tie_share=0.3, click_rate=0.2)
    assert time.perf_counter() - started < 2.0
    win_share = 0.5 + 0.002 / 0.7
    assert (
        sign_test_power(plan.decisive, win_share, 0.05)
        >= 0.8
        > sign_test_power(plan.decisive - 1, win_share, 0.05)
    )

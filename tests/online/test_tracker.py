"""The offline–online tracker's statistics (pure, no database): the issue's 12 experiments, and scipy and
statsmodels on random and tied data."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from online.tracker import (
    correlate,
    fisher_interval,
    kendall_tau_b,
    pearson,
    sign_agreement,
    spearman,
    wilson_interval,
)

OFFLINE = [0.012, -0.004, 0.020, 0.007, 0.001, -0.010, 0.015, 0.003, 0.009, -0.002, 0.025, 0.005]
ONLINE = [0.30, -0.05, 0.41, 0.02, 0.10, -0.22, 0.18, 0.08, 0.25, 0.04, 0.39, -0.03]


def test_it_gives_the_issues_figures_for_its_twelve_experiments() -> None:
    result = correlate(OFFLINE, ONLINE)
    assert result.n == 12
    assert result.pearson == pytest.approx(0.9089, abs=5e-5)
    assert result.pearson_interval == pytest.approx((0.7004, 0.9745), abs=5e-4)
    assert result.kendall_tau_b == pytest.approx(0.6970, abs=5e-5)
    assert result.spearman == pytest.approx(0.8601, abs=5e-5)
    assert (result.signs_agree, result.signs_compared) == (10, 12)
    assert result.gate is True and "predicted" in result.verdict


def test_it_agrees_with_scipy_and_statsmodels() -> None:
    rng = np.random.default_rng(11)
    for n in (4, 7, 30):
        x = rng.normal(size=n)
        y = 0.4 * x + rng.normal(size=n)
        y[: n // 3] = np.round(y[: n // 3], 0)  # some ties
        x[: n // 4] = 0.0
        reference = stats.pearsonr(x, y)
        assert pearson(x, y) == pytest.approx(reference.statistic, abs=1e-12)
        low, high = reference.confidence_interval(0.95)
        assert fisher_interval(pearson(x, y), n) == pytest.approx((low, high), abs=1e-9)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
        assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    for k, n in [(10, 12), (0, 5), (5, 5), (37, 80)]:
        assert wilson_interval(k, n) == pytest.approx(proportion_confint(k, n, method="wilson"), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=3, max_size=15))
def test_it_matches_scipys_kendall_tau_b_on_heavily_tied_data(pairs) -> None:
    x, y = [float(a) for a, _ in pairs], [float(b) for _, b in pairs]
    ours = kendall_tau_b(x, y)
    with np.errstate(all="ignore"):
        theirs = stats.kendalltau(x, y).statistic
    if np.isnan(theirs):
        assert ours is None
    else:
        assert ours == pytest.approx(theirs, abs=1e-12)


def test_it_says_so_when_the_offline_metric_is_not_a_decision_tool() -> None:
    rng = np.random.default_rng(5)
    offline = rng.normal(size=12)
    online = rng.normal(size=12)
    result = correlate(offline, online)
    assert result.gate is False
    assert "not a decision tool" in result.verdict


def test_it_will_not_judge_from_too_few_experiments() -> None:
    result = correlate([0.1, 0.2, 0.3], [0.2, 0.3, 0.5])
    assert result.pearson_interval is None and result.gate is False
    assert "Too few experiments" in result.verdict


def test_it_leaves_undefined_statistics_none_and_zeros_out_of_the_signs() -> None:
    assert pearson([1, 1, 1, 1], [1, 2, 3, 4]) is None
    assert kendall_tau_b([1, 1, 1], [1, 2, 3]) is None
    assert sign_agreement([0.1, 0.0, -0.1, 0.2], [0.3, 0.5, 0.1, 0.0]) == (1, 2)
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError, match="finite"):
        correlate([0.1, float("nan")], [0.1, 0.2])
    with pytest.raises(ValueError, match="same length"):
        correlate([0.1], [0.1, 0.2])

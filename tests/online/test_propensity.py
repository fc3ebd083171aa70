"""Known answers for PBM recovery (issue 14) and the refusals of the pure propensity code; no database."""

from __future__ import annotations

import numpy as np
import pytest

from online import propensity
from online.simulate import GAMMA_BY_GRADE, THETA, gamma_from_grades, simulate

EXPECTED = np.array([1, 0.897, 0.706, 0.500, 0.412, 0.294, 0.162, 0.147, 0.118, 0.088])


def make_world(*, queries: int = 50, docs: int = 10, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Grades 0-4 per (query, doc) and a production ranking by grade (best first)."""
    rng = np.random.default_rng(seed)
    grades = rng.integers(0, 5, (queries, docs))
    ranking = np.argsort(-grades + rng.random((queries, docs)) * 0.5, axis=1)
    return grades, ranking


def test_it_recovers_theta_from_randtop_10() -> None:
    grades, ranking = make_world()
    sim = simulate(
        np.random.default_rng(1),
        rankings=[ranking],
        gamma=gamma_from_grades(grades),
        sessions=100_000,
        intervention="randtop",
    )
    est = propensity.randtop(sim.counts(), 10)
    assert np.abs(np.array(est.theta) - EXPECTED).max() <= 0.03


def test_it_recovers_theta_from_swap_k() -> None:
    grades, ranking = make_world()
    sim = simulate(
        np.random.default_rng(2),
        rankings=[ranking],
        gamma=gamma_from_grades(grades),
        sessions=100_000,
        intervention="swap",
    )
    est = propensity.swap_k(sim.counts())
    assert not est.warnings
    assert np.abs(np.array(est.theta) - EXPECTED).max() <= 0.03


def three_loggers(seed: int = 3) -> propensity.Counts:
    grades, ranking = make_world()
    rng = np.random.default_rng(seed)
    # three production rankers that disagree: the best, a noisy one and a reversed-ish one
    noisy = np.argsort(-grades + rng.random(grades.shape) * 3, axis=1)
    shuffled = np.argsort(rng.random(grades.shape), axis=1)
    sim = simulate(
        rng, rankings=[ranking, noisy, shuffled], gamma=gamma_from_grades(grades), sessions=100_000
    )
    return sim.counts()


def test_it_recovers_theta_by_em_over_three_loggers() -> None:
    est = propensity.em(three_loggers())
    assert not est.warnings
    assert np.abs(np.array(est.theta) - EXPECTED).max() <= 0.03


def test_it_recovers_theta_by_harvesting_three_loggers_and_counts_pairs() -> None:
    est = propensity.harvest(three_loggers())
    assert np.abs(np.array(est.theta) - EXPECTED).max() <= 0.03
    pairs = {(row["a"], row["b"]): row for row in est.diagnostics["pairs"]}
    assert len(pairs) == 45
    assert all(row["interventions"] > 0 for row in pairs.values())


def test_it_warns_when_documents_never_change_rank() -> None:
    grades, ranking = make_world()
    sim = simulate(
        np.random.default_rng(4), rankings=[ranking], gamma=gamma_from_grades(grades), sessions=5000
    )
    counts = sim.counts()
    with pytest.raises(propensity.PropensityError, match="never change rank"):
        propensity.harvest(counts)
    assert any("never change rank" in w for w in propensity.em(counts).warnings)


def test_it_warns_for_a_position_never_swapped() -> None:
    counts = propensity.Counts.from_cells(
        [0, 0, 1, 1, 2], [1, 2, 1, 2, 3], [10, 10, 10, 10, 10], [5, 3, 4, 2, 1]
    )
    est = propensity.harvest(counts)
    assert any("position 3" in w for w in est.warnings)
    assert np.isnan(est.theta[2])


@pytest.mark.parametrize("bad", [[1.0, 0.0], [1.0, -0.2], [1.0, 1.5], [1.0, float("nan")], [1.0, "x"], []])
def test_it_refuses_a_propensity_outside_0_1(bad: list) -> None:
    with pytest.raises(propensity.PropensityError):
        propensity.given(bad)


def test_the_simulators_follow_their_models() -> None:
    rng = np.random.default_rng(0)
    gamma = np.full((200_000, 3), GAMMA_BY_GRADE[4])
    from online.simulate import cascade_clicks, pbm_clicks

    pbm = pbm_clicks(rng, THETA, gamma)
    assert np.allclose(pbm.mean(axis=0), THETA[:3], atol=0.01)
    cascade = cascade_clicks(rng, np.full((1000, 3), 1.0))
    assert cascade[:, 0].all() and not cascade[:, 1:].any()


def test_it_refuses_to_harvest_interventions_without_clicks_at_both_positions() -> None:
    counts = propensity.Counts.from_cells([0, 0], [1, 2], [10, 10], [5, 0])
    with pytest.raises(propensity.PropensityError, match="clicks at both"):
        propensity.harvest(counts)


def test_randtop_leaves_theta_undefined_where_nothing_was_shown_or_clicked() -> None:
    # Position 2 was shown and never clicked, position 3 never shown: θ 1e-6 was stored for both (a later
    # click there would have weighed a million), where swap-k stores undefined.
    counts = propensity.Counts.from_cells(
        np.array([0, 1, 2]), np.array([1, 2, 4]), np.array([100.0, 50.0, 40.0]), np.array([20.0, 0.0, 4.0])
    )
    est = propensity.randtop(counts, 4)
    assert est.theta[0] == 1.0 and est.theta[3] == pytest.approx(0.5)
    assert np.isnan(est.theta[1]) and np.isnan(est.theta[2])
    assert (
        "position 2: no clicks: θ undefined" in est.warnings and "position 3: no impressions" in est.warnings
    )

"""Interleaving (pure, no database): exact known answers by enumeration, credit rules, the sign test, the
user-clustered interval and the power planner, against scipy where scipy has the statistic."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from online.interleaving import (
    all_interleavings,
    credit_balanced,
    credit_team_draft,
    interleave,
    outcome_probabilities,
)
from online.preference import (
    Impression,
    Summary,
    clustered_interval,
    delta_ab,
    plan_power,
    sign_test,
    sign_test_power,
    summarise,
)


def clicks_relevant(relevant: set[str]):
    """A user who clicks exactly the relevant documents shown."""
    return lambda docids: [(Fraction(1), [i for i, d in enumerate(docids, 1) if d in relevant])]


def one_uniform_click(docids):
    return [(Fraction(1, len(docids)), [i]) for i in range(1, len(docids) + 1)]


def test_it_gives_a_every_win_when_only_a_ranks_the_relevant_document_first() -> None:
    p = outcome_probabilities(list("xyz"), list("yxz"), clicks_relevant({"x"}), length=3)
    assert p == {"A": 1, "B": 0, "tie": 0, "none": 0}


def test_it_splits_identical_rankers_evenly_under_plain_credit() -> None:
    p = outcome_probabilities(list("xyz"), list("xyz"), clicks_relevant({"x"}), identical_prefix=False)
    assert p == {"A": Fraction(1, 2), "B": Fraction(1, 2), "tie": 0, "none": 0}


def test_it_makes_identical_rankers_tie_under_the_identical_prefix_rule() -> None:
    # The whole list is the common prefix: nobody's team, every clicked impression a tie.
    p = outcome_probabilities(list("xyz"), list("xyz"), clicks_relevant({"x"}))
    assert p == {"A": 0, "B": 0, "tie": 1, "none": 0}
    (only,) = all_interleavings(list("xyz"), list("xyz"))
    assert only[1].teams == ("-", "-", "-") and only[1].prefix == 3


def test_it_credits_nobody_for_a_click_on_the_shared_prefix_and_drafts_after_it() -> None:
    a, b = ["p", "q", "x", "y"], ["p", "q", "y", "x"]
    for _, shown in all_interleavings(a, b):
        assert shown.docids[:2] == ("p", "q") and shown.teams[:2] == ("-", "-")
        assert sorted(shown.teams[2:]) == ["A", "B"]
        assert shown.credit([1, 2]) == "tie"
    p = outcome_probabilities(a, b, clicks_relevant({"x"}))
    assert p["A"] == 1  # x is A's pick whichever team picks first after the prefix


def test_it_shows_balanced_interleavings_known_bias() -> None:
    a, b = list("abcd"), list("bcda")
    balanced = outcome_probabilities(a, b, one_uniform_click, method="balanced")
    assert balanced["B"] == Fraction(3, 4) and balanced["A"] == Fraction(1, 4)
    team_draft = outcome_probabilities(a, b, one_uniform_click)
    assert team_draft["A"] == Fraction(1, 2) and team_draft["B"] == Fraction(1, 2)


def test_it_enumerates_interleavings_whose_probabilities_sum_to_one() -> None:
    outcomes = all_interleavings(list("abcdef"), list("fedcba"), length=6)
    assert sum(p for p, _ in outcomes) == 1
    assert len({o.docids + o.teams for _, o in outcomes}) == len(outcomes)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from("abcdefghij"), min_size=0, max_size=8),
    st.lists(st.sampled_from("abcdefghij"), min_size=0, max_size=8),
    st.integers(1, 10),
    st.integers(0, 2**32),
)
def test_it_keeps_the_team_draft_fair_and_each_team_in_its_own_order(a, b, length, seed) -> None:
    shown = interleave(a, b, length=length, rng=random.Random(seed), identical_prefix=False)
    assert len(set(shown.docids)) == len(shown.docids)
    union = set(a) | set(b)
    assert len(shown.docids) == min(length, len(union))
    for team, ranking in (("A", list(dict.fromkeys(a))), ("B", list(dict.fromkeys(b)))):
        picks = [d for d, t in zip(shown.docids, shown.teams, strict=True) if t == team]
        assert picks == sorted(picks, key=ranking.index)
    # While both still had something new, the teams never differ by more than one.
    sizes = {"A": 0, "B": 0}
    for d, t in zip(shown.docids, shown.teams, strict=True):
        sizes[t] += 1
        other = "B" if t == "A" else "A"
        if set(a if other == "A" else b) - set(shown.docids[: shown.docids.index(d) + 1]):
            assert abs(sizes["A"] - sizes["B"]) <= 1


def test_it_is_reproducible_with_a_seeded_coin() -> None:
    a, b = [f"d{i}" for i in range(20)], [f"d{i}" for i in range(19, -1, -1)]
    first = interleave(a, b, rng=random.Random(7))
    assert interleave(a, b, rng=random.Random(7)) == first
    assert len(first.docids) == 10


def test_it_applies_the_credit_rules() -> None:
    teams = ("-", "A", "B", "A")
    assert credit_team_draft(teams, []) == "none"
    assert credit_team_draft(teams, [1]) == "tie"
    assert credit_team_draft(teams, [2, 2, 2, 3]) == "tie"  # a position clicked three times counts once
    assert credit_team_draft(teams, [2, 4, 3]) == "A"
    assert credit_team_draft(teams, [3]) == "B"
    with pytest.raises(ValueError, match="position 5"):
        credit_team_draft(teams, [5])
    with pytest.raises(ValueError, match="position 0"):
        credit_team_draft(teams, [0])
    # balanced: lowest click c, k = min(3, 2) = 2; A's top 2 {a, b} holds no click, B's {b, c} one.
    assert credit_balanced(list("abcd"), list("abcd"), list("bcda"), [3]) == "B"
    assert credit_balanced(list("abcd"), list("abcd"), list("bcda"), [1]) == "A"


def test_it_matches_scipys_exact_sign_test() -> None:
    assert sign_test(115, 85) == pytest.approx(0.040, abs=0.0005)
    for wins, losses in [(115, 85), (10, 0), (3, 4), (0, 0), (500, 430)]:
        expected = stats.binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
        assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-9)


def test_it_defines_delta_ab_with_half_the_ties_to_each_side() -> None:
    assert delta_ab(3, 1, 0) == pytest.approx(0.25)
    assert delta_ab(2, 2, 4) == 0
    assert delta_ab(1, 0, 2) == pytest.approx(1 / 6)
    assert delta_ab(0, 0, 0) is None


def interval_of(summary: Summary) -> tuple[float, float]:
    """The summary's interval, which the caller expects it to have."""
    assert summary.interval is not None
    return summary.interval


def test_it_widens_the_interval_when_a_users_impressions_move_together() -> None:
    rng = np.random.default_rng(3)
    outcomes = rng.choice(["A", "B"], size=2000, p=[0.55, 0.45])
    independent = summarise(Impression(i, "q", o) for i, o in enumerate(outcomes))
    # The same outcomes from 40 users, each of whom always prefers the same side.
    users = np.sort(outcomes)
    clustered = summarise(Impression(i * 40 // len(users), "q", o) for i, o in enumerate(users))
    assert independent.delta_ab == clustered.delta_ab
    width = [interval_of(s)[1] - interval_of(s)[0] for s in (independent, clustered)]
    assert width[1] > 3 * width[0]
    assert independent.interval is not None and independent.delta_ab is not None
    assert independent.interval[0] < independent.delta_ab < independent.interval[1]


def test_it_leaves_impressions_without_clicks_out_of_every_statistic() -> None:
    impressions = [Impression("u1", "q1", "A"), Impression("u2", "q1", "none"), Impression("u2", "q2", "tie")]
    summary = summarise(impressions, resamples=200)
    assert summary.counts.impressions == 3 and summary.counts.clicked == 2
    assert summary.delta_ab == pytest.approx(0.25)
    assert summary.per_query["q1"].a == 1 and summary.per_query["q1"].none == 1
    assert summary.per_query["q2"].preferred == "neither"
    assert clustered_interval(np.zeros((4, 3))) is None


def test_it_plans_the_smallest_sample_the_exact_sign_test_needs() -> None:
    plan = plan_power(0.05, alpha=0.05, power=0.8)
    assert plan.win_share == pytest.approx(0.55)
    assert sign_test_power(plan.decisive, 0.55, 0.05) >= 0.8 > sign_test_power(plan.decisive - 1, 0.55, 0.05)
    # The normal approximation for a one-sample proportion lands within a few percent.
    z = stats.norm.ppf(0.975) * 0.5 + stats.norm.ppf(0.8) * np.sqrt(0.55 * 0.45)
    assert plan.decisive == pytest.approx((z / 0.05) ** 2, rel=0.05)
    with_ties = plan_power(0.05, tie_share=0.5, click_rate=0.25)
    assert with_ties.win_share == pytest.approx(0.6)
    assert with_ties.impressions == pytest.approx(with_ties.decisive / 0.5 / 0.25, abs=4)
    with pytest.raises(ValueError, match="more than"):
        plan_power(-7.7e-135)  # a delta no traffic can detect (found by the API fuzz test: was a 500)
    bads: tuple[dict[str, Any], ...] = (
        {"delta": 0.0}, {"delta": 0.6}, {"delta": 0.1, "tie_share": 1.0}, {"delta": 0.1, "power": 1},
    )  # fmt: skip
    for bad in bads:
        with pytest.raises(ValueError):
            plan_power(**bad)


def test_it_computes_the_sign_tests_power_as_brute_force_does() -> None:
    n, p, alpha = 60, 0.62, 0.05
    brute = sum(stats.binom.pmf(k, n, p) for k in range(n + 1) if stats.binomtest(k, n).pvalue <= alpha)
    assert sign_test_power(n, p, alpha) == pytest.approx(brute, rel=1e-9)

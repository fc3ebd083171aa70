"""Aggregation policies: majority, median, mean, rater:NAME, adjudication, unrateable, pending."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgements.aggregation import Aggregate, Policy, aggregate, parse_policy

U = None  # an unrateable vote


def make_votes(*grades: int | None) -> list[tuple[str, int | None]]:
    return [(f"rater{i}", g) for i, g in enumerate(grades)]


# ---------------------------------------------------------------------------------------------- parsing


def test_it_parses_every_policy():
    assert parse_policy("majority") == Policy("majority")
    assert parse_policy("median") == Policy("median")
    assert parse_policy("mean") == Policy("mean")
    assert parse_policy("rater:alice") == Policy("rater", "alice")
    assert parse_policy("rater:a:b") == Policy("rater", "a:b")
    assert str(parse_policy("rater:alice")) == "rater:alice"
    assert parse_policy(Policy("mean")) == Policy("mean")


@pytest.mark.parametrize("bad", ["", "Majority", "mode", "rater", "rater:", "rater:  ", "max", " mean"])
def test_it_rejects_unknown_policies_with_a_clear_message(bad):
    with pytest.raises(ValueError, match=r"policy"):
        parse_policy(bad)


def test_it_names_the_accepted_policies_in_the_error():
    with pytest.raises(ValueError, match=r"unknown aggregation policy 'mode'.*'majority'.*'rater:NAME'"):
        aggregate(make_votes(1), policy="mode")


# ---------------------------------------------------------------------------------------------- majority


def test_it_takes_the_most_frequent_grade():
    assert aggregate(make_votes(2, 2, 1), policy="majority") == Aggregate("judged", 2, False)


def test_it_breaks_majority_ties_towards_the_lower_grade_and_flags_them():
    assert aggregate(make_votes(3, 1), policy="majority") == Aggregate("judged", 1, True)
    assert aggregate(make_votes(3, 3, 0, 0, 2), policy="majority") == Aggregate("judged", 0, True)


def test_it_flags_a_plurality_tie_with_unrateable():
    # two say unrateable, two say 3, one says 1: no unrateable majority, 3 wins, but contested.
    assert aggregate(make_votes(U, U, 3, 3, 1), policy="majority") == Aggregate("judged", 3, True)
    assert aggregate(make_votes(U, 3, 3, 1), policy="majority") == Aggregate("judged", 3, False)


# ---------------------------------------------------------------------------------------------- median


def test_it_takes_the_lower_median():
    assert aggregate(make_votes(0, 3, 1), policy="median") == Aggregate("judged", 1, False)
    assert aggregate(make_votes(3, 0, 1, 2), policy="median") == Aggregate("judged", 1, True)
    assert aggregate(make_votes(2, 2, 0, 3), policy="median") == Aggregate("judged", 2, False)


# ---------------------------------------------------------------------------------------------- mean


def test_it_rounds_the_mean_half_up():
    assert aggregate(make_votes(1, 2), policy="mean") == Aggregate("judged", 2, True)  # 1.5 → 2
    assert aggregate(make_votes(2, 3), policy="mean") == Aggregate(
        "judged", 3, True
    )  # 2.5 → 3 (not banker's)
    assert aggregate(make_votes(0, 1), policy="mean") == Aggregate("judged", 1, True)  # 0.5 → 1
    assert aggregate(make_votes(0, 0, 2), policy="mean") == Aggregate("judged", 1, False)  # 0.67 → 1
    assert aggregate(make_votes(0, 1, 1), policy="mean") == Aggregate("judged", 1, False)  # 0.67
    assert aggregate(make_votes(0, 0, 1), policy="mean") == Aggregate("judged", 0, False)  # 0.33


# ---------------------------------------------------------------------------------------------- rater


def test_it_uses_one_raters_label():
    votes = [("alice", 3), ("bob", 0), ("carol", 0)]
    assert aggregate(votes, policy="rater:alice", required=3) == Aggregate("judged", 3, False)
    assert aggregate(votes, policy="rater:bob") == Aggregate("judged", 0, False)


def test_it_is_pending_when_the_named_rater_has_not_judged():
    votes = [("bob", 2), ("carol", 2)]
    assert aggregate(votes, policy="rater:alice") == Aggregate("pending", None, False)


def test_it_is_unrateable_when_the_named_rater_said_so():
    votes = [("alice", None), ("bob", 2), ("carol", 2)]
    assert aggregate(votes, policy="rater:alice") == Aggregate("unrateable", None, False)


def test_it_matches_the_named_rater_by_string():
    assert aggregate([(17, 2)], policy="rater:17") == Aggregate("judged", 2, False)


# ---------------------------------------------------------------------------------------------- states


@pytest.mark.parametrize("policy", ["majority", "median", "mean"])
def test_it_is_pending_with_fewer_judgements_than_required(policy):
    assert aggregate(make_votes(2), policy=policy, required=2) == Aggregate("pending", None, False)
    assert aggregate([], policy=policy) == Aggregate("pending", None, False)
    assert aggregate(make_votes(U, 2), policy=policy, required=3).state == "pending"
    assert aggregate(make_votes(2, 2), policy=policy, required=2) == Aggregate("judged", 2, False)


@pytest.mark.parametrize("policy", ["majority", "median", "mean"])
def test_it_is_unrateable_when_most_raters_say_so(policy):
    assert aggregate(make_votes(U, U, 3), policy=policy) == Aggregate("unrateable", None, False)
    assert aggregate(make_votes(U), policy=policy) == Aggregate("unrateable", None, False)


@pytest.mark.parametrize(("policy", "grade"), [("majority", 3), ("median", 3), ("mean", 2)])
def test_it_ignores_unrateable_votes_without_a_majority(policy, grade):
    # 2 of 5 unrateable: the policy runs on [1, 3, 3] only (counting them as 0 would give median 1, mean 1).
    result = aggregate(make_votes(U, U, 3, 3, 1), policy=policy)
    assert result.state == "judged" and result.grade == grade


@pytest.mark.parametrize("policy", ["majority", "median", "mean"])
def test_it_judges_and_flags_a_dead_heat_between_unrateable_and_graded(policy):
    assert aggregate(make_votes(U, 2), policy=policy) == Aggregate("judged", 2, True)
    assert aggregate(make_votes(U, U, 1, 1), policy=policy) == Aggregate("judged", 1, True)


@pytest.mark.parametrize("policy", ["majority", "median", "mean", "rater:nobody"])
def test_it_lets_an_adjudication_override_any_policy(policy):
    votes = make_votes(U, U, U, 3)
    assert aggregate(votes, policy=policy, adjudicated=1) == Aggregate("judged", 1, False)
    assert aggregate(make_votes(3, 3, 3), policy=policy, adjudicated="unrateable") == Aggregate(
        "unrateable", None, False
    )
    # even before enough judgements are in
    assert aggregate([], policy=policy, required=3, adjudicated=0) == Aggregate("judged", 0, False)


def test_it_rejects_bad_input():
    with pytest.raises(ValueError, match="twice"):
        aggregate([("a", 1), ("a", 2)], policy="majority")
    with pytest.raises(ValueError, match="int grade"):
        aggregate([("a", 1.5)], policy="majority")
    with pytest.raises(ValueError, match="int grade"):
        aggregate([("a", True)], policy="majority")
    with pytest.raises(ValueError, match="required"):
        aggregate([("a", 1)], policy="majority", required=0)
    with pytest.raises(ValueError, match="adjudicated"):
        aggregate([("a", 1)], policy="majority", adjudicated="perfect")


# ---------------------------------------------------------------------------------------------- properties

votes_strategy = st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=1, max_size=7)


@settings(max_examples=150, deadline=None)
@given(votes_strategy, st.sampled_from(["majority", "median", "mean"]))
def test_it_returns_a_grade_within_the_range_of_the_graded_votes(grades, policy):
    result = aggregate(make_votes(*grades), policy=policy)
    graded = [g for g in grades if g is not None]
    if 2 * (len(grades) - len(graded)) > len(grades):
        assert result == Aggregate("unrateable", None, False)
    else:
        assert result.state == "judged"
        assert min(graded) <= result.grade <= max(graded)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=7))
def test_it_agrees_with_a_brute_force_reference(grades):
    votes = make_votes(*grades)
    counts = {g: grades.count(g) for g in set(grades)}
    top = max(counts.values())
    modes = sorted(g for g, c in counts.items() if c == top)
    assert aggregate(votes, policy="majority") == Aggregate("judged", modes[0], len(modes) > 1)
    ordered = sorted(grades)
    n = len(ordered)
    assert aggregate(votes, policy="median").grade == ordered[(n - 1) // 2]
    # half up: 2 * sum / n rounded, exactly: floor((2*sum + n) / (2n))
    assert aggregate(votes, policy="mean").grade == (2 * sum(grades) + n) // (2 * n)


@settings(max_examples=100, deadline=None)
@given(votes_strategy, st.sampled_from(["majority", "median", "mean"]))
def test_it_does_not_depend_on_the_order_of_the_judgements(grades, policy):
    votes = make_votes(*grades)
    assert aggregate(votes, policy=policy) == aggregate(list(reversed(votes)), policy=policy)

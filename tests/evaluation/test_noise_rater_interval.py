"""The raters' interval of the noise-floor report is the policy's: a bootstrap of each item's votes,
aggregated by the report's policy, so each run's interval surrounds the score the policy gives and moves
with it (an audit saw a majority score of 0.6058 beside an interval of 0.621–0.766, the interval of a
single rater's score, the same under every policy)."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation import noise_floor
from evaluation.resample import Items, Votes
from judgements import aggregation

MEASURES = ("ndcg_cut_10", "P_10")


def disagreeing_campaign_data(n_topics: int = 4):
    """Per topic: two items voted (3, 0) — majority 0 (a tie goes low), mean 2 (1.5 rounds up) — one voted
    (2, 1, 1), and unanimous items; three runs ranking them in different orders."""
    votes: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
    for t in range(n_topics):
        q = f"q{t}"
        votes[(q, "split1")] = [("x", 3), ("y", 0)]
        votes[(q, "split2")] = [("y", 3), ("z", 0)]
        votes[(q, "lean")] = [("x", 2), ("y", 1), ("z", 1)]
        votes[(q, "high")] = [("x", 2), ("z", 2)]
        for d in range(4):
            votes[(q, f"low{d}")] = [("x", 0), ("y", 0)]
    docs = sorted({d for _, d in votes})
    orders = {
        "bm25": ["split1", "low0", "lean", "split2", "low1", "high", "low2", "low3"],
        "dense": ["high", "lean", "split1", "low0", "low1", "split2", "low2", "low3"],
        "lexical": ["low0", "low1", "split2", "split1", "lean", "low2", "high", "low3"],
    }
    runs = {
        name: {f"q{t}": {d: float(len(docs) - k) for k, d in enumerate(order)} for t in range(n_topics)}
        for name, order in orders.items()
    }
    return runs, votes


def policy_report(policy: str, *, seed: int = 0, votes=None) -> dict:
    runs, disagreeing = disagreeing_campaign_data()
    votes = votes or disagreeing
    consensus: dict[str, dict[str, int]] = {}
    for (q, d), ballot in votes.items():
        consensus.setdefault(q, {})[d] = aggregation.aggregate(ballot, policy=policy).qrels_grade
    campaign = noise_floor.Campaign.of(runs, consensus, votes, measures=MEASURES)
    return noise_floor.report(
        campaign, n_topic_samples=20, n_label_samples=200, n_splits=2, seed=seed, policy=policy
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("policy", ["majority", "mean"])
def test_each_runs_raters_interval_contains_its_score_under_the_policy(policy, seed):
    data = policy_report(policy, seed=seed)
    for row in data["runs"]:
        for measure in MEASURES:
            low, high = row["raters"][measure]
            assert low <= row["means"][measure] <= high, (policy, row["run"], measure, low, high)


def test_the_interval_moves_with_the_policy_as_the_score_does():
    majority, mean = policy_report("majority"), policy_report("mean")
    for by_majority, by_mean in zip(majority["runs"], mean["runs"], strict=True):
        for measure in MEASURES:
            if by_majority["means"][measure] != by_mean["means"][measure]:
                assert by_majority["raters"][measure] != by_mean["raters"][measure], (
                    by_majority["run"],
                    measure,
                )
    assert majority["runs"][0]["means"]["P_10"] != mean["runs"][0]["means"]["P_10"]  # the audit's case


@pytest.mark.parametrize("policy", ["majority", "mean"])
def test_without_disagreement_the_interval_is_the_score(policy):
    _, disagreeing = disagreeing_campaign_data()
    unanimous = {key: [(rater, ballot[0][1]) for rater, _ in ballot] for key, ballot in disagreeing.items()}
    data = policy_report(policy, votes=unanimous)
    assert data["settings"]["label_samples"] == 200
    for row in data["runs"]:
        for measure in MEASURES:
            assert row["raters"][measure] == [row["means"][measure]] * 2


@pytest.mark.parametrize("policy", ["majority", "median", "mean"])
def test_a_resample_is_the_policy_applied_to_votes_drawn_with_replacement(policy):
    """Each resampled label is what ``aggregate`` gives some multiset of the item's own votes of its size:
    (3, 0) gives the policy's labels of (3, 3), (3, 0) and (0, 0), each seen; pending and adjudicated
    items keep their consensus label."""
    consensus = {"q": {"split": 0, "lean": 1, "fixed": 2, "pending": -1}}
    items = Items.of(consensus)
    ballots = {("q", "split"): [("x", 3), ("y", 0)], ("q", "lean"): [("x", 2), ("y", 1), ("z", 1)]}
    votes = Votes.of(
        items,
        {**ballots, ("q", "fixed"): [("x", 0), ("y", 3)], ("q", "pending"): [("x", 3)]},
        {("q", "fixed"): 2},
    )
    base = items.labels(consensus)
    drawn = votes.sample(base, np.random.default_rng(0), 400, policy=policy)
    column = {key: k for k, key in enumerate(items.keys)}

    def labels_of(*ballot: int) -> int:
        return aggregation.aggregate(list(enumerate(ballot)), policy=policy).qrels_grade

    split = drawn[:, column[("q", "split")]]
    assert set(split.tolist()) == {labels_of(3, 3), labels_of(3, 0), labels_of(0, 0)}
    assert 0.15 < (split == labels_of(3, 3)).mean() < 0.35 or labels_of(3, 3) == labels_of(3, 0)
    lean = drawn[:, column[("q", "lean")]]
    assert set(lean.tolist()) == {
        labels_of(1, 1, 1),
        labels_of(2, 2, 2),
        labels_of(1, 1, 2),
        labels_of(1, 2, 2),
    }
    assert set(drawn[:, column[("q", "fixed")]].tolist()) == {2}
    assert set(drawn[:, column[("q", "pending")]].tolist()) == {-1}


def test_the_label_samples_are_the_policys_and_the_interval_is_their_spread_around_the_score() -> None:
    runs, votes = disagreeing_campaign_data()
    drawn = {}
    for policy in ("majority", "mean"):
        consensus: dict[str, dict[str, int]] = {}
        for (q, d), ballot in votes.items():
            consensus.setdefault(q, {})[d] = aggregation.aggregate(ballot, policy=policy).qrels_grade
        campaign = noise_floor.Campaign.of(runs, consensus, votes, measures=MEASURES)
        samples, _ = noise_floor.label_samples(campaign, n_samples=200, seed=0, policy=policy)
        data = noise_floor.report(
            campaign, n_topic_samples=20, n_label_samples=200, n_splits=2, policy=policy
        )
        low, high = np.percentile(samples, [2.5, 97.5], axis=0)
        for r, row in enumerate(data["runs"]):
            for m, measure in enumerate(MEASURES):
                got_low, got_high = row["raters"][measure]
                assert got_high - got_low == pytest.approx(high[m, r] - low[m, r], abs=1e-5)
        drawn[policy] = samples
    # Under majority a (3, 0) item is relevant only when both resampled votes are 3, under mean unless both
    # are 0: the policies' resamples differ (P@10 of bm25, which retrieves both (3, 0) items).
    assert drawn["majority"][:, 1, 0].mean() < drawn["mean"][:, 1, 0].mean()


@pytest.mark.parametrize("top", [3, 11, 40])  # tallies as small integers, as large ones, as count rows
def test_a_resample_is_the_policys_label_whatever_the_grades(top):
    consensus = {"q": {"split": 0, "many": 1}}
    items = Items.of(consensus)
    votes = Votes.of(
        items,
        {
            ("q", "split"): [("x", top), ("y", 0)],
            ("q", "many"): [(f"r{k}", 1 if k < 4 else top) for k in range(7)],
        },
    )
    drawn = votes.sample(items.labels(consensus), np.random.default_rng(0), 800, policy="majority")
    assert set(drawn[:, 1].tolist()) == {0, top}  # (top, top) → top; (top, 0) and (0, 0) → 0
    assert 0.2 < (drawn[:, 1] == top).mean() < 0.3
    assert set(drawn[:, 0].tolist()) == {1, top}  # 7 votes drawn from four 1s and three tops

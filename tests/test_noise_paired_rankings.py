"""The noise floor's ranking stability ranks every run on the same topics (SPEC §8, Averaging): Kendall's τ
and τ_AP between two rankings of the runs (a rater against the consensus, half against half) compare the
runs' means over the judged topics every compared run has (`metrics.compared_topics`, the pool-bias
figure's rule), or with -c (average "all") over every judged topic, a missing one 0 — never each run's
mean over its own topics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from evaluation import metrics, noise_floor

TOPICS = ("t1", "t2", "t3", "t4")
#: P_1 of each run on each topic: the grade of its one retrieved document (a, b or c), under bob's labels
#: (the consensus) and alice's. C has no results for t4. A and B agree everywhere; alice finds none of C's
#: documents relevant where bob finds all of them.
BOB = {"A": (0, 1, 0, 1), "B": (1, 0, 1, 0), "C": (1, 1, 1, None)}
ALICE = {"A": (0, 1, 0, 1), "B": (1, 0, 1, 0), "C": (0, 0, 0, None)}


def make_campaign(*, average: metrics.Average = "common", extra_run: bool = False) -> noise_floor.Campaign:
    """Every run retrieves one document per topic, its own (`a`, `b`, `c`), so its P_1 there is that
    document's grade. With `extra_run`, a run D retrieves only for t5, a topic nobody judged."""
    runs: dict[str, dict[str, dict[str, float]]] = {
        name: {q: {name.lower(): 1.0} for q, grade in zip(TOPICS, grades, strict=True) if grade is not None}
        for name, grades in BOB.items()
    }
    consensus: dict[str, dict[str, int]] = {}
    votes: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
    for name in BOB:
        for q, mine, theirs in zip(TOPICS, ALICE[name], BOB[name], strict=True):
            if theirs is None:
                continue
            consensus.setdefault(q, {})[name.lower()] = theirs
            votes[(q, name.lower())] = [("alice", mine), ("bob", theirs)]
    if extra_run:
        runs["D"] = {"t5": {"d": 1.0}}
        consensus["t5"] = {"d": -1}  # pending: nobody judged t5
    return noise_floor.Campaign.of(runs, consensus, votes, measures=["P_1"], average=average)


def means_over(table: dict[str, tuple[int | None, ...]], topics: range) -> list[float]:
    """Each run's hand-made mean over `topics` (indexes of TOPICS), a missing topic 0."""
    return [sum(grades[t] or 0 for t in topics) / len(topics) for grades in table.values()]


def test_it_ranks_the_runs_on_the_topics_every_run_has():
    # over t1..t3 (C has no t4): bob A 1/3, B 2/3, C 1; alice A 1/3, B 2/3, C 0
    expected = kendalltau(means_over(BOB, range(3)), means_over(ALICE, range(3))).statistic
    assert expected == pytest.approx(-1 / 3)
    # each run over its own topics instead (A, B over four, C over three) ties A and B: τ would be -1
    unpaired = kendalltau([0.5, 0.5, 1.0], [0.5, 0.5, 0.0]).statistic
    assert unpaired == pytest.approx(-1.0)
    data = noise_floor.stability(make_campaign(), n_splits=4, max_raters=5, seed=0)
    rows = {row["rater"]: row for row in data["raters"]}
    assert rows["alice"]["P_1"]["tau"] == pytest.approx(expected, abs=1e-6)
    assert (rows["alice"]["topics"], rows["alice"]["compared_topics"]) == (4, 3)
    assert rows["bob"]["P_1"]["tau"] == pytest.approx(1.0)
    # each split is {alice} against {bob}: the same two rankings
    assert data["splits"] == 4
    assert data["split_tau"]["P_1"]["tau_mean"] == pytest.approx(expected, abs=1e-6)
    assert data["split_tau"]["P_1"]["tau_min"] == pytest.approx(expected, abs=1e-6)
    assert data["runs_left_out"] == []


def test_with_average_all_it_ranks_the_runs_on_every_judged_topic_a_missing_one_zero():
    expected = kendalltau(means_over(BOB, range(4)), means_over(ALICE, range(4))).statistic
    assert expected == pytest.approx(-1.0)
    data = noise_floor.stability(make_campaign(average="all"), n_splits=2, max_raters=5, seed=0)
    rows = {row["rater"]: row for row in data["raters"]}
    assert rows["alice"]["P_1"]["tau"] == pytest.approx(expected, abs=1e-6)
    assert rows["alice"]["compared_topics"] == 4
    assert data["split_tau"]["P_1"]["tau_mean"] == pytest.approx(expected, abs=1e-6)


def test_a_run_with_no_judged_topic_is_left_out_of_the_rankings_and_named():
    data = noise_floor.stability(make_campaign(extra_run=True), n_splits=2, max_raters=5, seed=0)
    rows = {row["rater"]: row for row in data["raters"]}
    # D has nothing on t1..t4: left out, rather than leaving A, B and C no topic in common
    assert rows["alice"]["P_1"]["tau"] == pytest.approx(-1 / 3, abs=1e-6)
    assert rows["alice"]["compared_topics"] == 3
    assert data["runs_left_out"] == ["D"]


def test_the_report_carries_the_paired_taus():
    data = noise_floor.report(make_campaign(), n_topic_samples=20, n_label_samples=10, n_splits=2)
    rows = {row["rater"]: row for row in data["stability"]["raters"]}
    assert rows["alice"]["P_1"]["tau"] == pytest.approx(-1 / 3, abs=1e-6)


def test_compared_topics_is_the_judged_topics_every_run_has():
    has = np.array([[True, True, False], [True, False, True], [True, True, True]])
    assert metrics.compared_topics(has).tolist() == [True, False, False]
    assert metrics.compared_topics(np.zeros((0, 3), dtype=bool)).tolist() == [False, False, False]

"""The noise floor (pure: no database): scores equal evaluate's, rank correlations, the paired bootstrap's
known answers, power, the verdict, and the report's reproducibility."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from evaluation import metrics, noise, noise_floor
from evaluation.resample import ABSENT, Items, Scorer, Votes

MEASURES = ["ndcg_cut_10", "P_10", "map", "bpref", "recip_rank", "recall_100", "num_ret", "infAP"]


def make_campaign_data(*, seed: int = 1, n_topics: int = 12, n_runs: int = 4, noisy: bool = True):
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    votes: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
    for t in range(n_topics):
        q = f"q{t:02d}"
        qrels[q] = {}
        for d in range(15):
            truth = int(rng.integers(0, 4))
            ballot = []
            for k in rng.permutation(6)[:3].tolist():
                grade: int | None = int(rng.integers(0, 4)) if noisy and rng.random() < 0.4 else truth
                if noisy and rng.random() < 0.05:
                    grade = None
                ballot.append((f"u{k}", grade))
            votes[(q, f"d{d}")] = ballot
            qrels[q][f"d{d}"] = truth
    qrels["qz"] = {"d1": -1, "d2": -1}  # nobody judged it
    runs = {}
    for r in range(n_runs):
        run: dict[str, dict[str, float]] = {}
        for q in qrels:
            if r == 2 and q == "q03":
                continue  # a run without one topic
            docs = rng.permutation(30)[:20]
            run[q] = {f"d{d}": float(rng.integers(0, 6)) for d in docs.tolist()}  # ties broken by docid
        runs[f"r{r}"] = run
    return runs, qrels, votes


def evaluate_quietly(qrels, run, measures, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return metrics.evaluate(qrels, run, measures, skip_unjudged_topics=True, **kwargs)


@pytest.mark.parametrize("unjudged", ["nonrelevant", "condensed"])
def test_it_scores_every_variant_exactly_as_evaluate(unjudged):
    runs, qrels, votes = make_campaign_data()
    items = Items.of(qrels)
    scorer = Scorer(runs, items, MEASURES, unjudged=unjudged)
    sampled = Votes.of(items, votes).sample(
        items.labels(qrels), np.random.default_rng(3), 2, policy="majority"
    )
    one_rater = np.where(np.arange(len(items)) % 3 == 0, items.labels(qrels), ABSENT)
    for labels in [items.labels(qrels), *sampled, one_rater]:
        variant: dict[str, dict[str, int]] = {}
        for (q, d), grade in zip(items.keys, labels.tolist(), strict=True):
            if grade != ABSENT:
                variant.setdefault(q, {})[d] = grade
        scores = scorer.score(labels)
        for r, (name, run) in enumerate(runs.items()):
            expected = evaluate_quietly(variant, run, MEASURES, unjudged=unjudged)
            for m, measure in enumerate(scorer.measures):
                got = {
                    items.topics[t]: scores[m, r, t]
                    for t in range(scorer.n_topics)
                    if not np.isnan(scores[m, r, t])
                }
                assert got.keys() == set(expected.topics), (name, measure)
                assert got == pytest.approx(expected.topic_values(measure), abs=1e-12), (name, measure)


def test_it_keeps_the_measures_in_the_order_asked():
    runs, qrels, _ = make_campaign_data(n_topics=2)
    assert Scorer(runs, Items.of(qrels), ["ndcg_cut_10", "map"]).measures == ("ndcg_cut_10", "map")


def test_it_never_scores_a_topic_nobody_judged():
    runs, qrels, votes = make_campaign_data()
    data = noise_floor.report(
        noise_floor.Campaign.of(runs, qrels, votes), n_topic_samples=50, n_label_samples=5, n_splits=2
    )
    assert data["not_judged_topics"] == ["qz"]
    assert data["judged_topics"] == 12
    assert [row["topics"] for row in data["runs"]] == [12, 12, 11, 12]


def test_it_gives_tau_one_for_identical_rankings_and_minus_one_for_reversed():
    x = [0.3, 0.1, 0.5, 0.2]
    assert noise.kendall_tau(x, x) == 1.0
    assert noise.tau_ap(x, x) == 1.0
    assert noise.kendall_tau(x, [-v for v in x]) == -1.0
    assert noise.tau_ap(x, [-v for v in x]) == pytest.approx(-1.0)


def test_it_computes_tau_b_as_scipy_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.integers(0, 4, 9), rng.integers(0, 4, 9)
        assert noise.kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)


def test_it_weighs_a_swap_at_the_top_more_in_tau_ap():
    reference = [5, 4, 3, 2, 1]
    top_swapped = [4, 5, 3, 2, 1]
    bottom_swapped = [5, 4, 3, 1, 2]
    assert noise.kendall_tau(reference, top_swapped) == noise.kendall_tau(reference, bottom_swapped)
    assert noise.tau_ap(reference, top_swapped) < noise.tau_ap(reference, bottom_swapped) < 1.0
    # Yilmaz et al.'s formula by hand: the top swap leaves C(2) = 0, every later C(i) = i - 1.
    assert noise.tau_ap(reference, top_swapped) == pytest.approx(2 / 4 * (0 + 1 + 1 + 1) - 1)


def test_it_finds_identical_rankings_stable_with_no_swaps_when_raters_agree():
    runs, qrels, _ = make_campaign_data(noisy=False)
    unanimous = {
        (q, d): [(f"u{k}", g) for k in range(4)]
        for q, docs in qrels.items()
        for d, g in docs.items()
        if g >= 0
    }
    campaign = noise_floor.Campaign.of(runs, qrels, unanimous)
    data = noise_floor.report(campaign, n_topic_samples=50, n_label_samples=10, n_splits=5)
    steady = data["stability"]
    assert steady["splits"] == 5
    assert all(rate == 0 for rate in steady["swap_rate"]["ndcg_cut_10"].values())
    assert steady["split_tau"]["ndcg_cut_10"]["tau_min"] == 1.0
    assert all(row["ndcg_cut_10"]["tau"] == 1.0 for row in steady["raters"])
    assert all(row["raters_half_width"] == 0 for row in data["pairs"]["ndcg_cut_10"])


def test_it_sees_rater_noise_when_raters_disagree():
    runs, qrels, votes = make_campaign_data()
    data = noise_floor.report(
        noise_floor.Campaign.of(runs, qrels, votes), n_topic_samples=50, n_label_samples=30
    )
    widths = [row["raters_half_width"] for row in data["pairs"]["ndcg_cut_10"]]
    assert min(widths) > 0
    low, high = data["runs"][0]["raters"]["ndcg_cut_10"]
    assert low < high


@pytest.mark.parametrize("n_topics", [2, 3, 5, 10, 100])
def test_it_detects_a_run_better_on_every_topic_from_two_topics_on(n_topics):
    rng = np.random.default_rng(n_topics)
    worse = rng.random(n_topics) * 0.5
    better = worse + 0.001 + rng.random(n_topics) * 0.2
    weights = noise.bootstrap_weights(n_topics, 1000, np.random.default_rng(0))
    boot = noise.topic_bootstrap(np.array([better, worse]), weights)
    assert boot.p_value[0] < noise.ALPHA
    assert boot.low[0] > 0


def test_one_topic_is_no_test():
    # Its resamples are all that one topic: a p of 0 and an interval of width 0 were reported, and every
    # difference of a pool with one judged topic was "a decision".
    boot = noise.topic_bootstrap(
        np.array([[0.9], [0.1]]), noise.bootstrap_weights(1, 100, np.random.default_rng(0))
    )
    assert np.isnan(boot.p_value[0]) and np.isnan(boot.half_width[0])


def test_it_finds_no_difference_significant_in_about_five_percent_of_seeded_repetitions():
    rng = np.random.default_rng(2026)
    repetitions, hits = 400, 0
    for _ in range(repetitions):
        scores = rng.normal(0.5, 0.1, size=(2, 50))  # two runs with the same distribution on 50 topics
        weights = noise.bootstrap_weights(50, 1000, rng)
        hits += int(noise.topic_bootstrap(scores, weights).p_value[0] < noise.ALPHA)
    assert 0.02 <= hits / repetitions <= 0.09


def test_it_gives_identical_runs_p_one_and_an_interval_of_zero():
    scores = np.array([[0.1, 0.4, 0.3], [0.1, 0.4, 0.3]])
    boot = noise.topic_bootstrap(scores, noise.bootstrap_weights(3, 100, np.random.default_rng(0)))
    assert boot.p_value[0] == 1.0
    assert boot.half_width[0] == 0.0


def test_it_plans_topics_as_the_inverse_of_the_minimum_detectable_difference():
    assert noise.topics_needed(0.02, 0.1) == 197  # ((1.959964 + 0.841621) · 0.1 / 0.02)² = 196.2
    mdd = noise.minimum_detectable_difference(0.1, 197)
    assert mdd == pytest.approx(0.02, rel=0.01)
    assert noise.topics_needed(mdd, 0.1) == 197
    with pytest.raises(ValueError):
        noise.topics_needed(0, 0.1)


def test_it_writes_the_verdict_in_plain_words():
    expected = (
        "Δ nDCG@10 = 0.012, within the noise floor (±0.018 from raters, ±0.025 from topics): not a decision."
    )
    assert noise.verdict("ndcg_cut_10", 0.012, raters=0.018, topics=0.025) == expected
    assert noise.verdict("P_10", -0.05, raters=0.018, topics=0.025).endswith("a decision.")
    assert "beyond" in noise.verdict("P_10", -0.05, raters=0.018, topics=0.025)
    assert "raters not measured" in noise.verdict("map", 0.2, raters=None, topics=0.1)
    # One judged topic: its bootstrap has no spread, which is no floor (an audit saw every difference of
    # a pool with one judged item called "a decision").
    assert noise.verdict("map", 1.0, raters=None, topics=math.nan) == (
        "Δ MAP = 1.000 (raters not measured, topics not measured: fewer than 2 judged topics both runs "
        "have): not a decision."
    )


def test_a_pair_with_one_topic_in_common_has_no_topic_floor():
    scores = np.array([[1.0, np.nan], [0.0, np.nan], [0.5, 0.2]])  # runs 0 and 1 share one topic
    boot = noise.topic_bootstrap(scores, noise.bootstrap_weights(2, 200, np.random.default_rng(0)))
    assert boot.pairs == ((0, 1), (0, 2), (1, 2))
    assert boot.n.tolist() == [1, 1, 1]
    assert np.isnan(boot.half_width).all() and np.isnan(boot.p_value).all()
    both = noise.topic_bootstrap(np.array([[1.0, 0.4], [0.0, 0.1]]), np.ones((5, 2)))
    assert both.n.tolist() == [2] and np.isfinite(both.half_width).all()


def test_it_aggregates_a_group_of_raters_with_the_platforms_policy():
    items = Items.of({"q": {"a": 0, "b": 0, "c": 0}})
    votes = Votes.of(
        items,
        {("q", "a"): [("x", 1), ("y", 2)], ("q", "b"): [("x", None), ("y", None), ("z", 3)], ("q", "c"): []},
    )
    everyone = np.ones(3, dtype=bool)
    assert noise.rater_labels(votes, 3, everyone).tolist() == [1, -1, -1]  # tie low; unrateable majority
    only_z = np.array([False, False, True])
    assert noise.rater_labels(votes, 3, only_z).tolist() == [-1, 3, -1]


def test_it_is_reproducible_for_a_seed():
    runs, qrels, votes = make_campaign_data()
    campaign = noise_floor.Campaign.of(runs, qrels, votes)
    first = noise_floor.report(campaign, n_topic_samples=100, n_label_samples=10, n_splits=3, seed=5)
    again = noise_floor.report(campaign, n_topic_samples=100, n_label_samples=10, n_splits=3, seed=5)
    other = noise_floor.report(campaign, n_topic_samples=100, n_label_samples=10, n_splits=3, seed=6)
    assert first == again
    assert first["pairs"] != other["pairs"]


def test_it_keeps_adjudicated_labels_fixed_in_every_sample():
    items = Items.of({"q": {"a": 2, "b": 0}})
    votes = Votes.of(
        items, {("q", "a"): [("x", 0), ("y", 3)], ("q", "b"): [("x", 0), ("y", 1)]}, {("q", "a"): 2}
    )
    drawn = votes.sample(
        items.labels({"q": {"a": 2, "b": 0}}), np.random.default_rng(0), 50, policy="majority"
    )
    assert set(drawn[:, 0].tolist()) == {2}
    assert set(drawn[:, 1].tolist()) == {0, 1}


def test_a_sample_keeps_the_items_the_consensus_leaves_unjudged():
    # 'p' is pending (one vote of the two it needs) and 'u' unrateable by its votes: the consensus scores
    # both as unjudged, so no resample may judge them (an audit saw rater intervals that left the score).
    consensus = {"q": {"a": 2, "p": -1, "u": -1}}
    items = Items.of(consensus)
    votes = Votes.of(
        items,
        {
            ("q", "a"): [("x", 1), ("y", 3)],
            ("q", "p"): [("x", 3)],
            ("q", "u"): [("x", None), ("y", None), ("z", 2)],
        },
    )
    drawn = votes.sample(items.labels(consensus), np.random.default_rng(0), 200, policy="majority")
    assert set(drawn[:, 0].tolist()) == {1, 3}
    assert set(drawn[:, 1].tolist()) == {-1}
    assert set(drawn[:, 2].tolist()) == {-1}


def test_it_draws_labels_from_a_posterior_and_keeps_undecided_items():
    items = Items.of({"q": {"a": 1, "b": -1, "c": 0}})
    votes = Votes.of(items, {("q", "a"): [("x", 1)], ("q", "c"): [("x", 0), ("y", 3)]})
    posterior = np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.5]])
    drawn = votes.sample_posterior(
        items.labels({"q": {"a": 1, "b": -1, "c": 0}}), posterior, np.random.default_rng(0), 400
    )
    assert set(drawn[:, 0].tolist()) == {1}
    assert set(drawn[:, 1].tolist()) == {-1}  # pending: no model decision
    assert set(drawn[:, 2].tolist()) == {0, 3} and 0.4 < (drawn[:, 2] == 3).mean() < 0.6


def test_it_leaves_a_slice_with_nothing_to_compare_undefined_without_a_warning() -> None:
    """Bootstrap means of a pair with no topic to compare are all NaN: their interval is undefined (NaN),
    the other pairs' are numpy's, and no "All-NaN slice" warning reaches the log (or fails a request run
    with warnings as errors)."""
    means = np.array([[1.0, 2.0, np.nan, 4.0], [np.nan] * 4, [3.0, 4.0, 5.0, 6.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = noise.percentiles(means, [2.5, 97.5], axis=1)
    assert np.isnan(got[:, 1]).all()
    np.testing.assert_allclose(got[:, [0, 2]], np.nanpercentile(means[[0, 2]], [2.5, 97.5], axis=1))


def test_a_split_tau_with_no_defined_split_is_undefined_without_a_numpy_warning():
    """One run: no ranking of runs to compare between two halves of the raters, so every split's τ is
    undefined; the mean and lowest τ are then undefined (None), not numpy's warning of an all-NaN slice
    (an error where warnings are errors)."""
    import warnings

    runs, qrels, votes = make_campaign_data(n_runs=1)
    campaign = noise_floor.Campaign.of(runs, qrels, votes)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        data = noise_floor.stability(campaign, n_splits=3, max_raters=5, seed=1)
    assert data["splits"] == 3
    assert all(value is None for taus in data["split_tau"].values() for value in taus.values())


def test_a_difference_over_no_judged_topic_is_named_so():
    """No judged topic both runs have (a pool nobody judged yet, or runs over different judged topics):
    the verdict says the topics are not judged ones they share, not that the runs share no topic."""
    text = noise.verdict("ndcg_cut_10", math.nan, raters=None, topics=None)
    assert text.endswith("not comparable (no judged topic both runs have: nothing to compare them on).")

"""The intervals of each rater pair and topic are those of the weighting asked for, and say which."""

from __future__ import annotations

import numpy as np

from judgements import agreement


def records(seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for item in range(120):
        truth = int(rng.integers(0, 4))
        for rater in ("a", "b", "c"):
            grade = truth if rng.random() < 0.6 else int(np.clip(truth + rng.choice([-1, 1]), 0, 3))
            out.append((item, f"t{item % 4}", rater, grade))
    return out


def test_each_pair_and_topic_interval_is_the_asked_weightings_and_labelled():
    plain = agreement.agreement_summary(records(), labels=[0, 1, 2, 3], relevance_level=1, n_bootstrap=300)
    linear = agreement.agreement_summary(
        records(), labels=[0, 1, 2, 3], relevance_level=1, n_bootstrap=300, weights="linear"
    )
    for before, after in zip(plain["pairs"], linear["pairs"], strict=True):
        assert before["ci_weights"] == "unweighted" and after["ci_weights"] == "linear"
        assert after["ci_low"] < after["linear"] < after["ci_high"]
        assert (after["ci_low"], after["ci_high"]) != (before["ci_low"], before["ci_high"])
    assert all(t["ci_weights"] == "linear" for t in linear["topics"])
    # near misses only: the linear kappa (and its interval) sits above the unweighted one
    assert linear["pairs"][0]["ci_low"] > plain["pairs"][0]["ci_low"]
    assert linear["cohen"] == plain["cohen"]  # the overall figures do not depend on it

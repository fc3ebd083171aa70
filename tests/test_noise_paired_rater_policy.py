"""The noise floor under `rater:NAME` (one rater's labels as the qrels) follows that policy: its label
resamples give each judged item one of its votes (the noise of a one-rater qrels; a bootstrap of NAME's
single vote would give it back every time), not the majority of a bootstrap of every vote; the halves of
the raters, which `rater:NAME` cannot aggregate, take the default rule, and the answer and the page say
so."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from evaluation import noise_floor, noise_pool
from evaluation.resample import UNJUDGED, Items, Votes
from evaluation.services import _runs, run_as_dict
from judgements.releases import current_qrels
from pooling.models import Pool
from tests.conftest import client_for
from tests.evaluation.test_report_numbers import page
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge
from tests.test_openapi_truth import check

VOTES: dict[tuple[str, str], list[tuple[str, int | None]]] = {
    ("q", "lone"): [("alice", 2), ("bob", 0), ("carol", 0), ("dave", 0), ("erin", 0)],
    ("q", "split"): [("alice", 3), ("bob", None)],
    ("q", "pending"): [("bob", 1)],  # alice never judged it: unjudged under rater:alice
    ("q", "decided"): [("alice", 0), ("bob", 3)],
}


def test_under_a_rater_policy_each_resample_takes_one_of_the_items_votes():
    consensus = {"q": {"lone": 2, "split": 3, "pending": -1, "decided": 1}}
    items = Items.of(consensus)
    votes = Votes.of(items, VOTES, fixed={("q", "decided"): 1})
    base = items.labels(consensus)
    drawn = votes.sample(base, np.random.default_rng(0), 4000, policy="rater:alice")
    column = {docid: items.keys.index(("q", docid)) for _, docid in VOTES}
    lone = drawn[:, column["lone"]]
    assert set(lone.tolist()) == {0, 2}
    # one vote of five: alice's 2 a fifth of the time (a majority of five bootstrapped votes: about 6%)
    assert np.mean(lone == 2) == pytest.approx(0.2, abs=0.03)
    assert set(drawn[:, column["split"]].tolist()) == {3, UNJUDGED}  # bob's vote is unrateable
    assert (drawn[:, column["pending"]] == UNJUDGED).all()  # unjudged stays unjudged
    assert (drawn[:, column["decided"]] == 1).all()  # an adjudication stays
    assert noise_floor.label_source("rater:alice") == "one_vote"
    assert noise_floor.label_source("majority") == "votes"


@pytest.fixture
def three_raters(db: None, manager: Any) -> Pool:
    """alice finds relevant what bob and carol find not, on half of the items."""
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    pool = make_pool(raters=[alice, bob, carol], judgements_per_item=3, name="trio")
    keys = [("q1", f"d00{i}") for i in range(1, 7)] + [("q2", f"d01{i}") for i in range(4)]
    judge(pool, alice, {key: 2 if k % 2 else 0 for k, key in enumerate(keys)})
    judge(pool, bob, {key: 0 if k % 3 else 1 for k, key in enumerate(keys)})
    judge(pool, carol, {key: 1 if k % 4 else 0 for k, key in enumerate(keys)})
    return pool


SAMPLES = {"topic_samples": 20, "label_samples": 40, "splits": 3}


def test_the_pools_noise_floor_resamples_by_the_rater_policy(three_raters):
    pool = three_raters
    data = noise_pool.pool_noise_floor(pool=pool, policy="rater:alice", **SAMPLES)
    assert data["settings"]["label_source"] == "one_vote"
    assert data["stability"]["split_policy"] == "majority"
    # the same figures as the pure report under rater:alice, on the same labels, votes and runs
    topics = [topic.qid for topic in pool.topics()]
    votes, fixed = noise_pool.pool_votes(pool=pool)
    runs = {run.name: run_as_dict(run=run, qids=topics) for run in _runs(pool, None)}
    campaign = noise_floor.Campaign.of(
        runs, current_qrels(pool=pool, policy="rater:alice"), votes, fixed=fixed, topics=topics
    )
    expected = noise_floor.report(
        campaign,
        n_topic_samples=SAMPLES["topic_samples"],
        n_label_samples=SAMPLES["label_samples"],
        n_splits=SAMPLES["splits"],
        policy="rater:alice",
    )
    assert data["runs"] == expected["runs"] and data["pairs"] == expected["pairs"]
    assert any(row["raters"]["P_10"][0] != row["raters"]["P_10"][1] for row in data["runs"])
    # under a rule policy, the halves are aggregated by it
    assert noise_pool.pool_noise_floor(pool=pool, policy="mean", **SAMPLES)["stability"]["split_policy"] == (
        "mean"
    )


def test_the_api_and_the_page_say_what_the_figures_are_under_a_rater_policy(three_raters, manager):
    pool = three_raters
    query = "policy=rater:alice&topic_samples=20&label_samples=5&splits=2"
    url = f"/api/evaluation/{pool.name}/noise-floor/?{query}"
    api = client_for(manager)
    assert check(api, "get", url, "/api/evaluation/{name}/noise-floor/") == []
    body = api.get(url).json()
    assert body["settings"]["label_source"] == "one_vote" and body["stability"]["split_policy"] == "majority"
    shown = page(manager, f"/evaluation/{pool.name}/noise-floor/?policy=rater:alice")
    assert "each judged item's label one of its votes, drawn at random" in shown
    assert "aggregated by <strong>majority</strong> (the rater:alice policy aggregates no half" in shown
    plain = page(manager, f"/evaluation/{pool.name}/noise-floor/")
    assert "aggregated by the policy" in plain and "one of its votes" not in plain

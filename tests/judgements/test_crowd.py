"""Model policies (crowd-kit): Dawid–Skene and gold-weighted voting recover a simulated crowd's true
labels better than majority; every policy is selectable for a release and recorded in its manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings

from judgements import aggregation, crowd, releases
from judgements.models import GoldLabel, PoolItem
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

GRADES = [0, 1, 2, 3]


def simulate_crowd(*, seed: int, n_items: int = 300, n_raters: int = 12, per_item: int = 3):
    """True grades and 3 votes per item from raters with known confusion matrices: half of them accurate
    (0.9 on the diagonal) two in three, the others lenient (one grade up with probability 0.8)."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, n_items, p=[0.4, 0.3, 0.2, 0.1])
    matrices = []
    for r in range(n_raters):
        m = np.full((4, 4), 0.1 / 3)
        np.fill_diagonal(m, 0.9)
        if r % 3 == 0:
            m = np.zeros((4, 4))
            for g in range(4):
                m[g, min(g + 1, 3)] += 0.8
                m[g, g] += 0.2
        matrices.append(m / m.sum(axis=1, keepdims=True))
    items = []
    for i in range(n_items):
        raters = rng.choice(n_raters, per_item, replace=False)
        items.append([(f"w{r}", int(rng.choice(4, p=matrices[r][truth[i]]))) for r in raters.tolist()])
    return truth, items


def accuracy(decide, items, truth) -> float:
    return float(np.mean([decide(votes) == t for votes, t in zip(items, truth.tolist(), strict=True)]))


@pytest.mark.parametrize("seed", [0, 3])
def test_dawid_skene_and_gold_weighting_recover_the_truth_better_than_majority(seed):
    truth, items = simulate_crowd(seed=seed)
    majority = accuracy(lambda v: aggregation.aggregate(v, policy="majority").grade, items, truth)
    ds = crowd.fit("dawid-skene", items, grades=GRADES)
    gold = {i: int(truth[i]) for i in range(40)}
    weighted = crowd.fit("gold-weighted", items, grades=GRADES, gold=gold)
    assert accuracy(lambda v: ds.decide(v)[0], items, truth) > majority + 0.1
    assert accuracy(lambda v: weighted.decide(v)[0], items, truth) > majority
    # the fitted reliabilities tell the lenient raters from the accurate ones
    lenient = [ds.raters[f"w{r}"] for r in range(12) if r % 3 == 0]
    accurate = [ds.raters[f"w{r}"] for r in range(12) if r % 3]
    assert min(accurate) > max(lenient)


def simulate_spammers(*, seed: int, n_items: int = 120, n_raters: int = 12, per_item: int = 5):
    """True grades and 5 votes per item from raters of known expertise: one in three answers right 90% of
    the time (else at random), the others always at random — the crowd GLAD and MACE model."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, n_items, p=[0.4, 0.3, 0.2, 0.1])
    items = []
    for i in range(n_items):
        votes = []
        for r in rng.choice(n_raters, per_item, replace=False).tolist():
            right = r % 3 == 0 and rng.random() < 0.9
            votes.append((f"w{r}", int(truth[i]) if right else int(rng.integers(4))))
        items.append(votes)
    return truth, items


@pytest.mark.parametrize("policy", ["glad", "mace"])
def test_glad_and_mace_find_the_spammers_and_recover_the_truth_better_than_majority(policy):
    truth, items = simulate_spammers(seed=0)
    majority = accuracy(lambda v: aggregation.aggregate(v, policy="majority").grade, items, truth)
    fitted = crowd.fit(policy, items, grades=GRADES, seed=1)
    assert accuracy(lambda v: fitted.decide(v)[0], items, truth) > majority + 0.1
    # each rater's fitted reliability (GLAD's expertise, MACE's chance of knowing) ranks them right
    experts = [fitted.raters[f"w{r}"] for r in range(12) if r % 3 == 0]
    spammers = [fitted.raters[f"w{r}"] for r in range(12) if r % 3]
    assert min(experts) > max(spammers)


def test_mace_is_reproducible_for_a_seed_and_its_restarts_start_apart():
    truth, items = simulate_crowd(seed=3, n_items=40, n_raters=6)
    fitted = crowd.fit("mace", items, grades=GRADES, seed=1)
    assert all(fitted.decide(v) is not None for v in items)
    again = crowd.fit("mace", items, grades=GRADES, seed=1)
    assert (again.decisions, again.posteriors, again.raters) == (
        fitted.decisions,
        fitted.posteriors,
        fitted.raters,
    )
    # crowd-kit's ten restarts, each from its own start: with an integer seed all ten would start from the
    # same point and the fit would be, bit for bit, that of one restart
    assert crowd.MACE_RESTARTS == 10
    from crowdkit.aggregation import MACE

    single = MACE(n_restarts=1, random_state=1).fit(crowd._frame(items)).probas_
    by_signature = {crowd.signature(items[task]): row for task, row in single.iterrows()}
    assert any(
        fitted.posteriors[sig] != {int(g): float(p) for g, p in row.items()}
        for sig, row in by_signature.items()
    )


def test_a_model_policy_is_parsed_and_refused_without_its_fit():
    for name in aggregation.MODEL_POLICIES:
        assert aggregation.parse_policy(name).kind == name
    with pytest.raises(ValueError, match="fit"):
        aggregation.aggregate([("a", 1), ("b", 2)], policy="dawid-skene")
    # the rules common to every policy still come first
    assert (
        aggregation.aggregate([("a", None), ("b", None), ("c", 1)], policy="dawid-skene").state
        == "unrateable"
    )
    assert aggregation.aggregate([("a", 1)], policy="dawid-skene", adjudicated=3).grade == 3


@pytest.mark.parametrize("policy", aggregation.MODEL_POLICIES)
def test_a_release_under_a_model_policy_records_it_in_its_manifest(db, policy):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    pool = make_pool(judgements_per_item=2, raters=[alice, bob, carol])
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q2", "d010"): 2})
    judge(pool, bob, {("q1", "d001"): 3, ("q1", "d002"): 1, ("q1", "d003"): 1, ("q2", "d010"): 2})
    judge(pool, carol, {("q1", "d001"): 0, ("q1", "d002"): 0, ("q1", "d003"): 0, ("q2", "d010"): 0})
    GoldLabel.objects.create(item=PoolItem.objects.get(pool=pool, document__docid="d001"), grade=3)
    release = releases.create_release(pool=pool, policy=policy)
    manifest = json.loads((Path(settings.MEDIA_ROOT) / release.directory / "manifest.json").read_text())
    assert manifest["policy"] == policy == release.policy
    qrels = releases.current_qrels(pool=pool, policy=policy)
    assert qrels["q1"]["d001"] == 3  # two raters who agree with each other (and the gold) outweigh carol
    assert qrels["q1"]["d004"] == -1  # pending stays explicit


def test_gold_weights_are_gold_majority_votes_skills_and_an_unrateable_gold_answer_is_a_miss():
    """Without unrateable answers, the weights are crowd-kit's GoldMajorityVote skills (the reference);
    with them, each rater's weight is their "Gold exact" by the one rule (`rater_quality.gold_accuracy`):
    a rater who answers unrateable on the gold items they cannot get right weighs no more than their
    right answers earn, where counting graded answers only gave them a perfect weight."""
    import pandas as pd
    from crowdkit.aggregation import GoldMajorityVote

    from judgements.rater_quality import gold_accuracy

    truth, items = simulate_crowd(seed=1, n_items=120)
    gold = {i: int(truth[i]) for i in range(30)}
    fitted = crowd.fit("gold-weighted", items, grades=GRADES, gold=gold)
    rows = [(t, str(r), g) for t in gold for r, g in items[t]]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    reference = GoldMajorityVote().fit(frame, pd.Series(gold)).skills_
    assert set(fitted.raters) == set(reference.index)
    for worker, skill in reference.items():
        assert fitted.raters[worker] == pytest.approx(max(float(skill), crowd.GOLD_WEIGHT_FLOOR))

    # w1 answers unrateable wherever they were wrong on gold: 100% of their graded gold answers are right
    dodged = [
        [(r, None if (r == "w1" and t in gold and g != gold[t]) else g) for r, g in votes]
        for t, votes in enumerate(items)
    ]
    answers = [(gold[t], g) for t in gold for r, g in dodged[t] if r == "w1"]
    assert any(g is None for _, g in answers) and all(g == t for t, g in answers if g is not None)
    weighted = crowd.fit("gold-weighted", dodged, grades=GRADES, gold=gold)
    assert weighted.raters["w1"] == pytest.approx(gold_accuracy(answers).exact_rate)
    assert weighted.raters["w1"] < 1.0
    assert weighted.raters["w1"] == pytest.approx(fitted.raters["w1"])  # as if they had answered wrong

"""The judging app's report answers are declared once, as dataclasses beside the code that builds them:
each answer, read through the API as a manager, holds exactly the fields of its dataclass (the API's
schema reads them from it), nested bodies too."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

import pytest

from judgements import crowd_quality, exclusions, pool_progress, queries, rater_quality, stats
from judgements.agreement import bodies as agreement
from judgements.models import GoldLabel
from pooling.models import PoolItem
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge


def names(body: type) -> list[str]:
    return [field.name for field in fields(body)]


@pytest.fixture
def crowd_pool(db, manager):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    pool = make_pool(judgements_per_item=1, raters=[alice, bob, carol], name="crowd")
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q2", "d010"): 2})
    judge(pool, bob, {("q1", "d001"): 3, ("q1", "d002"): 1, ("q2", "d010"): None})
    judge(pool, carol, {("q1", "d001"): 0, ("q1", "d002"): 0, ("q1", "d003"): 0, ("q2", "d010"): 0})
    item = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d001")
    GoldLabel.objects.create(item=item, grade=3, created_by=manager)
    return pool


def test_the_agreement_answer_is_its_dataclass(crowd_pool, manager):
    body: dict[str, Any] = client_for(manager).get("/api/agreement/crowd/").json()
    assert list(body) == names(queries.PoolAgreement)
    assert list(body["cohen"]) == names(agreement.Cohen)
    assert list(body["cohen"]["unweighted"]) == names(agreement.Kappa)
    assert list(body["cohen"]["binary"]) == names(agreement.BinaryKappa)
    assert list(body["cohen"]["bootstrap"]) == names(agreement.Bootstrap)
    assert list(body["fleiss"]) == names(agreement.Fleiss)
    assert list(body["krippendorff"]) == names(agreement.Krippendorff)
    assert body["pairs"] and all(list(pair) == names(agreement.AgreementPair) for pair in body["pairs"])
    assert body["topics"] and all(list(topic) == names(agreement.AgreementTopic) for topic in body["topics"])
    assert list(body["pair_matrix"]) == names(agreement.PairMatrix)


def test_the_rater_quality_answer_is_its_dataclass(crowd_pool, manager):
    body = client_for(manager).get("/api/rater-quality/crowd/").json()
    assert list(body) == names(crowd_quality.RaterQualityReport)
    assert list(body["thresholds"]) == names(crowd_quality.QualityThresholds)
    assert len(body["raters"]) == 3
    for row in body["raters"]:
        assert list(row) == names(rater_quality.RaterQualityRow)
        for kind in ("gold", "consensus", "others"):
            assert list(row[kind]) == names(rater_quality.Versus)
        assert all(list(flag) == names(rater_quality.RaterFlag) for flag in row["flags"])


def test_a_flag_is_its_dataclass():
    quality = rater_quality.RaterQuality(
        rater="r", votes=20, unrateable=0, modal_share=1.0, median_seconds=None,
        gold=rater_quality.Versus(0, None, None, []), consensus=rater_quality.Versus(0, None, None, []),
        others=rater_quality.Versus(0, None, None, []),
    )  # fmt: skip
    (flag,) = rater_quality.flags(quality, [])
    assert list(asdict(flag)) == names(rater_quality.RaterFlag) and flag.flag == "constant"


def test_the_rater_statistics_answer_is_its_dataclass(crowd_pool, manager):
    rows = client_for(manager).get("/api/judging/crowd/stats/").json()["results"]
    assert {row["rater"] for row in rows} == {"alice", "bob", "carol"}
    for row in rows:
        assert list(row) == names(stats.RaterStatsBody)
        assert list(row["gold"]) == names(rater_quality.GoldAccuracy)
    alice = next(row for row in rows if row["rater"] == "alice")
    assert alice["gold"] == {"n": 1, "exact": 1, "within_one": 1, "exact_rate": 1.0, "within_one_rate": 1.0}


def test_the_progress_answer_is_its_dataclass(crowd_pool, manager):
    body = client_for(manager).get("/api/judging/crowd/").json()
    assert list(body["progress"]) == names(pool_progress.Progress)


def test_the_exclusion_answer_is_its_dataclass(crowd_pool, manager):
    api = client_for(manager)
    made = api.post("/api/rater-quality/crowd/exclusions/", {"rater": "carol", "reason": "x"}, format="json")
    assert made.status_code == 201
    assert list(made.json()) == names(exclusions.ExclusionRecord)
    (listed,) = api.get("/api/rater-quality/crowd/exclusions/").json()["results"]
    assert list(listed) == names(exclusions.ExclusionRecord)
    restored = api.delete("/api/rater-quality/crowd/exclusions/carol/").json()
    assert list(restored) == names(exclusions.ExclusionRecord) and restored["restored_by"] == manager.username

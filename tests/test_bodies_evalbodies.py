"""The evaluation API's answers are their dataclasses: the report, the pool-bias table, the two-stage
diagnosis and the noise floor, as a manager gets them, hold exactly the fields (in their order) of the
dataclass each is declared by, nested bodies too, so the body and its one declaration cannot drift."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from evaluation import noise_bodies, noise_pool, report_bodies
from tests.conftest import client_for
from tests.test_openapi_reports import reports_world  # noqa: F401  # the pool with figures to report

pytestmark = pytest.mark.django_db


def names(body: type) -> list[str]:
    return [f.name for f in fields(body)]


def answer(manager: Any, report: str, query: str = "") -> dict[str, Any]:
    response = client_for(manager).get(f"/api/evaluation/judged/{report}/?{query}")
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def test_the_report_is_its_dataclass(manager, reports_world):  # noqa: F811
    body = answer(manager, "report", "judge=copier")
    assert list(body) == names(report_bodies.ReportBody)
    assert body["runs"] and all(list(row) == names(report_bodies.ReportRun) for row in body["runs"])
    assert body["significance"]
    assert all(list(row) == names(report_bodies.Significance) for row in body["significance"])
    assert list(body["judge"]) == names(report_bodies.ReportJudge)


def test_the_pool_bias_table_is_its_dataclass(manager, reports_world):  # noqa: F811
    body = answer(manager, "pool-bias")
    assert list(body) == names(report_bodies.PoolBiasBody)
    assert body["runs"] and all(list(row) == names(report_bodies.PoolBiasRun) for row in body["runs"])


def test_the_two_stage_diagnosis_is_its_dataclass(manager, reports_world):  # noqa: F811
    body = answer(manager, "two-stage", "candidate=alpha&reranked=beta&k=10")
    assert list(body) == names(report_bodies.TwoStageBody)
    assert body["topics"] and all(list(row) == names(report_bodies.TwoStageTopic) for row in body["topics"])
    assert list(body["verdicts"]) == list(report_bodies.VERDICTS)


def test_the_noise_floor_is_its_dataclass(manager, reports_world):  # noqa: F811
    body = answer(manager, "noise-floor", "topic_samples=10&label_samples=5&splits=2")
    assert list(body) == names(noise_pool.PoolNoiseFloor)
    assert list(body)[:3] == ["pool", "policy", "topics"]  # the pool first, then its campaign's report
    assert list(body["settings"]) == names(noise_bodies.NoiseSettings)
    assert body["runs"] and all(list(row) == names(noise_bodies.NoiseRun) for row in body["runs"])
    pairs = [row for rows in body["pairs"].values() for row in rows]
    assert pairs and all(list(row) == names(noise_bodies.NoisePair) for row in pairs)
    summaries = list(body["measures_summary"].values())
    assert summaries and all(list(row) == names(noise_bodies.NoiseMeasure) for row in summaries)
    stability = body["stability"]
    assert list(stability) == names(noise_bodies.Stability)
    assert stability["split_tau"]
    assert all(list(row) == names(noise_bodies.SplitTau) for row in stability["split_tau"].values())
    for rater in stability["raters"]:  # a rater's own keys, then a τ under each measure
        assert list(rater) == ["rater", "votes", "topics", "compared_topics", *body["measures"]]
        assert all(list(rater[m]) == names(noise_bodies.Tau) for m in body["measures"])

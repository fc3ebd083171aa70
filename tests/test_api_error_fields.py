"""A refusal names the field at fault: a judging service's refusal (`JudgingError.field`, given or read from
a `field: message`) answers 400 on that field in the DRF views and the rater's plain views alike; the
two-stage diagnosis names the parameter that names no run, or the policy."""

from __future__ import annotations

import pytest

from judgements.errors import JudgingError
from judgements.models import Adjudication, GoldLabel, Judgement, Rubric
from pooling.models import PoolItem
from tests.conftest import client_for
from tests.evaluation.test_reports import scored_pool  # noqa: F401  (fixture)
from tests.factories import lease_for, make_pool, submit_for

pytestmark = pytest.mark.django_db


def test_a_judging_error_carries_its_field_given_or_written_first():
    assert (JudgingError("choose a grade", field="grade").field, JudgingError("x").field) == ("grade", None)
    prefixed = JudgingError("seed: between 0 and 2,147,483,647")
    assert (prefixed.field, prefixed.message, str(prefixed)) == (
        "seed",
        "between 0 and 2,147,483,647",
        "seed: between 0 and 2,147,483,647",
    )
    assert JudgingError("the judge's program could not be started: boom").field is None


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"grade": 99}, "grade", "grade 99 is not on the rubric (0, 1, 2, 3)"),
        ({}, "grade", "choose a grade"),
        ({"grade": 2, "unrateable": True}, "grade", "an unrateable judgement has no grade"),
        ({"grade": 2, "facets": {"colour": "red"}}, "facets", "unknown facets: colour"),
    ],
)
@pytest.mark.parametrize("path", ["judgement", "judgement-and-next"])
def test_a_refused_judgement_names_its_field(rater, body, field, message, path):
    make_pool(name="p", raters=[rater])
    api = client_for(rater)
    lease = api.post("/api/pools/p/next/").json()
    answer = api.post(f"/api/assignments/{lease['assignment']}/{path}/", body, format="json")
    assert answer.status_code == 400
    assert answer.json() == {field: [message]}
    assert not Judgement.objects.exists()


def test_a_refused_revision_names_its_field(rater):
    pool = make_pool(name="p", raters=[rater])
    assignment = lease_for(pool=pool, rater=rater)
    assert assignment is not None
    judgement = submit_for(assignment=assignment, grade=1)
    answer = client_for(rater).patch(f"/api/judgements/{judgement.pk}/", {"grade": 99}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {"grade": ["grade 99 is not on the rubric (0, 1, 2, 3)"]}
    answer = client_for(rater).patch(
        f"/api/judgements/{judgement.pk}/", {"facets": {"colour": "red"}}, format="json"
    )
    assert answer.status_code == 400 and answer.json() == {"facets": ["unknown facets: colour"]}
    judgement.refresh_from_db()
    assert judgement.grade == 1


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("gold", {"grade": 99}, "grade"),
        ("adjudication", {"grade": 99}, "grade"),
        ("adjudication", {}, "grade"),
        ("gold", {}, "grade"),
    ],
)
def test_gold_and_adjudication_name_the_grade(manager, url, body, field):
    pool = make_pool(name="p")
    item = PoolItem.objects.filter(pool=pool).first()
    assert item is not None
    answer = client_for(manager).post(f"/api/judging/p/{url}/", {"item": item.pk, **body}, format="json")
    assert answer.status_code == 400
    assert field in answer.json(), answer.json()
    assert not GoldLabel.objects.exists() and not Adjudication.objects.exists()


def test_a_rubric_refused_by_the_service_names_grades(manager):
    api = client_for(manager)
    grades = [{"value": 1, "label": "a", "key": "a"}, {"value": 1, "label": "b", "key": "b"}]
    answer = api.post("/api/rubrics/", {"name": "r", "grades": grades}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {"grades": ["grade values must be distinct"]}
    grades = [{"value": 1, "label": "a", "key": "u"}]
    answer = api.post("/api/rubrics/", {"name": "r", "grades": grades}, format="json")
    assert answer.status_code == 400 and "reserved" in answer.json()["grades"][0]
    assert not Rubric.objects.filter(name="r").exists()


def test_a_refusal_without_a_field_is_still_a_detail(rater):
    make_pool(name="p", raters=[rater])
    api = client_for(rater)
    lease = api.post("/api/pools/p/next/").json()
    api.post(f"/api/assignments/{lease['assignment']}/skip/")
    answer = api.post(f"/api/assignments/{lease['assignment']}/judgement/", {"grade": 1}, format="json")
    assert answer.status_code == 400 and answer.json() == {"detail": "you skipped this item"}


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        ("candidate=alpha&reranked=nosuch", {"reranked"}),
        ("candidate=nosuch&reranked=alpha", {"candidate"}),
        ("candidate=nosuch&reranked=other", {"candidate", "reranked"}),
        ("candidate=alpha&reranked=beta&policy=nope", {"policy"}),
        ("candidate=alpha&reranked=beta&policy=rater:nobody", {"policy"}),
    ],
)
def test_the_two_stage_diagnosis_names_the_parameter(scored_pool, manager, query, errors):  # noqa: F811
    answer = client_for(manager).get(f"/api/evaluation/scored/two-stage/?{query}")
    assert answer.status_code == 400
    assert set(answer.json()) == errors, answer.json()
    if "reranked" in errors and "candidate" not in errors:
        assert answer.json()["reranked"] == [
            "no run named 'nosuch' in collection '" + scored_pool.collection.name + "'"
        ]
    assert (
        client_for(manager).get("/api/evaluation/scored/two-stage/?candidate=alpha&reranked=beta").status_code
        == 200
    )

"""Bad numbers and names in API requests and evaluation pages answer 400 naming the field (never a 500):
rubric grades and facets, the adjudication queue's gap, and aggregation policies."""

from __future__ import annotations

import pytest
from django.test import Client

from judgements import rubrics
from judgements.models import Rubric
from tests.conftest import client_for
from tests.evaluation.test_reports import scored_pool  # noqa: F401  (fixture)
from tests.factories import make_pool


@pytest.mark.django_db
def test_it_refuses_a_grade_value_beyond_the_bound_with_400(manager):
    api = client_for(manager)
    grades = [{"value": 10**12, "label": "huge", "key": "h"}, {"value": 0, "label": "no", "key": "0"}]
    response = api.post("/api/rubrics/", {"name": "r", "grades": grades}, format="json")
    assert response.status_code == 400 and "value" in response.json()["grades"]["0"]
    grades[0]["value"] = rubrics.MAX_GRADE + 1
    assert api.post("/api/rubrics/", {"name": "r", "grades": grades}, format="json").status_code == 400
    grades[0]["value"] = rubrics.MAX_GRADE
    assert api.post("/api/rubrics/", {"name": "r", "grades": grades}, format="json").status_code == 201
    assert not Rubric.objects.filter(grades__value__gt=rubrics.MAX_GRADE).exists()


def test_the_service_keeps_the_same_bound(db):
    with pytest.raises(rubrics.JudgingError, match="at most"):
        rubrics.create_rubric(name="r", grades=[{"value": rubrics.MAX_GRADE + 1, "label": "x", "key": "x"}])


@pytest.mark.django_db
def test_it_checks_every_field_of_items_replaced_by_a_patch(manager):
    api = client_for(manager)
    rubric = api.post("/api/rubrics/", {"name": "plain"}, format="json").json()
    url = f"/api/rubrics/{rubric['id']}/"
    response = api.patch(url, {"facets": [{"label": "0"}]}, format="json")
    assert response.status_code == 400 and "name" in response.json()["facets"]["0"]
    response = api.patch(url, {"grades": [{"value": 1}]}, format="json")
    assert response.status_code == 400 and {"label", "key"} <= set(response.json()["grades"]["0"])
    # A whole item is taken, defaults included; the rubric is unchanged by the refusals above.
    assert api.get(url).json()["facets"] == []
    fresh = api.patch(url, {"facets": [{"name": "fresh"}]}, format="json")
    assert fresh.status_code == 200, fresh.content
    assert fresh.json()["facets"] == [{"name": "fresh", "label": "fresh", "choices": [], "required": False}]


@pytest.mark.django_db
def test_it_refuses_a_gap_that_is_not_a_small_whole_number(manager, rater):
    make_pool(name="p", raters=[rater])
    api = client_for(manager)
    for gap in ("%C2%B2", "1.5", "-1", "9" * 23):
        response = api.get(f"/api/judging/p/adjudication/?gap={gap}")
        assert response.status_code == 400 and "gap" in response.json(), gap
    assert api.get("/api/judging/p/adjudication/?gap=2").status_code == 200


@pytest.mark.django_db
def test_it_refuses_a_policy_naming_nobody_in_the_api(scored_pool, admin_user):  # noqa: F811
    api = client_for(admin_user)
    for url in (
        "/api/evaluation/scored/report/?policy=rater:nobody",
        "/api/evaluation/scored/pool-bias/?policy=rater:nobody",
        "/api/evaluation/scored/report/?policy=bogus",
    ):
        response = api.get(url)
        assert response.status_code == 400 and "policy" in response.json(), url
    assert api.get("/api/evaluation/scored/report/?policy=rater:alice").status_code == 200


@pytest.mark.django_db
def test_it_explains_a_bad_policy_on_the_pages(scored_pool, admin_user):  # noqa: F811
    client = Client()
    client.force_login(admin_user)
    for url, words in (
        ("/evaluation/scored/?policy=rater:nobody", "no rater named"),
        ("/evaluation/scored/pool-bias/?policy=bogus", "unknown aggregation policy"),
        ("/evaluation/scored/pool-bias/?policy=rater:nobody", "no rater named"),
    ):
        response = client.get(url)
        assert response.status_code == 400 and words in response.content.decode(), url
    assert client.get("/evaluation/scored/pool-bias/").status_code == 200


@pytest.mark.django_db
def test_a_second_judgement_names_the_endpoint_that_revises_the_first(rater):
    make_pool(name="twice", raters=[rater])
    api = client_for(rater)
    lease = api.post("/api/pools/twice/next/").json()
    first = api.post(f"/api/assignments/{lease['assignment']}/judgement/", {"grade": 1}, format="json")
    assert first.status_code == 201
    again = api.post(f"/api/assignments/{lease['assignment']}/judgement/", {"grade": 2}, format="json")
    assert again.status_code == 400
    message = again.json()["detail"]
    assert f"PATCH /api/judgements/{first.json()['id']}/" in message and "press" not in message
    revised = api.patch(f"/api/judgements/{first.json()['id']}/", {"grade": 2}, format="json")
    assert revised.status_code == 200

"""Odd input on the rater's endpoints answers 4xx, never 500: numbers too large for a float or a
database id, digits that are not ASCII (`'²'.isdigit()` is true), and bodies sent without credentials."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgements import leasing
from judgements.models import Judgement
from tests.factories import lease_for, submit_for
from tests.judgements.test_rater_views import JSON, blind_pool, client_for, lease, url

JSON_BODY = "application/json"
HUGE_SECONDS = '{"grade": 1, "seconds": 1' + "0" * 400 + "}"


@pytest.fixture
def pool(rater):
    return blind_pool(raters=[rater])


def test_it_answers_401_not_500_to_an_anonymous_judgement_with_a_huge_number(pool):
    response = APIClient().post("/api/assignments/1/judgement/", HUGE_SECONDS, content_type=JSON_BODY)
    assert response.status_code == 401


def test_it_answers_400_naming_seconds_when_they_are_too_large_for_a_float(rater, pool):
    assignment = lease_for(pool=pool, rater=rater)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=rater).key}")
    response = client.post(
        f"/api/assignments/{assignment.pk}/judgement/", HUGE_SECONDS, content_type=JSON_BODY
    )
    assert response.status_code == 400
    assert "seconds" in response.json()
    assert not Judgement.objects.exists()
    good = json.dumps({"grade": 1, "seconds": 3})
    response = client.post(f"/api/assignments/{assignment.pk}/judgement/", good, content_type=JSON_BODY)
    assert response.status_code == 201


@pytest.mark.parametrize("back", ["%C2%B2", "99999999999999999999", "-1", "x"])
def test_it_answers_400_to_a_back_that_is_not_a_small_whole_number(rater, pool, back):
    client = client_for(rater)
    lease(client, pool)
    assert client.get(url("revise", pool) + f"?back={back}", **JSON).status_code == 400
    assert client.get(url("revise", pool) + f"?back={back}").status_code == 400


@pytest.mark.parametrize("endpoint, field", [("submit", "assignment"), ("skip", "assignment"),
                                             ("revise", "judgement")])  # fmt: skip
@pytest.mark.parametrize("value", ["²", "99999999999999999999", "0", "-3", ""])
def test_it_answers_404_to_an_id_that_is_not_a_database_id(rater, pool, endpoint, field, value):
    client = client_for(rater)
    lease(client, pool)
    response = client.post(url(endpoint, pool), {field: value, "grade": "1"}, **JSON)
    assert response.status_code == 404
    assert not Judgement.objects.exists()


def test_it_takes_the_same_note_limit_on_the_page_the_api_and_the_services(rater, pool):
    from judgements.errors import JudgingError
    from judgements.labels import NOTE_MAX_LENGTH

    client = client_for(rater)
    state = lease(client, pool)
    page = client.get(url("judge", pool)).content.decode()
    assert f'maxlength="{NOTE_MAX_LENGTH}"' in page
    too_long = "n" * (NOTE_MAX_LENGTH + 1)
    response = client.post(url("submit", pool), {"assignment": state["assignment"], "grade": 1,
                                                 "note": too_long}, **JSON)  # fmt: skip
    assert response.status_code == 400
    assignment = leasing.current_assignment(pool=pool, rater=rater)
    with pytest.raises(JudgingError):
        submit_for(assignment=assignment, grade=1, note=too_long)
    fits = "n" * NOTE_MAX_LENGTH
    response = client.post(url("submit", pool), {"assignment": state["assignment"], "grade": 1,
                                                 "note": fits}, **JSON)  # fmt: skip
    assert response.status_code == 200
    assert Judgement.objects.get().note == fits

"""A pool's raters read its `instructions`, never its description (which a manager may fill with run
names); managers write both, where the pool is created and where its description is edited."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from pooling.models import Pool
from tests.judgements.test_rater_views import blind_pool, client_for, url

SECRET = "uses secret_bm25 and secret_dense"
FOR_RATERS = "Judge whether the page answers the question as asked."


@pytest.fixture
def pool(rater):
    found = blind_pool(raters=[rater], description=SECRET, instructions=FOR_RATERS)
    assert Pool.objects.get(pk=found.pk).instructions == FOR_RATERS
    return found


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_it_shows_raters_the_instructions_and_never_the_description_on_the_home_page(rater, pool):
    page = client_for(rater).get("/").content.decode()
    assert FOR_RATERS in page
    assert "secret_bm25" not in page


def test_it_shows_raters_the_instructions_and_never_the_description_on_the_judging_page(rater, pool):
    page = client_for(rater).get(url("judge", pool)).content.decode()
    assert FOR_RATERS in page
    assert "secret_bm25" not in page


def test_it_gives_raters_the_instructions_in_the_api_and_never_the_description(rater, pool):
    data = api_for(rater).get(f"/api/judging/{pool.name}/").json()
    assert data["instructions"] == FOR_RATERS
    assert "secret_bm25" not in str(data)


def test_it_lets_a_manager_write_instructions_when_creating_a_pool(manager, pool):
    response = api_for(manager).post(
        "/api/pools/",
        {"name": "second", "collection": pool.collection.name, "runs": [r.name for r in pool.runs.all()],
         "description": "for us", "instructions": "for them"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    assert response.json()["instructions"] == "for them"
    assert Pool.objects.get(name="second").instructions == "for them"


def test_it_lets_an_admin_edit_the_instructions_where_the_description_is_edited(admin_client, pool):
    page = admin_client.get(f"/admin/pooling/pool/{pool.pk}/change/")
    assert 'name="instructions"' in page.content.decode()
    response = admin_client.post(
        f"/admin/pooling/pool/{pool.pk}/change/",
        {"description": SECRET, "instructions": "Read the whole page first.", "price_per_judgement": "1.00"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Pool.objects.get(pk=pool.pk).instructions == "Read the whole page first."

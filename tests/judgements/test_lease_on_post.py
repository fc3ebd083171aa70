"""The judging page leases on POST only: a bare GET (a link, an image or a frame on another site that a
logged-in rater's browser follows) shows the live lease or a Start screen and changes nothing; the page's
script asks for the first item by POST with the CSRF token."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from judgements.models import Assignment
from tests.judgements.test_rater_views import JSON, blind_pool, client_for, lease, url


@pytest.fixture
def pool(rater):
    return blind_pool(raters=[rater])


def test_it_leases_nothing_on_a_bare_get_of_the_judging_page(rater, pool):
    client = client_for(rater)
    page = client.get(url("judge", pool))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-mode="start"' in html and "Start judging" in html
    config = json.loads(re.search(r'id="judge-config" type="application/json">(.*?)</script>', html).group(1))
    assert config["state"]["mode"] == "start" and config["state"]["assignment"] is None
    assert client.get(url("judge", pool), **JSON).json()["mode"] == "start"
    assert not Assignment.objects.exists()


def test_it_leases_on_post_and_resumes_that_lease_on_get(rater, pool):
    client = client_for(rater)
    data = lease(client, pool)
    assert data["mode"] == "item"
    assert Assignment.objects.filter(rater=rater, state=Assignment.State.ACTIVE).count() == 1
    page = client.get(url("judge", pool)).content.decode()
    assert f'name="assignment" value="{data["assignment"]}"' in page
    assert client.get(url("judge", pool), **JSON).json()["assignment"] == data["assignment"]


def test_it_refuses_a_cross_site_post_without_the_csrf_token(rater, pool):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(rater)
    assert browser.post(url("judge", pool), **JSON).status_code == 403
    assert browser.post(url("judge", pool)).status_code == 403
    assert not Assignment.objects.exists()


def test_it_shows_all_done_not_start_when_nothing_is_left(rater, pool):
    client = client_for(rater)
    data = lease(client, pool)
    while data["mode"] == "item":
        data = client.post(url("submit", pool), {"assignment": data["assignment"], "grade": 0}, **JSON).json()
    assert client.get(url("judge", pool), **JSON).json()["mode"] == "done"


def test_it_answers_404_to_a_post_by_someone_who_is_not_a_rater(outsider, pool):
    assert client_for(outsider).post(url("judge", pool), **JSON).status_code == 404
    assert not Assignment.objects.exists()

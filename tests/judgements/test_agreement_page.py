"""The agreement page's Fleiss row: the ratings per item and the items left out (Fleiss' κ needs the same
number of ratings for each item) are the numbers GET /api/agreement/<pool>/ gives."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db

BOTH = {("q1", "d001"): 3, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q2", "d010"): 2}


def page_and_api(manager) -> tuple[str, dict]:
    client = Client()
    client.force_login(manager)
    html = client.get("/campaigns/agreed/agreement/").content.decode()
    return html, client_for(manager).get("/api/agreement/agreed/").json()["fleiss"]


def test_it_shows_the_ratings_per_item_and_the_items_left_out_as_the_api_gives_them(manager):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(name="agreed", judgements_per_item=2, raters=[alice, bob])
    judge(pool, alice, {**BOTH, ("q1", "d004"): 2, ("q2", "d011"): 0})  # two items only alice judged
    judge(pool, bob, BOTH)
    html, fleiss = page_and_api(manager)
    assert fleiss["ratings_per_item"] == 2 and fleiss["n_items_dropped"] == 2
    row = re.search(r"<tr><td>Fleiss' κ.*?</tr>", html, re.S)
    assert row is not None
    text = re.sub(r"<[^>]+>", "", row.group(0))
    assert f"({fleiss['ratings_per_item']} ratings per item;" in text
    assert f"{fleiss['n_items_dropped']} items rated another number of times left out" in text


def test_it_says_nothing_of_items_left_out_when_none_is(manager):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(name="agreed", judgements_per_item=2, raters=[alice, bob])
    judge(pool, alice, BOTH)
    judge(pool, bob, BOTH)
    html, fleiss = page_and_api(manager)
    assert fleiss["n_items_dropped"] == 0
    assert f"Fleiss' κ ({fleiss['ratings_per_item']} ratings per item)" in re.sub(r"<[^>]+>", "", html)
    assert "left out:" not in html


def test_a_topics_undefined_kappa_reads_undefined_in_both_columns_as_the_api_gives_null(manager):
    """q2's one item, graded alike: chance agreement is 1, so neither κ is defined (the linear column
    once showed a dash where the unweighted one said undefined)."""
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(name="agreed", judgements_per_item=2, raters=[alice, bob])
    judge(pool, alice, BOTH)
    judge(pool, bob, BOTH)
    client = Client()
    client.force_login(manager)
    html = client.get("/campaigns/agreed/agreement/").content.decode()
    topics = {t["topic"]: t for t in client_for(manager).get("/api/agreement/agreed/").json()["topics"]}
    assert topics["q2"]["unweighted"] is None and topics["q2"]["linear"] is None
    row = re.search(r"<tr><td>q2</td>.*?</tr>", html, re.S)
    assert row is not None
    cells = [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    ]
    assert cells[1:3] == ["undefined", "undefined"]

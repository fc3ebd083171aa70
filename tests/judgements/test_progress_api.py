"""A rater's progress in a pool is one set of counts: `GET /api/judging/<pool>/`'s `progress` gives the
judging page's and the rater's home page's (`judgements.progress`) — the share of the work done, the
items they judged and what is left for them — whatever gold, lapsed leases or an empty pool do."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from judgements import adjudication, lease_ends, leasing, submission
from judgements.models import Assignment
from pooling.models import PoolItem
from tests.conftest import client_for
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db


def api_progress(user, pool) -> dict:
    return client_for(user).get(f"/api/judging/{pool.name}/").json()["progress"]


def home_line(user, pool) -> str:
    """The rater's home page's line for the pool: `N left for you · you judged M · pool D / R judgements
    (P%)`."""
    client = Client()
    client.force_login(user)
    html = client.get("/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))
    found = re.search(
        r"(\d+) left for you · you judged (\d+) · pool (\d+) / (\d+) judgements \((\d+)%\)", text
    )
    assert found is not None, text
    return found.group(0)


def same_on_page_and_api(user, pool) -> dict:
    progress = api_progress(user, pool)
    left, mine, done, need, percent = re.findall(r"\d+", home_line(user, pool))
    assert (progress["left_for_me"], progress["mine"], progress["required"]) == (
        int(left),
        int(mine),
        int(need),
    )
    assert round(100 * progress["fraction"]) == int(percent)
    assert progress["fraction"] == round(int(done) / int(need), 4) if int(need) else progress["fraction"] == 0
    return progress


def test_a_gold_item_judged_by_every_rater_counts_each_rater_once_in_the_share_done():
    """A gold item is served to each of the three raters, so it needs three judgements
    (`pooling.models.NEED`) and each moves the share done, on the page as in the API; it fills its three,
    no other item's (it used to count for one, so that a rater could tell it by the bar standing still)."""
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    pool = make_pool(name="golden", raters=[alice, bob, carol])
    gold = PoolItem.objects.filter(pool=pool).order_by("pk").first()
    adjudication.set_gold(item=gold, grade=2, by=alice)
    for rater in (alice, bob, carol):  # each is served the gold item; each judges it
        while (lease := leasing.lease_next(pool=pool, rater=rater)) is not None:
            assignment = Assignment.objects.get(pk=lease.assignment)
            if assignment.item_id == gold.pk:
                submission.submit_label(assignment=lease.assignment, rater=rater, grade=2)
                break
            lease_ends.skip_item(assignment=assignment)  # not this one
    progress = same_on_page_and_api(alice, pool)
    assert progress["judgements"] == 3  # every judgement made is counted here...
    assert progress["required"] == PoolItem.objects.filter(pool=pool).count() + 2  # the gold item needs 3
    assert progress["fraction"] == round(3 / progress["required"], 4)  # ...and fills its three


def test_a_lapsed_lease_not_yet_swept_is_not_left_for_the_rater_on_either():
    alice = make_user("alice")
    pool = make_pool(name="lapsed", raters=[alice])
    before = same_on_page_and_api(alice, pool)
    lease = leasing.lease_next(pool=pool, rater=alice)
    assert same_on_page_and_api(alice, pool)["left_for_me"] == before["left_for_me"]  # the live one counts
    Assignment.objects.filter(pk=lease.assignment).update(expires_at=timezone.now() - timedelta(minutes=1))
    # still 'active' until the sweep: it is neither live nor open for her (the item is held by the lease)
    assert same_on_page_and_api(alice, pool)["left_for_me"] == before["left_for_me"] - 1


def test_an_empty_pool_has_done_nothing_on_either():
    alice = make_user("alice")
    pool = make_pool(name="empty", raters=[alice], build=False)
    progress = same_on_page_and_api(alice, pool)
    assert (progress["required"], progress["fraction"], progress["left_for_me"]) == (0, 0.0, 0)

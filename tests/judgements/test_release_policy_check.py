"""A release's `rater:NAME` policy is checked for its pool before any job (`releases.check_policy`): NAME
must have judged in the pool, and not be excluded from it; otherwise the API answers 400 on `policy`, the
releases page and `release_qrels` refuse with the same words, and nothing is made. The words do not tell
whether a user of that name exists elsewhere on the platform."""

from __future__ import annotations

from re import escape as escape_re

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils.html import escape

from judgements import exclusions, releases
from judgements.errors import JudgingError
from judgements.models import Release
from pooling.models import Job
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(manager, rater):
    """A pool judged by `rater` (alice is a rater who has judged nothing; bob judges only elsewhere)."""
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(name="p", raters=[rater, alice])
    judge(pool, rater, {("q1", "d001"): 2, ("q1", "d002"): 0})
    judge(make_pool(name="elsewhere", raters=[bob]), bob, {("q1", "d001"): 1})
    return pool


REFUSED = [
    ("rater:nosuch", "no rater named 'nosuch' has judged in this pool"),
    ("rater:alice", "no rater named 'alice' has judged in this pool"),  # a rater of the pool, nothing judged
    ("rater:bob", "no rater named 'bob' has judged in this pool"),  # judged in another pool only
    ("rater:outsider", "no rater named 'outsider' has judged in this pool"),  # a user, never a rater
]


@pytest.mark.parametrize(("policy", "message"), REFUSED)
def test_the_api_refuses_the_policy_before_any_job(manager, outsider, pool, policy, message):
    answer = client_for(manager).post("/api/releases/", {"pool": "p", "policy": policy}, format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"policy": [message]}
    assert not Job.objects.exists() and not Release.objects.exists()


def test_a_rater_who_judged_in_the_pool_is_released(manager, pool, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(
            "/api/releases/", {"pool": "p", "policy": "rater:rater"}, format="json"
        )
    assert answer.status_code == 202, answer.content
    assert Release.objects.get().counts["judged"] == 2


def test_a_policy_that_does_not_parse_is_refused_on_policy_too(manager, pool):
    answer = client_for(manager).post("/api/releases/", {"pool": "p", "policy": "bogus"}, format="json")
    assert answer.status_code == 400 and "unknown aggregation policy" in answer.json()["policy"][0]
    assert not Job.objects.exists()


@pytest.mark.parametrize(("policy", "message"), REFUSED[:2])
def test_the_releases_page_refuses_the_same_way(manager, outsider, pool, policy, message):
    client = Client()
    client.force_login(manager)
    page = client.post("/campaigns/p/releases/new/", {"policy": policy}, follow=True)
    assert escape(message) in page.content.decode()
    assert not Job.objects.exists() and not Release.objects.exists()


@pytest.mark.parametrize(("policy", "message"), REFUSED)
def test_release_qrels_refuses_the_same_way(outsider, pool, policy, message):
    with pytest.raises(CommandError, match=message):
        call_command("release_qrels", "p", "--policy", policy)
    assert not Release.objects.exists()


def test_the_current_labels_take_the_same_rule(pool):
    with pytest.raises(JudgingError, match="no rater named 'alice'"):
        releases.current_qrels(pool=pool, policy="rater:alice")
    assert releases.current_qrels(pool=pool, policy="rater:rater")["q1"]["d001"] == 2


def test_it_refuses_a_rater_excluded_from_the_pool_until_restored(manager, rater, pool):
    exclusions.exclude_rater(pool=pool, rater=rater, by=manager, reason="constant")
    message = "'rater' is excluded from this pool's releases (restore them first)"
    with pytest.raises(JudgingError, match=escape_re(message)):
        releases.check_policy(pool=pool, policy="rater:rater")
    answer = client_for(manager).post("/api/releases/", {"pool": "p", "policy": "rater:rater"}, format="json")
    assert answer.status_code == 400 and answer.json() == {"policy": [message]}
    with pytest.raises(CommandError, match=escape_re(message)):
        call_command("release_qrels", "p", "--policy", "rater:rater")
    with pytest.raises(JudgingError, match=escape_re(message)):
        releases.current_qrels(pool=pool, policy="rater:rater")
    assert not Job.objects.exists() and not Release.objects.exists()
    exclusions.restore_rater(pool=pool, rater=rater, by=manager)
    assert releases.check_policy(pool=pool, policy="rater:rater").rater == str(rater.pk)

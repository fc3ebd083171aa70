"""Deriving click labels through the API: every number is bounded before a job starts (a 400 naming the
field, never a 500 nor a failed job left behind), and a refusal names the field at fault."""

from __future__ import annotations

import pytest

from online import services
from online.models import ClickLabelSet
from pooling.errors import Refused
from pooling.models import Job
from tests.conftest import client_for
from tests.online.helpers import judged_pool, pool_log

pytestmark = pytest.mark.django_db

PAGES = [{"session": f"s{i}", "qid": "q1", "docids": ["d001", "d003"], "clicks": [1]} for i in range(6)]
HUGE = 1180591620717411303424  # 2**70


@pytest.fixture
def log(manager, tmp_path):
    pool = judged_pool(grades={"d001": 3}, managers=[manager])
    return pool_log(tmp_path, pool, PAGES)


@pytest.fixture
def estimate(log):
    return services.estimate_propensity(log=log, method="given", params={"theta": [1, 0.5]})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("min_impressions", HUGE),
        ("min_impressions", services.MAX_MIN_IMPRESSIONS + 1),
        ("min_impressions", 0),
        ("propensity", HUGE),
        ("replicates", HUGE),
        ("tau", "1e999"),
    ],
)
def test_it_refuses_a_number_out_of_bounds_before_any_job(
    manager, log, estimate, field, value, django_capture_on_commit_callbacks
):
    body = {"estimator": "ips", "propensity": estimate.pk, field: value}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(f"/api/click-logs/{log.pk}/labels/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert field in answer.json()
    assert not Job.objects.filter(kind=Job.Kind.CLICK_LABELS).exists()
    assert not ClickLabelSet.objects.exists()


def test_the_largest_min_impressions_is_taken(manager, log, estimate, django_capture_on_commit_callbacks):
    body = {"estimator": "ips", "propensity": estimate.pk, "min_impressions": services.MAX_MIN_IMPRESSIONS}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(f"/api/click-logs/{log.pk}/labels/", body, format="json")
    assert answer.status_code == 202, answer.content
    assert Job.objects.get().status == Job.Status.DONE
    assert ClickLabelSet.objects.get().labels.count() == 0  # no pair has that many impressions


def test_the_service_keeps_the_same_bound(log, estimate):
    for bad in (0, services.MAX_MIN_IMPRESSIONS + 1):
        with pytest.raises(Refused, match="min_impressions"):
            services.derive_click_labels(
                log=log, estimator="ips", propensity_estimate=estimate, min_impressions=bad
            )
    assert not ClickLabelSet.objects.exists()


def test_a_missing_propensity_is_refused_on_propensity_even_with_thresholds(manager, log):
    api = client_for(manager)
    answer = api.post(
        f"/api/click-logs/{log.pk}/labels/",
        {"estimator": "ips", "thresholds": "0.1:1,0.3:2,0.6:3"},
        format="json",
    )
    assert answer.status_code == 400
    assert answer.json() == {"propensity": ["the ips estimator needs a propensity estimate"]}
    bad = api.post(
        f"/api/click-logs/{log.pk}/labels/", {"estimator": "coec", "thresholds": "0.5:9"}, format="json"
    )
    assert bad.status_code == 400 and "not a grade of the rubric" in bad.json()["thresholds"][0]
    assert not Job.objects.filter(kind=Job.Kind.CLICK_LABELS).exists()


def test_it_names_every_bad_option_at_once(manager, log, django_capture_on_commit_callbacks):
    """Bad thresholds and no propensity estimate for ips: one answer names both (it named the propensity
    only, and the thresholds after that was mended), in the API and beside each field on the log's page."""
    from django.test import Client

    body = {"estimator": "ips", "thresholds": "0.5:9", "replicates": 5}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(f"/api/click-logs/{log.pk}/labels/", body, format="json")
    assert answer.status_code == 400
    assert answer.json()["propensity"] == ["the ips estimator needs a propensity estimate"]
    assert "not a grade of the rubric" in answer.json()["thresholds"][0] and set(answer.json()) == {
        "propensity",
        "thresholds",
    }
    page = Client()
    page.force_login(manager)
    shown = page.post(f"/online/logs/{log.pk}/labels/", body)
    assert shown.status_code == 400
    html = shown.content.decode()
    for field, message in (("propensity", "needs a propensity estimate"), ("thresholds", "not a grade")):
        beside = html.split(f'name="{field}"')[1].split("</label>")[1].split("<label>")[0]
        assert 'class="errorlist"' in beside and message in beside, beside
    assert not Job.objects.filter(kind=Job.Kind.CLICK_LABELS).exists()

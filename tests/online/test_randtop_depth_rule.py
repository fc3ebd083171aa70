"""RandTop's `n` (the depth the intervention shuffled) has one rule, `propensity.depth_problem`, in the
estimator itself: `randtop` refuses a depth outside 1..MAX_DEPTH, and the API, the log page and the command
refuse with its message, naming `n`, before a job starts."""

from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from online import propensity
from online.logformats import MAX_POSITION
from online.models import PropensityEstimate
from pooling.models import Job
from tests.conftest import client_for
from tests.online.helpers import judged_pool, pool_log

PAGES = [{"session": f"s{i}", "qid": "q1", "docids": ["d001", "d002"], "clicks": [1]} for i in range(5)]


def counts() -> propensity.Counts:
    return propensity.Counts.from_cells([0, 0, 1], [1, 2, 3], [10, 10, 10], [5, 3, 2])


# ------------------------------------------------------------------------------------------ pure, no database


def test_the_deepest_depth_is_the_deepest_position() -> None:
    assert propensity.MAX_DEPTH == MAX_POSITION == 1000


@pytest.mark.parametrize("n", [0, -3, 1001, 10**12, True, 2.5, "3"])
def test_randtop_refuses_a_depth_outside_its_bounds(n) -> None:
    with pytest.raises(propensity.PropensityError) as refused:
        propensity.randtop(counts(), n)
    assert str(refused.value) == propensity.depth_problem(n)
    assert str(refused.value).startswith("n must be a whole number from 1 to 1000 (the depth it shuffled)")


@pytest.mark.parametrize("n", [1, 3, 1000, np.int64(2)])
def test_randtop_takes_a_depth_within_its_bounds(n) -> None:
    assert propensity.depth_problem(n) is None
    assert propensity.randtop(counts(), n).diagnostics["n"] == n


def test_randtop_without_a_depth_takes_the_deepest_position_logged() -> None:
    assert propensity.randtop(counts()).diagnostics["n"] == 3
    with pytest.raises(propensity.PropensityError, match="n must be a whole number"):
        propensity.estimate("randtop", counts(), n=1001)  # what a job's params reach


# ------------------------------------------------------------------------------------------ its callers


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "n"), [("randtop", 0), ("randtop", -1), ("randtop", 1001), ("em", 1001)])
def test_the_api_refuses_a_depth_with_the_estimators_message_on_n(tmp_path, manager, method, n) -> None:
    log = pool_log(tmp_path, judged_pool(grades={}, managers=[manager]), PAGES)
    answer = client_for(manager).post(
        f"/api/click-logs/{log.pk}/propensities/", {"method": method, "n": n}, format="json"
    )
    assert answer.status_code == 400 and answer.json() == {"n": [propensity.depth_problem(n)]}
    assert not Job.objects.filter(kind=Job.Kind.PROPENSITY).exists()


@pytest.mark.django_db
def test_the_api_estimates_with_a_depth_in_range(
    tmp_path, manager, django_capture_on_commit_callbacks
) -> None:
    log = pool_log(tmp_path, judged_pool(grades={}, managers=[manager]), PAGES)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(
            f"/api/click-logs/{log.pk}/propensities/", {"method": "randtop", "n": 2}, format="json"
        )
    assert answer.status_code == 202, answer.json()
    assert PropensityEstimate.objects.get().diagnostics["n"] == 2


@pytest.mark.django_db
@pytest.mark.parametrize(("given", "n"), [("1001", 1001), ("0", 0), ("deep", "deep")])
def test_the_log_page_refuses_a_depth_beside_its_field(tmp_path, manager, given, n) -> None:
    log = pool_log(tmp_path, judged_pool(grades={}, managers=[manager]), PAGES)
    page = Client()
    page.force_login(manager)
    shown = page.post(f"/online/logs/{log.pk}/propensities/", {"method": "randtop", "n": given})
    assert shown.status_code == 400 and shown.context["errors"] == {"n": [propensity.depth_problem(n)]}
    assert f'max="{propensity.MAX_DEPTH}"' in shown.content.decode()  # the input's bound, the same constant
    assert not Job.objects.filter(kind=Job.Kind.PROPENSITY).exists()


@pytest.mark.django_db
def test_the_log_page_estimates_with_a_depth(tmp_path, manager, django_capture_on_commit_callbacks) -> None:
    log = pool_log(tmp_path, judged_pool(grades={}, managers=[manager]), PAGES)
    page = Client()
    page.force_login(manager)
    with django_capture_on_commit_callbacks(execute=True):
        shown = page.post(f"/online/logs/{log.pk}/propensities/", {"method": "randtop", "n": "1"})
    assert shown.status_code == 302
    assert PropensityEstimate.objects.get().diagnostics["n"] == 1


@pytest.mark.django_db
def test_the_command_refuses_a_depth_with_the_estimators_message(tmp_path) -> None:
    log = pool_log(tmp_path, judged_pool(grades={}), PAGES)
    with pytest.raises(CommandError) as refused:
        call_command("estimate_propensity", str(log.pk), "--method", "randtop", "--n", "1001",
                     stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip
    assert str(refused.value) == f"--{propensity.depth_problem(1001)}"
    assert not PropensityEstimate.objects.exists()

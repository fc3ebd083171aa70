"""estimate_propensity --n (RandTop's randomised depth) takes what the API takes, 1 to 1000, and says so
for anything else instead of "no impressions" (or, for 0, quietly using the deepest position)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from online.models import PropensityEstimate
from tests.online.helpers import judged_pool, pool_log

PAGES = [{"session": f"s{i}", "qid": "q1", "docids": ["d001", "d002"], "clicks": [1]} for i in range(5)]


@pytest.mark.django_db
@pytest.mark.parametrize("n", ["-3", "0", "1001"])
def test_it_refuses_a_depth_outside_1_to_1000(tmp_path, n) -> None:
    log = pool_log(tmp_path, judged_pool(grades={}), PAGES)
    with pytest.raises(CommandError, match="--n must be a whole number from 1 to 1000"):
        call_command(
            "estimate_propensity", str(log.pk), "--method", "randtop", "--n", n,
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    assert not PropensityEstimate.objects.exists()


@pytest.mark.django_db
def test_it_estimates_with_a_depth_in_range(tmp_path) -> None:
    log = pool_log(tmp_path, judged_pool(grades={}), PAGES)
    call_command(
        "estimate_propensity", str(log.pk), "--method", "randtop", "--n", "2",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    assert PropensityEstimate.objects.get().diagnostics["n"] == 2

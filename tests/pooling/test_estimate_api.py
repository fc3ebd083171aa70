"""`GET /api/pools/<pool>/`'s `estimate` is the figure the pool page and the manager's dashboard show: once
the pool is built, the judgements its items require and their cost (`pooling.stats.pool_estimate`, which
reads `judgement_totals`), whatever runs were taken out since (a judged item stays, and the runs' depth-k
lists no longer say what the pool holds); before the build, what building would select."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from pooling import pool_build
from pooling.models import Pool, PoolItem, Run
from tests.conftest import client_for, page_text
from tests.factories import lease_for, make_manager, make_pool, make_user, submit_for
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db


def costs(manager: Any, pool: Pool) -> dict[str, str]:
    """The estimated cost as the pool page, the dashboard and the API give it, each to 2 decimals."""
    page = re.search(
        r"Estimated cost at [\d.]+ per judgement ([\d.]+)", page_text(manager, f"/pools/{pool.name}/")
    )
    board = page_text(manager, "/manage/dashboard/").split(f" {pool.name} ", 1)[1]
    spent = re.search(r"Spent / estimate ([\d.]+) / ([\d.]+)", board)
    assert page is not None and spent is not None
    estimate = client_for(manager).get(f"/api/pools/{pool.name}/").json()["estimate"]
    return {"page": page.group(1), "dashboard": spent.group(2), "api": f"{estimate['cost']:.2f}"}


@pytest.fixture
def manager() -> Any:
    return make_manager("manager")


def test_a_built_pool_estimates_what_its_items_require_after_a_run_is_taken_out(manager):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(name="shrunk", judgements_per_item=2, raters=[alice, bob], managers=[manager])
    # alpha's own items (q1 d002 d004, q2 d011 d012) and shared ones; d002 and d011 are judged, so kept
    for rater in (alice, bob):
        judge(pool, rater, {("q1", "d002"): 1, ("q1", "d003"): 2})
    judge(pool, alice, {("q2", "d011"): 0})
    pool_build.remove_run(pool=pool, run=Run.objects.get(collection=pool.collection, name="alpha"))
    items = PoolItem.objects.filter(pool=pool, selected=True)
    assert items.count() == 8  # beta's 6, and alpha's 2 judged ones
    assert costs(manager, pool) == {"page": "16.00", "dashboard": "16.00", "api": "16.00"}
    estimate = client_for(manager).get(f"/api/pools/{pool.name}/").json()["estimate"]
    assert estimate == {"candidates": 8, "items": 8, "judgements": 16, "cost": 16.0}


def test_an_adaptive_pool_estimates_what_its_items_and_plan_require(manager):
    alice = make_user("alice")
    pool = make_pool(
        name="adaptive", strategy="mtf", budget=12, judgements_per_item=3, double_judge_fraction=0.5,
        price_per_judgement=Decimal("0.50"), raters=[alice], managers=[manager],
    )  # fmt: skip
    judged = 0
    for _ in range(5):  # the strategy selects the items alice is given; she judges them
        assignment = lease_for(pool=pool, rater=alice)
        if assignment is None:  # which items it selects, and so how many she may take, is the strategy's
            break
        submit_for(assignment=assignment, grade=1)
        judged += 1
    assert judged >= 1
    pool_build.remove_run(pool=pool, run=Run.objects.get(collection=pool.collection, name="alpha"))
    found = costs(manager, pool)
    assert found["api"] == found["page"] == found["dashboard"], found
    estimate = client_for(manager).get(f"/api/pools/{pool.name}/").json()["estimate"]
    # what the pool holds (alpha's judged items kept), not what the runs' depth-k lists would select now
    assert estimate["candidates"] == PoolItem.objects.filter(pool=pool).count()
    assert estimate["cost"] == pytest.approx(estimate["judgements"] * 0.5)
    assert f"{estimate['cost']:.2f}" == found["page"]


def test_a_pool_not_built_estimates_what_building_would_select(manager):
    pool = make_pool(name="draft", judgements_per_item=2, managers=[manager], build=False)
    estimate = client_for(manager).get(f"/api/pools/{pool.name}/").json()["estimate"]
    assert estimate == {"candidates": 10, "items": 10, "judgements": 20, "cost": 20.0}
    shown = re.search(
        r"(\d+) items to judge, (\d+) judgements, estimated cost (\d+\.\d\d)",
        page_text(manager, f"/pools/{pool.name}/"),
    )
    assert shown is not None and shown.groups() == ("10", "20", "20.00")

"""A pool's judgements required are one figure wherever it is shown (`pool_reads.judgements_required`): an
adaptive pool's need is what the items its strategy has selected need plus its plan (the expected
judgements per item) for the rest of its budget — its plan while nothing is selected, exactly what its
selected items need once the budget is, so a finished pool reads 100% — on the statistics API and the pool
page, the manager's dashboard, the judging API's `progress.required` and `fraction`, the rater's home page
and judging page (and its refresh after a key press), on SQLite and on PostgreSQL's tallied path alike; a
depth pool's figure is what its selected items need, as before."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client

from judgements.dashboard import pool_dashboard
from judgements.models import Judging
from judgements.progress import live_progress, pool_share, progress
from pooling.models import PoolItem
from tests.conftest import client_for, page_text
from tests.factories import lease_for, make_manager, make_pool, make_user, submit_for

pytestmark = pytest.mark.django_db


def required_everywhere(*, manager, rater, pool) -> dict[str, int]:
    """The pool's judgements required as each place shows it, by place."""
    api, staff = client_for(rater), client_for(manager)
    statistics = staff.get(f"/api/pools/{pool.name}/statistics/").json()
    pool_page = re.search(r"Judgements required[^0-9]*(\d+)", page_text(manager, f"/pools/{pool.name}/"))
    board = page_text(manager, "/manage/dashboard/")
    board_line = re.search(r"Judgements done / needed (\d+) / (\d+)", board[board.index(f" {pool.name} ") :])
    home = re.search(r"pool (\d+) / (\d+) judgements", page_text(rater, "/"))
    judging_page = re.search(
        r"Whole pool · judgements by all raters (\d+) / (\d+)", page_text(rater, f"/judge/{pool.name}/")
    )
    refresh = Client()
    refresh.force_login(rater)
    part = refresh.get(f"/judge/{pool.name}/progress/").json()["progress"]
    part_line = re.search(r'id="progress-pool">(\d+) / (\d+)', part)
    assert pool_page and board_line and home and judging_page and part_line
    judging = Judging.objects.get(pool=pool)
    return {
        "statistics": statistics["judgements_required"],
        "pool page": int(pool_page.group(1)),
        "dashboard page": int(board_line.group(2)),
        "dashboard": pool_dashboard(pool=pool).needed,
        "api (rater)": api.get(f"/api/judging/{pool.name}/").json()["progress"]["required"],
        "api (manager)": staff.get(f"/api/judging/{pool.name}/").json()["progress"]["required"],
        "home page": int(home.group(2)),
        "judging page": int(judging_page.group(2)),
        "judging page refresh": int(part_line.group(2)),
        "progress": progress(judging=judging, user=rater, topic_id=None)["need"],
        "progress, a pass over the items": progress(
            judging=judging, user=rater, topic_id=None, tallied=False
        )["need"],
        "live progress": (live_progress(pool_name=pool.name, user=rater) or {})["need"],
        "pool share": pool_share(pool_id=pool.pk)["need"],
    }


def selected_need(pool) -> tuple[int, int]:
    """(selected items, their required judgements) of `pool`, from its items."""
    selected = PoolItem.objects.filter(pool=pool, selected=True)
    return selected.count(), sum(selected.values_list("required_judgements", flat=True))


def test_it_gives_an_adaptive_pools_plan_then_what_its_selected_items_need_everywhere():
    """A fresh `mtf` pool, budget 4, 3 judgements per item for 37.5% of them: 4 × (1 + 2 × 0.375) = 7
    required everywhere (the API said 0: no item selected yet); after a judgement, the selected items'
    need plus 1.75 for each item of the budget still to select; judged to the end by three raters, exactly
    what the 4 selected items drew (a double-judge fraction is an expectation, the draw is not: 4 items
    of 1 or 3 judgements need an even number, never the plan's 7) and 100% everywhere, where the plan
    alone left a finished pool short of or beyond it."""
    manager, alice = make_manager("manager"), make_user("alice")
    others = [make_user("bob"), make_user("carol")]
    pool = make_pool(
        name="adaptive", raters=[alice, *others], strategy="mtf", budget=4, judgements_per_item=3,
        double_judge_fraction=0.375, managers=[manager],
    )  # fmt: skip
    assert not PoolItem.objects.filter(pool=pool, selected=True).exists()
    assert set(required_everywhere(manager=manager, rater=alice, pool=pool).values()) == {7}
    submit_for(assignment=lease_for(pool=pool, rater=alice), grade=2)
    selected, need = selected_need(pool)
    expected = need + round((4 - selected) * 1.75)
    assert 0 < selected < 4
    assert set(required_everywhere(manager=manager, rater=alice, pool=pool).values()) == {expected}
    api = client_for(alice).get(f"/api/judging/{pool.name}/").json()["progress"]
    assert api["fraction"] == round(1 / expected, 4)
    percent = round(100 / expected)
    assert f"pool 1 / {expected} judgements ({percent}%)" in page_text(alice, "/")
    assert f"1 / {expected} · {percent}%" in page_text(alice, f"/judge/{pool.name}/")

    for rater in [alice, *others] * 8:  # judged to the end
        assignment = lease_for(pool=pool, rater=rater)
        if assignment is not None:
            submit_for(assignment=assignment, grade=1)
    selected, need = selected_need(pool)
    assert selected == 4 and need in (4, 6, 8, 10, 12)  # whatever the draw, not the plan's 7
    assert set(required_everywhere(manager=manager, rater=alice, pool=pool).values()) == {need}
    assert client_for(manager).get(f"/api/judging/{pool.name}/").json()["progress"]["fraction"] == 1.0
    assert f"pool {need} / {need} judgements (100%)" in page_text(alice, "/")
    assert pool_dashboard(pool=pool).needed == need


def test_it_leaves_a_depth_pools_judgements_required_as_its_selected_items_need():
    """10 items of a depth pool, 2 judgements each: 20, however far judging has come."""
    manager, alice = make_manager("manager"), make_user("alice")
    pool = make_pool(name="deep", raters=[alice], judgements_per_item=2, managers=[manager])
    assert PoolItem.objects.filter(pool=pool, selected=True).count() == 10
    assert set(required_everywhere(manager=manager, rater=alice, pool=pool).values()) == {20}
    submit_for(assignment=lease_for(pool=pool, rater=alice), grade=1)
    assert set(required_everywhere(manager=manager, rater=alice, pool=pool).values()) == {20}
    assert client_for(alice).get(f"/api/judging/{pool.name}/").json()["progress"]["fraction"] == 0.05


def test_it_reads_an_adaptive_pools_plan_from_its_candidates_not_its_budget_when_fewer():
    """Budget 50 over 10 candidates: the plan judges the 10 (× 2), on the tallied path as on the pass
    (which counts the candidates up to the budget)."""
    manager, alice = make_manager("manager"), make_user("alice")
    pool = make_pool(
        name="small", raters=[alice], strategy="mtf", budget=50, judgements_per_item=2, managers=[manager]
    )
    assert set(required_everywhere(manager=manager, rater=alice, pool=pool).values()) == {20}


def test_the_refresh_of_the_judging_page_stays_one_statement_on_postgresql():
    """The plan rides in the tallied statement: the rater's refresh is still one query."""
    if connection.vendor != "postgresql":
        pytest.skip("the tallied statement is PostgreSQL's")
    from django.test.utils import CaptureQueriesContext

    alice = make_user("alice")
    pool = make_pool(name="adaptive", raters=[alice], strategy="mtf", budget=4, judgements_per_item=3)
    submit_for(assignment=lease_for(pool=pool, rater=alice), grade=2)
    with CaptureQueriesContext(connection) as queries:
        counts = live_progress(pool_name=pool.name, user=alice)
    assert counts is not None and counts["need"] == 12
    # (the test's transaction wraps it in a savepoint, which a request in autocommit does not take)
    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) == 1 and "judgements_progresstally" in statements[0]

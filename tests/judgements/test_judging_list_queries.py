"""`GET /api/judging/` (the pools a user may judge or manage) costs the same number of queries for one pool
as for six: every listed pool's progress is read in one pass for them all, the stranded items of those the
user manages in one statement, their raters prefetched — and each pool's entry is what
`GET /api/judging/<pool>/` answers for it, for a rater and for a manager."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from pooling.models import PoolItem
from tests.conftest import client_for
from tests.factories import lease_for, make_manager, make_pool, make_user, submit_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager():
    return make_manager("manager")


@pytest.fixture
def alice():
    return make_user("alice")


def make_pools(n: int, *, manager, alice, start: int = 0) -> list:
    """`n` pools alice rates and the manager manages, of either kind, with judging under way: a depth
    pool needing two judgements of its items (alice alone cannot give them: they are stranded), an
    adaptive one with a double-judged fraction; each with one judgement of alice's and one live lease."""
    pools = []
    for i in range(start, start + n):
        adaptive = {"strategy": "mtf", "budget": 4, "judgements_per_item": 3, "double_judge_fraction": 0.5}
        options = {"judgements_per_item": 2} if i % 2 else adaptive
        pool = make_pool(name=f"pool{i}", raters=[alice], managers=[manager], **options)
        first = lease_for(pool=pool, rater=alice)
        assert first is not None
        submit_for(assignment=first, grade=2)
        lease_for(pool=pool, rater=alice)
        pools.append(pool)
    return pools


def list_queries(user) -> tuple[int, list[dict]]:
    client = client_for(user)
    client.get("/api/ping/")  # (the token's first use)
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/api/judging/")
    assert response.status_code == 200
    return len(queries), response.json()["results"]


def test_it_lists_one_pool_or_six_in_the_same_number_of_queries(manager, alice):
    make_pools(1, manager=manager, alice=alice)
    few = {user.username: list_queries(user) for user in (alice, manager)}
    make_pools(5, manager=manager, alice=alice, start=1)
    many = {user.username: list_queries(user) for user in (alice, manager)}
    for username in ("alice", "manager"):
        assert (len(few[username][1]), len(many[username][1])) == (1, 6)
        assert many[username][0] == few[username][0], username


def test_each_listed_pools_figures_are_its_own_answers(manager, alice):
    pools = make_pools(4, manager=manager, alice=alice)
    for user in (alice, manager):
        client = client_for(user)
        listed = {row["pool"]: row for row in client.get("/api/judging/").json()["results"]}
        assert set(listed) == {pool.name for pool in pools}
        for pool in pools:
            assert listed[pool.name] == client.get(f"/api/judging/{pool.name}/").json()
    managed = {row["pool"]: row for row in client_for(manager).get("/api/judging/").json()["results"]}
    # the figures are not all zeros: the comparison above compared something
    assert {row["stranded"] for name, row in managed.items() if name in {"pool1", "pool3"}} == {10}
    for pool in pools:  # a depth pool: 10 items × 2; an adaptive one: its selected items' need + its plan
        selected = PoolItem.objects.filter(pool=pool, selected=True)
        need = sum(selected.values_list("required_judgements", flat=True))
        required = need + round((4 - selected.count()) * 2) if pool.adaptive else 20
        assert managed[pool.name]["progress"]["required"] == required > 0
    # the manager does not rate the pools: the figures of a rater's own are not theirs
    assert all(row["raters"] == ["alice"] and row["progress"]["mine"] is None for row in managed.values())
    rated = client_for(alice).get("/api/judging/").json()["results"]
    assert all(row["progress"]["mine"] == 1 and row["progress"]["left_for_me"] > 0 for row in rated)


def test_a_rater_lists_only_the_pools_they_rate(manager, alice):
    make_pools(2, manager=manager, alice=alice)
    make_pool(name="elsewhere", raters=[make_user("bob")], managers=[manager])
    count, rows = list_queries(alice)
    assert sorted(row["pool"] for row in rows) == ["pool0", "pool1"]
    assert all(row["raters"] is None and row["stranded"] is None for row in rows)
    _, managed = list_queries(manager)
    assert sorted(row["pool"] for row in managed) == ["elsewhere", "pool0", "pool1"]

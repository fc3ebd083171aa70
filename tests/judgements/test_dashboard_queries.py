"""The manager's dashboard reads every pool's figures in the same queries whatever the number of pools
(`dashboard.manager_dashboard`: each aggregate grouped by pool), and each pool's figures are what the
one-pool rules give it (judgement totals, the pool's share, stranded items, the adjudication queue, gold
accuracy, pace, topic counts), as the dashboard read them pool by pool."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.models import Count, Max, Q
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from judgements import adjudication, exclusions, lease_ends
from judgements.dashboard import (
    ACTIVE_WINDOW,
    EXPIRING_WITHIN,
    PoolDashboard,
    RaterLine,
    _attention,
    manager_dashboard,
    pace_per_hour,
    pool_dashboard,
    stranded,
)
from judgements.models import Assignment, Judgement, Judging
from judgements.progress import pool_share
from judgements.stats import gold_accuracy
from pooling import stats
from pooling.models import Pool, PoolItem, Topic
from tests.factories import lease_for, make_manager, make_pool, make_user, submit_for

pytestmark = pytest.mark.django_db


def judge(pool: Pool, rater: User, grade: int) -> PoolItem:
    """One judgement of `rater` on the next item they are leased in `pool`; its item."""
    lease = lease_for(pool=pool, rater=rater)
    assert lease is not None
    submit_for(assignment=lease, grade=grade)
    return PoolItem.objects.get(pk=lease.item_id)


def under_way(pool: Pool, manager: User, alice: User, bob: User) -> None:
    """Judging under way in `pool` (two judgements per item): a disputed item (3 vs 0), an agreed gold
    item both miss by 2, and a live lease of alice's about to expire."""
    judge(pool, alice, 3), judge(pool, bob, 0)
    gold = judge(pool, alice, 2)
    assert judge(pool, bob, 2) == gold
    adjudication.set_gold(item=gold, grade=0, by=manager)
    live = lease_for(pool=pool, rater=alice)
    assert live is not None
    Assignment.objects.filter(pk=live.pk).update(expires_at=timezone.now() + timedelta(minutes=1))


@pytest.fixture
def people() -> tuple[User, User, User]:
    return make_manager("boss"), make_user("alice"), make_user("bob")


@pytest.fixture
def first(people) -> Pool:
    """A depth pool, two judgements per item, under way (`under_way`)."""
    manager, alice, bob = people
    pool = make_pool(name="a-depth", raters=[alice, bob], judgements_per_item=2, managers=[manager])
    under_way(pool, manager, alice, bob)
    return pool


@pytest.fixture
def four_more(people, first) -> list[Pool]:
    """Four more pools of mixed kinds: a depth pool whose dispute is a rater's the pool excludes; an
    adaptive `mtf` pool with a budget and a double-judge fraction; a pool without judging set up; a draft
    (not built)."""
    manager, alice, bob = people
    excluded = make_pool(name="b-depth", raters=[alice, bob], judgements_per_item=2, managers=[manager])
    under_way(excluded, manager, alice, bob)
    exclusions.exclude_rater(pool=excluded, rater=bob, by=manager)
    adaptive = make_pool(
        name="c-mtf", raters=[alice, bob], strategy="mtf", budget=6, judgements_per_item=2,
        double_judge_fraction=0.5, managers=[manager],
    )  # fmt: skip
    judge(adaptive, alice, 1), judge(adaptive, bob, 2)
    unjudged = make_pool(name="d-no-judging", managers=[manager])
    Judging.objects.filter(pool=unjudged).delete()
    draft = make_pool(name="e-draft", build=False, managers=[manager])
    return [excluded, adaptive, unjudged, draft]


def page_queries(manager: User) -> tuple[int, str]:
    client = Client()
    client.force_login(manager)
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/manage/dashboard/").content.decode()
    return len(queries), page


def test_the_dashboard_costs_the_same_queries_for_one_pool_as_for_five(people, first, request):
    manager = people[0]
    one, page = page_queries(manager)
    assert page.count('class="card dashboard-pool"') == 1 and "1 item to adjudicate" in page
    request.getfixturevalue("four_more")
    five, page = page_queries(manager)
    assert page.count('class="card dashboard-pool"') == 5
    assert "judging is not set up: no rater can start" in page and "the pool is draft" in page
    assert one == five, (one, five)


def one_pool_at_a_time(pool: Pool, now: datetime) -> PoolDashboard:
    """The board of `pool` as the dashboard read it pool by pool: each figure from its one-pool rule (the
    pool's share tallied on PostgreSQL), the raters' lines from the pool's own judgements, raters and
    live leases."""
    totals = stats.judgement_totals(pool)
    judging = Judging.objects.filter(pool=pool).first()
    live = Assignment.objects.filter(pool=pool, state=Assignment.State.ACTIVE, expires_at__gt=now)
    leasing = set(live.values_list("rater_id", flat=True))
    per_rater = (
        Judgement.objects.filter(item__pool=pool)
        .values("rater_id", "rater__username")
        .annotate(n=Count("id"), last=Max("created_at", filter=Q(imported=False)))
    )
    misses = {rater: acc.n - acc.within_one for rater, acc in gold_accuracy(pool=pool).items()}
    lines = {
        row["rater_id"]: RaterLine(
            row["rater__username"],
            row["n"],
            row["last"],
            row["rater_id"] in leasing or (row["last"] is not None and row["last"] >= now - ACTIVE_WINDOW),
            misses.get(row["rater_id"], 0),
        )
        for row in per_rater
    }
    for pk, username in judging.raters.values_list("pk", "username") if judging else []:
        lines.setdefault(pk, RaterLine(username, 0, None, pk in leasing))
    raters = sorted(lines.values(), key=lambda line: line.username)
    done, needed = pool_share(pool_id=pool.pk)["done"], totals["judgements_required"]
    pace = pace_per_hour(pool=pool, now=now)
    stuck = stranded(pool=pool) if judging else {"items": 0, "judgements": 0}
    rest = max(max(needed - done, 0) - stuck["judgements"], 0)
    eta_rest = now + timedelta(hours=rest / pace) if pace and rest else None
    board = PoolDashboard(
        pool=pool,
        judging=judging is not None,
        done=done,
        needed=needed,
        items_judged=totals["judged"],
        items_selected=totals["selected"],
        topics=stats.topic_counts(pool),
        raters=raters,
        pace=pace,
        eta=None if stuck["items"] else eta_rest,
        spent=round(totals["judgements_done"] * float(pool.price_per_judgement), 2),
        estimate=totals["cost"],
        active_raters=sum(1 for line in raters if line.active),
        adjudication=adjudication.queue_rows(pool=pool).count() if judging else 0,
        expiring_leases=live.filter(expires_at__lte=now + EXPIRING_WITHIN).count(),
        gold_misses=sum(misses.values()),
        stranded=stuck["items"],
        stranded_judgements=stuck["judgements"],
        eta_rest=eta_rest,
    )
    board.attention = _attention(board)
    return board


def test_every_pools_figures_are_those_of_its_one_pool_rules(people, first, four_more):
    """Each board of the dashboard equals the pool read on its own, figure by figure; among them a pool
    with a segment whose items include a topic that left the segment since the build, and a pool whose
    only rater skipped an item (stranded)."""
    manager, alice, bob = people
    segment = make_pool(name="f-segment", segment="head", raters=[alice], managers=[manager])
    judge(segment, alice, 1)
    Topic.objects.filter(collection=segment.collection, segments=["head"]).update(segments=["tail"])
    stuck = make_pool(name="g-stuck", raters=[alice], managers=[manager])
    skipped = lease_for(pool=stuck, rater=alice)
    assert skipped is not None
    lease_ends.skip_item(assignment=skipped)
    now = timezone.now()
    boards = manager_dashboard(user=manager, now=now)
    assert [board.pool.name for board in boards] == [
        "a-depth", "b-depth", "c-mtf", "d-no-judging", "e-draft", "f-segment", "g-stuck",
    ]  # fmt: skip
    for board in boards:
        assert board == one_pool_at_a_time(board.pool, now), board.pool.name
        assert board == pool_dashboard(pool=board.pool, now=now), board.pool.name
    by_name = {board.pool.name: board for board in boards}
    # what the pools were made to show, so that the comparison compares something
    assert (by_name["a-depth"].adjudication, by_name["b-depth"].adjudication) == (1, 0)  # bob excluded
    assert by_name["a-depth"].expiring_leases == 1 and by_name["a-depth"].gold_misses == 2
    assert by_name["c-mtf"].done == 2 and by_name["c-mtf"].pace is not None
    assert not by_name["d-no-judging"].judging and by_name["d-no-judging"].raters == []
    assert by_name["e-draft"].attention[0] == "the pool is draft: build it before judging"
    assert [t.qid for t in by_name["f-segment"].topics] == ["q2"]  # left "head" since the build: its items
    assert by_name["g-stuck"].stranded == 1 and by_name["g-stuck"].eta is None

"""The manager's dashboard: the pools a manager manages with progress per topic and rater, pace, ETA,
cost against the estimate, active raters and what needs attention; only their pools, only for managers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from judgements import adjudication
from judgements.dashboard import pool_dashboard
from judgements.models import Assignment, Judgement
from pooling.models import PoolItem
from pooling.permissions import MANAGERS_GROUP
from tests.factories import lease_for, make_pool, submit_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def now():
    """The time the campaign is made at (the pages read the clock: their test must run right after)."""
    return timezone.now()


@pytest.fixture
def campaign(manager, rater, second_rater, now):
    """Pool `dash` (two judgements per item, 0.50 each): a disputed item (3 vs 0), an agreed one (2, 2)
    that is also gold with grade 0 (both raters miss it by 2), and rater's live lease about to expire.
    The four judgements were made 120, 80, 40 and 10 minutes ago."""
    pool = make_pool(
        name="dash", raters=[rater, second_rater], judgements_per_item=2, price_per_judgement=0.5
    )
    items = []
    for first, second in ((3, 0), (2, 2)):
        lease = lease_for(pool=pool, rater=rater)
        submit_for(assignment=lease, grade=first, seconds=5)
        submit_for(assignment=lease_for(pool=pool, rater=second_rater), grade=second)
        items.append(PoolItem.objects.get(pk=lease.item_id))
    adjudication.set_gold(item=items[1], grade=0, by=manager)
    made = Judgement.objects.filter(item__pool=pool).order_by("id")
    for minutes, judgement in zip((120, 80, 40, 10), made, strict=True):
        Judgement.objects.filter(pk=judgement.pk).update(created_at=now - timedelta(minutes=minutes))
    live = lease_for(pool=pool, rater=rater)
    Assignment.objects.filter(pk=live.pk).update(expires_at=now + timedelta(minutes=1))
    return pool


def test_it_measures_progress_pace_eta_cost_and_attention(campaign, now):
    board = pool_dashboard(pool=campaign, now=now)
    assert board.done == 4
    assert board.needed == 2 * PoolItem.objects.filter(pool=campaign, selected=True).count()
    assert board.pace == pytest.approx(4 / 2)  # four judgements since the first, two hours ago
    assert board.eta == now + timedelta(hours=(board.needed - 4) / 2)
    assert (board.spent, board.estimate) == (2.0, round(board.needed * 0.5, 2))
    assert board.adjudication == 1 and board.expiring_leases == 1 and board.gold_misses == 2
    assert board.attention == [
        "1 item to adjudicate",
        "1 lease expiring within 2 minutes",
        "2 gold answers more than one grade off",
    ]
    raters = {line.username: line for line in board.raters}
    assert (raters["rater"].judgements, raters["rater2"].judgements) == (2, 2)
    assert raters["rater"].active  # the live lease
    assert raters["rater2"].active  # judged 10 minutes ago
    assert raters["rater2"].gold_misses == 1 and board.active_raters == 2
    topics = {t.qid: (t.judged, t.selected) for t in board.topics}
    assert sum(judged for judged, _ in topics.values()) == 2  # two items have both their judgements


def test_without_recent_judgements_there_is_no_pace_and_no_eta(campaign, now):
    board = pool_dashboard(pool=campaign, now=now + timedelta(days=2))
    assert board.pace is None and board.eta is None and board.active_raters == 0


def test_an_imported_judgement_makes_no_rater_active(campaign, now):
    # rater2's judgement 10 minutes ago, imported from a file: not work done here (as for the pace).
    Judgement.objects.filter(item__pool=campaign, rater__username="rater2").update(imported=True)
    raters = {line.username: line for line in pool_dashboard(pool=campaign, now=now).raters}
    assert not raters["rater2"].active and raters["rater2"].judgements == 2
    assert raters["rater"].active  # the live lease


def test_the_dashboard_page_lists_only_the_managers_pools(campaign, manager):
    other = User.objects.create_user("other-manager", password="x-pass-123")
    other.groups.add(Group.objects.get(name=MANAGERS_GROUP))
    client = Client()
    client.force_login(manager)
    page = client.get("/manage/dashboard/").content.decode()
    assert 'id="pool-dash"' in page and "1 item to adjudicate" in page
    assert "4 / " in page and "2.0 judgements per hour" in page
    client.force_login(other)
    page = client.get("/manage/dashboard/").content.decode()
    assert 'id="pool-dash"' not in page and "You manage no pool yet" in page


def test_a_manager_who_rates_nothing_lands_on_the_dashboard(campaign, manager, rater):
    client = Client()
    client.force_login(manager)
    page = client.get("/").content.decode()
    assert 'id="pool-dash"' in page and "You are not a rater of any pool yet" in page
    client.force_login(rater)
    page = client.get("/").content.decode()
    assert 'id="pool-dash"' not in page and 'href="/judge/dash/"' in page


@pytest.mark.parametrize(("persona", "expected"), [("anonymous", 302), ("rater", 403), ("outsider", 403)])
def test_only_managers_may_open_the_dashboard(campaign, request, persona, expected):
    client = Client()
    if persona != "anonymous":
        client.force_login(request.getfixturevalue(persona))
    assert client.get("/manage/dashboard/").status_code == expected

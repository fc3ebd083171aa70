"""Stranded items: an item that still lacks judgements that none of the pool's current raters can give it
(each who has not judged it skipped it, or there are too few), so the rater loop never finishes it
(`PoolItem.objects.stranded`, the rule in `pooling.models`). The manager's dashboard says how many, with
what to do, and its ETA does not promise an end; `/api/judging/<pool>/` gives managers the same number."""

from __future__ import annotations

import random
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from judgements import adjudication, dashboard, exclusions, lease_ends, leasing, membership
from judgements.dashboard import pool_dashboard
from judgements.models import Assignment, Judgement
from pooling.models import Pool, PoolItem
from tests.conftest import client_for
from tests.factories import lease_for, make_collection, make_pool, make_run, make_user, submit_for

pytestmark = pytest.mark.django_db

# No "or lower the judgements per item": a built pool's are fixed (the judging form disables them).
NOTE = "cannot be completed by the current raters (skipped or already judged by all of them): add raters"


def items_pool(*, items: int, judgements: int, raters: list, **options) -> Pool:
    """A pool of `items` items of topic q1 (d000, d001, ...), `judgements` per item."""
    collection = make_collection(docs=max(items, 1), topics=("q1",))
    run = make_run(collection=collection, name="only", lists={"q1": [f"d{i:03d}" for i in range(items)]})
    return make_pool(
        collection=collection,
        runs=[run],
        depth=items,
        judgements_per_item=judgements,
        raters=raters,
        **options,
    )


def judge_all(pool: Pool, rater, *, skip: frozenset[str] = frozenset()) -> None:
    """`rater` goes through the pool as on the keyboard: a grade for every item, `s` on those in `skip`."""
    while (lease := lease_for(pool=pool, rater=rater)) is not None:
        if lease.item.document.docid in skip:
            lease_ends.skip_item(assignment=lease)
        else:
            submit_for(assignment=lease, grade=2)


def item(pool: Pool, docid: str) -> PoolItem:
    return PoolItem.objects.get(pool=pool, document__docid=docid)


def stranded_docids(pool: Pool) -> set[str]:
    return set(PoolItem.objects.stranded(pool).values_list("document__docid", flat=True))


@pytest.fixture
def ria(db):
    return make_user("ria")


@pytest.fixture
def rob(db):
    return make_user("rob")


@pytest.fixture
def rex(db):
    return make_user("rex")


@pytest.fixture
def skipped_once(manager, ria, rob):
    """The journey: 2 judgements per item, raters ria and rob; rob judges all four items, ria skips d002
    and judges the rest. Only ria could give d002 its second judgement, and she skipped it."""
    pool = items_pool(items=4, judgements=2, raters=[ria, rob], name="skipped-once")
    judge_all(pool, rob)
    judge_all(pool, ria, skip=frozenset({"d002"}))
    return pool


def dashboard_page(manager) -> str:
    client = Client()
    client.force_login(manager)
    response = client.get("/manage/dashboard/")
    assert response.status_code == 200
    return response.content.decode()


def section(page: str, pool: Pool) -> str:
    start = page.index(f'id="pool-{pool.name}"')
    return page[start : page.index("</section>", start)]


# ------------------------------------------------------------------------------------------ the journey


def test_it_finds_the_item_only_a_rater_who_skipped_it_could_complete(skipped_once, ria):
    assert leasing.lease_next(pool=skipped_once, rater=ria) is None  # "All done" for ria: a skip stays one
    assert stranded_docids(skipped_once) == {"d002"}
    assert dashboard.stranded(pool=skipped_once) == {"items": 1, "judgements": 1}


def test_the_dashboard_says_so_and_its_eta_does_not_promise_an_end(skipped_once, manager):
    now = timezone.now()
    board = pool_dashboard(pool=skipped_once, now=now)
    assert (board.done, board.needed, board.left) == (7, 8, 1)
    assert board.pace is not None  # seven judgements just now: the old ETA said "0 minutes"
    assert board.stranded == 1 and board.stranded_judgements == 1
    assert board.eta is None and board.eta_rest is None  # nothing else left that the raters can do
    assert f"1 item {NOTE}" in board.attention

    card = section(dashboard_page(manager), skipped_once)
    assert f"1 item {NOTE}" in card and "Nothing needs you" not in card
    eta = re.search(r'<td class="num eta">(.*?)</td>', card, re.S)
    assert eta is not None
    assert eta.group(1).startswith("never with the current raters")
    assert "minute" not in eta.group(1) and "done" not in eta.group(1)
    assert f'href="/pools/{skipped_once.name}/judging/">add raters</a>' in eta.group(1)


def test_the_page_shows_the_number_the_api_gives(skipped_once, manager, ria):
    card = section(dashboard_page(manager), skipped_once)
    shown = re.search(r'<span class="stranded">(\d+)</span>', card)
    noted = re.search(r"<li>(\d+) items? cannot be completed", card)
    assert shown is not None and noted is not None
    answer = client_for(manager).get(f"/api/judging/{skipped_once.name}/")
    assert answer.status_code == 200
    assert int(shown.group(1)) == int(noted.group(1)) == answer.json()["stranded"] == 1
    listed = client_for(manager).get("/api/judging/").json()["results"]
    assert [row["stranded"] for row in listed if row["pool"] == skipped_once.name] == [1]
    # raters are not told: it is the manager's to act on (as the list of raters is)
    assert client_for(ria).get(f"/api/judging/{skipped_once.name}/").json()["stranded"] is None


def test_the_eta_of_the_rest_is_given_beside_the_stranded_items(manager, ria, rob):
    pool = items_pool(items=4, judgements=2, raters=[ria, rob], name="half-way")
    judge_all(pool, ria, skip=frozenset({"d000"}))  # d000 still lacks 2 (none given): only rob can give one
    now = timezone.now()
    board = pool_dashboard(pool=pool, now=now)
    assert (board.done, board.needed, board.stranded, board.stranded_judgements) == (3, 8, 1, 2)
    assert board.pace is not None and board.eta is None
    # the rest: the three items that can be completed, each lacking rob's judgement
    assert board.eta_rest == now + timedelta(hours=(8 - 3 - 2) / board.pace)
    card = section(dashboard_page(manager), pool)
    assert "never with the current raters" in card and "; the rest " in card


def test_a_pool_its_raters_can_finish_keeps_its_eta_and_says_nothing(manager, ria, rob):
    pool = items_pool(items=4, judgements=2, raters=[ria, rob], name="fine")
    judge_all(pool, ria)
    now = timezone.now()
    board = pool_dashboard(pool=pool, now=now)
    assert board.stranded == 0 and not PoolItem.objects.stranded(pool).exists()
    assert board.pace is not None and board.eta == board.eta_rest == now + timedelta(hours=4 / board.pace)
    assert not any("cannot be completed" in note for note in board.attention)
    judge_all(pool, rob)
    board = pool_dashboard(pool=pool)
    assert board.left == 0 and board.eta is None and board.stranded == 0
    assert "never with the current raters" not in section(dashboard_page(manager), pool)


# ------------------------------------------------------------------------------------------- the rule


@pytest.mark.parametrize(("judgements", "stranded"), [(3, True), (2, False)])
def test_one_skip_of_three_raters_strands_an_item_only_when_it_needs_all_of_them(
    ria, rob, rex, judgements, stranded
):
    pool = items_pool(items=1, judgements=judgements, raters=[ria, rob, rex])
    submit_for(assignment=lease_for(pool=pool, rater=ria), grade=1)
    lease_ends.skip_item(assignment=lease_for(pool=pool, rater=rob))
    # J=3: two judgements lacking, only rex left to give one; J=2: one lacking, rex can give it
    assert stranded_docids(pool) == ({"d000"} if stranded else set())


def test_an_item_needing_more_judgements_than_there_are_raters_is_stranded(ria, rob):
    pool = items_pool(items=3, judgements=3, raters=[ria, rob])
    assert stranded_docids(pool) == {"d000", "d001", "d002"}
    assert pool_dashboard(pool=pool).stranded_judgements == 9


def test_a_rater_added_to_the_pool_completes_them(skipped_once, rex):
    assert stranded_docids(skipped_once) == {"d002"}
    membership.setup_judging(pool=skipped_once, raters=[rex])
    assert stranded_docids(skipped_once) == set()
    assert pool_dashboard(pool=skipped_once).stranded == 0
    lease = lease_for(pool=skipped_once, rater=rex)  # and the rater loop agrees: rex gets it
    assert lease is not None and lease.item.document.docid == "d002"


def test_a_rater_taken_off_the_pool_no_longer_counts(ria, rob):
    pool = items_pool(items=1, judgements=2, raters=[ria, rob])
    submit_for(assignment=lease_for(pool=pool, rater=ria), grade=1)
    assert stranded_docids(pool) == set()
    membership.remove_rater(pool=pool, rater=rob)
    assert stranded_docids(pool) == {"d000"}
    # ria's judgement still counts on the item (it lacks one, not two): `num_judgements` says so
    assert dashboard.stranded(pool=pool) == {"items": 1, "judgements": 1}


def test_a_live_lease_counts_and_an_expired_one_gives_the_rater_back(ria, rob):
    pool = items_pool(items=1, judgements=2, raters=[ria, rob])
    held = lease_for(pool=pool, rater=ria)
    assert held is not None
    assert stranded_docids(pool) == set()  # ria's live lease covers one judgement, rob can give the other
    lease_ends.skip_item(assignment=lease_for(pool=pool, rater=rob))
    # one judgement lacking beyond ria's lease, and nobody else to give it: ria holds it, rob skipped it
    assert dashboard.stranded(pool=pool) == {"items": 1, "judgements": 1}
    Assignment.objects.filter(pk=held.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    lease_ends.sweep_expired_leases()
    # two lacking now, and ria may lease it again (her lease expired), rob may not: still stranded
    assert dashboard.stranded(pool=pool) == {"items": 1, "judgements": 2}
    assert lease_for(pool=pool, rater=ria) is not None and lease_for(pool=pool, rater=rob) is None


def test_an_excluded_rater_still_counts_as_the_rater_loop_still_serves_them(ria, rob, manager):
    # Exclusion leaves a rater's labels out of releases; they still lease and judge, and their judgements
    # count on the item: so they can complete it.
    pool = items_pool(items=2, judgements=2, raters=[ria, rob])
    judge_all(pool, rob)
    first = lease_for(pool=pool, rater=ria)
    assert first is not None
    submit_for(assignment=first, grade=0)
    exclusions.exclude_rater(pool=pool, rater=ria, by=manager)
    assert stranded_docids(pool) == set()
    lease = lease_for(pool=pool, rater=ria)
    assert lease is not None
    submit_for(assignment=lease, grade=1)
    assert PoolItem.objects.filter(pool=pool).judged().count() == 2


def test_gold_items_follow_the_rule_of_every_item(manager, ria):
    # The dashboard counts a gold item like any selected item (judged when it has its judgements); served
    # on to every rater afterwards, a gold item that has them lacks nothing and is not stranded.
    pool = items_pool(items=3, judgements=1, raters=[ria])
    adjudication.set_gold(item=item(pool, "d000"), grade=2, by=manager)
    adjudication.set_gold(item=item(pool, "d001"), grade=2, by=manager)
    judge_all(pool, ria, skip=frozenset({"d001"}))
    assert stranded_docids(pool) == {"d001"}  # gold and skipped by the one rater: as any item would be
    assert item(pool, "d000").needs_judgement()  # still served, not stranded
    board = pool_dashboard(pool=pool)
    assert (board.items_judged, board.items_selected, board.stranded) == (2, 3, 1)


def test_items_an_adaptive_pool_has_not_selected_are_not_stranded(ria):
    pool = make_pool(raters=[ria], name="grows", strategy="mtf", budget=6, seed=3, judgements_per_item=2)
    selected = PoolItem.objects.filter(pool=pool, selected=True)
    assert not selected.exists() and not PoolItem.objects.stranded(pool).exists()  # none chosen yet
    assert lease_for(pool=pool, rater=ria) is not None  # the first lease asks the strategy for items
    assert 0 < selected.count() < PoolItem.objects.filter(pool=pool).count()
    # one rater, two judgements each: every selected item is stranded, the candidates not chosen are not
    assert set(PoolItem.objects.stranded(pool)) == set(selected)
    assert pool_dashboard(pool=pool).stranded == selected.count()


def test_a_pool_without_judging_set_up_says_that_instead(manager):
    pool = items_pool(items=2, judgements=1, raters=[])
    pool.judging.delete()
    pool.refresh_from_db()
    board = pool_dashboard(pool=pool)
    assert board.stranded == 0 and board.attention == ["judging is not set up: no rater can start"]


def test_it_agrees_with_the_raters_one_by_one(ria, rob, rex):
    """The set-based count against the rule spelled out per item (here only, in a test: never per item in
    the product), on a seeded mix of judgements, skips and live leases by three raters, J = 3."""
    pool = items_pool(items=12, judgements=3, raters=[ria, rob, rex])
    draw = random.Random(7)
    for rater in (ria, rob, rex):
        for _ in range(12):
            lease = lease_for(pool=pool, rater=rater)
            if lease is None:
                break
            action = draw.random()
            if action < 0.5:
                submit_for(assignment=lease, grade=draw.randint(0, 3))
            elif action < 0.85:
                lease_ends.skip_item(assignment=lease)
            else:
                break  # the lease stays live
    raters = {ria.pk, rob.pk, rex.pk}
    expected = set()
    for one in PoolItem.objects.filter(pool=pool).select_related("document"):
        taken = set(
            Assignment.objects.filter(item=one).exclude(state="expired").values_list("rater", flat=True)
        )
        taken |= set(Judgement.objects.filter(item=one).values_list("rater", flat=True))
        lacking = one.required_judgements - one.num_judgements - one.active_leases
        if lacking > len(raters - taken):
            expected.add(one.document.docid)
    assert stranded_docids(pool) == expected and 0 < len(expected) < 12


# -------------------------------------------------------------------------------------------- the cost


def test_it_is_one_query_whatever_the_pool_s_size(ria, rob, django_assert_max_num_queries):
    small = items_pool(items=1, judgements=3, raters=[ria, rob])
    large = items_pool(items=50, judgements=3, raters=[ria, rob])
    with django_assert_max_num_queries(1):
        assert PoolItem.objects.stranded(large).count() == 50
    with CaptureQueriesContext(connection) as one_item:
        assert pool_dashboard(pool=small).stranded == 1
    with django_assert_max_num_queries(len(one_item.captured_queries)):
        assert pool_dashboard(pool=large).stranded == 50

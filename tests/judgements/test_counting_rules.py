"""The counts of a pool's judging are one set of numbers wherever a manager reads them: the dashboard's
judgements done and needed are the judging API's `progress` (`judgements.progress`: an item counts at most
its required judgements, unselected items nothing), its spending and the pool page's judgements made are
the statistics API's (`pooling.stats.judgement_totals`), and the judging API's items and complete items
are the pool page's and the releases page's — whatever gold items judged by several raters, items judged
beyond their need, imported labels on unselected items, unrateable answers, skips, excluded raters or an
unbuilt pool do."""

from __future__ import annotations

import re

import pytest

from judgements import adjudication, exclusions, lease_ends
from judgements.dashboard import pool_dashboard
from judgements.imports import import_judgements
from pooling import pool_build
from pooling.models import PoolItem
from tests.conftest import client_for, page_text
from tests.factories import lease_for, make_collection, make_pool, make_run, make_user, submit_for

pytestmark = pytest.mark.django_db


def dashboard_line(manager, pool) -> tuple[int, int, int]:
    """The dashboard page's `Judgements done / needed` of `pool`: (done, needed, percent)."""
    text = page_text(manager, "/manage/dashboard/")
    section = text[text.index(f" {pool.name} ") :]
    found = re.search(r"Judgements done / needed (\d+) / (\d+) (?:\d+% )?(\d+)%", section)
    assert found is not None, section[:400]
    done, needed, percent = (int(group) for group in found.groups())
    return done, needed, percent


def pool_page_made(manager, pool) -> int:
    """The pool page's `Judgements made`."""
    found = re.search(r"Judgements made (\d+)", page_text(manager, f"/pools/{pool.name}/"))
    assert found is not None
    return int(found.group(1))


def _releases_page(manager, pool) -> str:
    return page_text(manager, f"/campaigns/{pool.name}/releases/")


def same_on_pages_and_api(manager, pool) -> dict:
    """Every count checked against its twin: the dashboard page and board against the judging API's
    progress, spending and the pool page against the statistics API; answers the board's figures."""
    api = client_for(manager)
    progress = api.get(f"/api/judging/{pool.name}/").json()["progress"]
    statistics = api.get(f"/api/pools/{pool.name}/statistics/").json()
    board = pool_dashboard(pool=pool)
    done, needed, percent = dashboard_line(manager, pool)
    assert (done, needed, percent) == (board.done, board.needed, board.percent)
    assert needed == statistics["judgements_required"]
    assert needed == progress["required"]  # an adaptive pool's plan on both (`judgements_required`)
    assert percent == round(100 * progress["fraction"])
    assert done == round(progress["fraction"] * progress["required"])
    assert board.spent == round(statistics["judgements_done"] * float(pool.price_per_judgement), 2)
    assert board.estimate == statistics["cost"]
    assert pool_page_made(manager, pool) == statistics["judgements_done"] == progress["judgements"]
    assert (progress["items"], progress["complete"]) == (statistics["selected"], statistics["judged"])
    assert (board.items_selected, board.items_judged) == (statistics["selected"], statistics["judged"])
    releases = re.search(r"(\d+) of (\d+) items have all their judgements", _releases_page(manager, pool))
    assert releases is not None
    assert (int(releases.group(1)), int(releases.group(2))) == (statistics["judged"], statistics["selected"])
    return {"board": board, "progress": progress, "statistics": statistics}


def two_item_pool(**options):
    """A depth pool of two items (q1: d001, d002), one judgement each, 0.50 a judgement."""
    collection = make_collection()
    run = make_run(collection=collection, name="only", lists={"q1": ["d001", "d002"]})
    return make_pool(collection=collection, runs=[run], price_per_judgement=0.5, **options)


def judge_gold_by_each(pool, raters, grade=2):
    """Each rater skips until served the pool's gold item, then judges it."""
    gold = PoolItem.objects.get(pool=pool, gold=True)
    for rater in raters:
        while (lease := lease_for(pool=pool, rater=rater)) is not None:
            if lease.item_id == gold.pk:
                submit_for(assignment=lease, grade=grade)
                break
            lease_ends.skip_item(assignment=lease)


def test_a_gold_item_judged_by_every_rater_does_not_fill_the_dashboard_beyond_the_api(manager):
    """A gold item is served to each of the three raters, so it needs three judgements (`NEED`: the
    raters' bars then move for it as for any other item); the three are three done of the four needed,
    on the dashboard as in the API, not three of two (150%, nothing left, "done" as the ETA), and the
    other item's judgement is still left; all three are paid for."""
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    pool = two_item_pool(raters=[alice, bob, carol])
    first = PoolItem.objects.filter(pool=pool).order_by("pk").first()
    adjudication.set_gold(item=first, grade=2, by=manager)
    judge_gold_by_each(pool, [alice, bob, carol])
    counts = same_on_pages_and_api(manager, pool)
    board = counts["board"]
    assert (board.done, board.needed, board.percent, board.left) == (3, 4, 75, 1)
    assert counts["statistics"]["judgements_done"] == 3 and board.spent == 1.5
    assert (board.items_judged, board.items_selected) == (1, 2)


def test_an_item_judged_beyond_its_need_fills_only_its_need(manager):
    """An item judged twice while gold, then no longer gold, needs one judgement: the other item's
    missing judgement is still left on the dashboard."""
    alice, bob = make_user("alice"), make_user("bob")
    pool = two_item_pool(raters=[alice, bob])
    first = PoolItem.objects.filter(pool=pool).order_by("pk").first()
    adjudication.set_gold(item=first, grade=1, by=manager)
    judge_gold_by_each(pool, [alice, bob])
    adjudication.remove_gold(item=first)
    board = same_on_pages_and_api(manager, pool)["board"]
    assert (board.done, board.needed, board.left) == (1, 2, 1)


def test_labels_imported_onto_unselected_items_count_as_made_not_as_done(manager, tmp_path):
    """An adaptive pool's unselected item judged by an import: a judgement made (and paid for), but no
    part of the judging the selected items need."""
    alice = make_user("alice")
    pool = make_pool(raters=[alice], strategy="mtf", budget=3)
    unselected = PoolItem.objects.filter(pool=pool, selected=False).select_related("topic", "document")
    item = unselected.order_by("pk").first()
    assert item is not None
    qrels = tmp_path / "old.qrels"
    qrels.write_text(f"{item.topic.qid} 0 {item.document.docid} 2\n")
    import_judgements(pool=pool, path=qrels, rater=alice)
    counts = same_on_pages_and_api(manager, pool)
    assert counts["board"].done == 0 and counts["statistics"]["judgements_done"] == 1


def test_unrateable_answers_skips_and_an_excluded_rater_count_alike_everywhere(manager):
    """An unrateable answer is a judgement made and done; a skip is neither; an excluded rater's
    judgements count in progress (only releases leave them out)."""
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(raters=[alice, bob], judgements_per_item=2)
    submit_for(assignment=lease_for(pool=pool, rater=alice), grade=None, unrateable=True)
    lease_ends.skip_item(assignment=lease_for(pool=pool, rater=alice))
    first = lease_for(pool=pool, rater=bob)
    submit_for(assignment=first, grade=3)
    exclusions.exclude_rater(pool=pool, rater=bob, by=manager, reason="test")
    counts = same_on_pages_and_api(manager, pool)
    assert counts["board"].done == 2 == counts["statistics"]["judgements_done"]
    rows = client_for(manager).get(f"/api/judging/{pool.name}/stats/").json()["results"]
    per_rater = {line.username: line.judgements for line in counts["board"].raters}
    assert per_rater == {row["rater"]: row["judgements"] for row in rows} == {"alice": 1, "bob": 1}


def test_an_unbuilt_pool_has_nothing_done_or_needed_anywhere(manager):
    pool = make_pool(raters=[make_user("alice")], build=False)
    board = same_on_pages_and_api(manager, pool)["board"]
    assert (board.done, board.needed, board.spent, board.estimate) == (0, 0, 0.0, 0.0)


def test_an_adaptive_pool_needs_after_its_build_the_judgements_its_estimate_said(manager):
    """Budget × the expected judgements per item (`pool_reads.planned_judgements`): the API's estimate
    before the build, the statistics, the pool page and the dashboard after it."""
    pool = make_pool(strategy="mtf", budget=4, judgements_per_item=3, double_judge_fraction=0.5, build=False)
    api = client_for(manager)
    estimate = api.get(f"/api/pools/{pool.name}/").json()["estimate"]
    assert estimate["judgements"] == round(4 * (1 + 2 * 0.5)) == 8
    pool_build.build_pool(pool=pool)
    pool.refresh_from_db()
    statistics = api.get(f"/api/pools/{pool.name}/statistics/").json()
    assert statistics["judgements_required"] == estimate["judgements"]
    assert (statistics["cost"], pool_dashboard(pool=pool).needed) == (estimate["cost"], 8)
    page = page_text(manager, f"/pools/{pool.name}/")
    label = r"Judgements required \(selected items' need \+ the plan for the rest of the budget\)"
    assert re.search(label + " 8 ", page)

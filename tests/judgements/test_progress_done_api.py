"""`GET /api/judging/<pool>/`'s `progress` tells the same figures as the pages once an item has more
judgements than it needs (a crowd import gave it a third of two needed): `judgements` is every judgement
made (the pool page's "Judgements made"), `done` those that count toward `required`
(`judgements.progress.pool_share`: the dashboard's and the home page's "done / needed"), and `fraction` is
done / required. The "for me" figures are null for a user who is not a rater of the pool."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from judgements import crowd_import
from pooling.models import Pool, PoolItem
from tests.conftest import client_for, page_text
from tests.factories import make_manager, make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def overjudged(tmp_path: Path) -> tuple[Pool, Any, Any]:
    """A pool needing two judgements of each of its 10 items, managed by a manager who does not rate it:
    alice and bob judged q1 d001 and d002, then a crowd import gave d001 a third judgement (w1's)."""
    manager = make_manager("manager")
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(name="over", judgements_per_item=2, raters=[alice, bob], managers=[manager])
    for rater in (alice, bob):
        judge(pool, rater, {("q1", "d001"): 2, ("q1", "d002"): 1})
    crowd = tmp_path / "crowd.tsv"
    crowd.write_text("worker\tqid\tdocid\tlabel\tseconds\nw1\tq1\td001\t3\t5\n")
    crowd_import.import_crowd_judgements(pool=pool, path=crowd, create_raters=True)
    assert PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d001").num_judgements == 3
    return pool, manager, alice


def test_it_answers_the_judgements_that_count_as_the_pages_show_them(overjudged):
    pool, manager, alice = overjudged
    progress = client_for(manager).get(f"/api/judging/{pool.name}/").json()["progress"]
    made = re.search(r"Judgements made (\d+)", page_text(manager, f"/pools/{pool.name}/"))
    board = re.search(
        r"Judgements done / needed (\d+) / (\d+) .*? (\d+)%", page_text(manager, "/manage/dashboard/")
    )
    home = re.search(r"pool (\d+) / (\d+) judgements \((\d+)%\)", page_text(alice, "/"))
    assert made is not None and board is not None and home is not None
    assert board.groups() == home.groups() == ("4", "20", "20")  # d001's third judgement fills nothing
    assert progress["judgements"] == int(made.group(1)) == 5  # every judgement made
    assert (progress["done"], progress["required"]) == (4, 20)  # the pages' done / needed
    assert progress["fraction"] == round(progress["done"] / progress["required"], 4)
    assert round(100 * progress["fraction"]) == int(board.group(3))


def test_the_for_me_figures_are_null_for_a_user_who_does_not_rate_the_pool(overjudged):
    pool, manager, alice = overjudged
    managed = client_for(manager).get(f"/api/judging/{pool.name}/").json()["progress"]
    assert (managed["mine"], managed["left_for_me"]) == (None, None)
    (listed,) = client_for(manager).get("/api/judging/").json()["results"]
    assert listed["progress"] == managed
    rated = client_for(alice).get(f"/api/judging/{pool.name}/").json()["progress"]
    left = re.search(r"(\d+) left for you · you judged (\d+)", page_text(alice, "/"))
    assert left is not None
    assert (rated["left_for_me"], rated["mine"]) == (int(left.group(1)), int(left.group(2))) == (8, 2)
    pool_figures = ("items", "complete", "required", "judgements", "done", "fraction")
    assert {key: rated[key] for key in pool_figures} == {key: managed[key] for key in pool_figures}

"""A pool's crowd workers on the manager's pages: after a crowd import that made their accounts
(`create_raters`), the rater statistics page, its API and the dashboard label each worker "crowd worker"
(only a rater taken off the pool is "removed"), count the pool's raters as its judging page does and the
crowd workers beside them, and the dashboard gives a worker's last judgement (an imported one). And
adding a rater of the pool again, on the judging page, says that they were one already."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from judgements import membership
from judgements.crowd_import import import_crowd_judgements
from judgements.dashboard import pool_dashboard
from judgements.models import Judging
from pooling.models import Pool
from tests.conftest import client_for
from tests.factories import lease_for, make_pool, make_user, submit_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

#: Two workers, two labels each.
CROWD = "worker\tqid\tdocid\tlabel\nw1\tq1\td001\t2\nw1\tq1\td002\t1\nw2\tq1\td001\t0\nw2\tq2\td010\t3\n"


@pytest.fixture
def raters(db) -> list[User]:
    return [make_user(name) for name in ("ra", "rb", "rc", "rd", "re")]


@pytest.fixture
def camp(raters, manager, tmp_path) -> Pool:
    """Pool `camp` of the manager: five raters, `ra` with one judgement; crowd workers w1 and w2, two
    labels each, imported with `create_raters` (never raters of the pool)."""
    pool = make_pool(name="camp", raters=raters, judgements_per_item=3, managers=[manager])
    lease = lease_for(pool=pool, rater=raters[0])
    assert lease is not None
    submit_for(assignment=lease, grade=2)
    path = tmp_path / "crowd.tsv"
    path.write_text(CROWD)
    assert import_crowd_judgements(pool=pool, path=path, create_raters=True).raters_created == 2
    return pool


@pytest.fixture
def browser(manager) -> Client:
    client = Client()
    client.force_login(manager)
    return client


def cell_of(page: str, username: str) -> str:
    """The text of the cell that names `username` in a rater table of `page` (with its label, if any)."""
    found = re.search(rf"<td>({re.escape(username)}(?: <span[^>]*>[^<]*</span>)?)</td>", page)
    assert found is not None, username
    return re.sub(r"<[^>]+>", "", found.group(1))


def test_it_labels_crowd_workers_as_such_on_the_rater_page_and_counts_them_apart(camp, browser):
    page = browser.get("/manage/pools/camp/").content.decode()
    assert '<p class="rater-count">5 raters, 2 crowd workers;' in page
    assert cell_of(page, "w1") == "w1 (crowd worker)" and cell_of(page, "w2") == "w2 (crowd worker)"
    assert cell_of(page, "ra") == "ra"
    assert "(removed)" not in page


def test_only_a_rater_taken_off_the_pool_is_removed(camp, browser, raters):
    membership.remove_rater(pool=camp, rater=raters[0])  # ra, who has a judgement
    page = browser.get("/manage/pools/camp/").content.decode()
    assert '<p class="rater-count">4 raters, 2 crowd workers, 1 removed rater;' in page
    assert cell_of(page, "ra") == "ra (removed)" and cell_of(page, "w1") == "w1 (crowd worker)"


def test_the_api_gives_each_row_the_standing_the_page_shows(camp, manager, raters):
    membership.remove_rater(pool=camp, rater=raters[0])
    body = client_for(manager).get("/api/judging/camp/stats/").json()
    standing = {row["rater"]: (row["member"], row["standing"]) for row in body["results"]}
    assert standing == {
        "ra": (False, "removed"),
        **dict.fromkeys(("rb", "rc", "rd", "re"), (True, "rater")),
        "w1": (False, "crowd worker"),
        "w2": (False, "crowd worker"),
    }


def test_the_dashboard_counts_raters_as_the_judging_page_and_gives_a_workers_last_judgement(camp, browser):
    board = pool_dashboard(pool=camp)
    assert str(board.headcount) == "5 raters, 2 crowd workers"
    lines = {line.username: line for line in board.raters}
    for worker in ("w1", "w2"):
        # the import's time: their labels were stored then, never made here (so never active)
        assert lines[worker].judgements == 2 and lines[worker].last is not None, worker
        assert lines[worker].standing == "crowd worker" and not lines[worker].active
    assert board.active_raters == 1  # ra's judgement, just made
    page = browser.get("/manage/dashboard/").content.decode()
    assert '<td class="num active">1 of 5</td>' in page
    assert "<summary>Per rater (5 raters, 2 crowd workers)</summary>" in page
    assert cell_of(page, "w1") == "w1 (crowd worker)"
    row = re.search(r"<tr><td>w1 .*?</tr>", page)
    assert row is not None and "<td>—</td>" not in row.group(0)
    judging_page = browser.get("/pools/camp/judging/").content.decode()
    assert '<span class="muted num-raters">(5)</span>' in judging_page


def test_adding_a_rater_of_the_pool_again_says_so_and_adds_the_others(camp, browser, manager):
    other = make_user("rf")
    make_pool(name="elsewhere", raters=[other], managers=[manager])  # rf is offered: a rater of another
    url = "/pools/camp/judging/"
    answer = browser.post(url, {"action": "add", "users": [other.pk], "username": "rb"}, follow=True)
    page = answer.content.decode()
    assert "Raters added: rf." in page
    assert "rb is already a rater of camp: not added again." in page
    assert "Raters added: rf, rb" not in page and "Raters added: rb" not in page
    assert Judging.objects.get(pool=camp).raters.count() == 6
    page = browser.post(url, {"action": "add", "username": "rb"}, follow=True).content.decode()
    assert "rb is already a rater of camp" in page and "Raters added" not in page


def test_the_service_tells_the_added_from_those_already_raters(camp, raters):
    newcomer = make_user("rg")
    done = membership.add_raters(pool=camp, raters=[raters[1], newcomer, raters[1]])
    assert (done.added, done.already) == ([newcomer], [raters[1]])
    assert done.judging.raters.count() == 6

"""The manager's rater page shows its raters a page at a time: one order of raters (`rater_statistics`',
by username) pages the statistics table, the quality table and the chart together; the count of raters
and of flagged ones, and a link to each flagged rater's page, stand above the tables; an exclusion or a
restoration returns to the page its button was on; the numbers of a rater are the API's."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.test import Client

from judgements import manager_views, paging, stats
from judgements.models import RaterExclusion
from pooling.models import Pool, PoolItem
from tests.conftest import client_for
from tests.factories import make_manager, make_pool, make_user
from tests.judgements.test_rater_names import buttons
from tests.judgements.test_releases import judge

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

#: The raters in the page's order (by username); the last one is flagged (constant), and the name is
#: one no form would take (stored before the rule, or by an admin): the page must escape it.
ODD = "zed<b>&x"
NAMES = ["ann", "bob", "cat", "dan", ODD]
URL = "/manage/pools/crowd/"


@pytest.fixture(autouse=True)
def pages_of_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manager_views, "RATER_PAGE", 2)


@pytest.fixture
def crowd(manager: User) -> dict[str, User]:
    """Pool `crowd` (10 items) of five raters: four judge two or three items each, the last every item
    with grade 0 (flagged constant: ten votes, one grade)."""
    raters = {name: make_user(name) for name in NAMES[:-1]}
    raters[ODD] = User.objects.create(username=ODD)
    pool = make_pool(name="crowd", raters=list(raters.values()), judgements_per_item=5)
    judge(pool, raters["ann"], {("q1", "d001"): 3, ("q1", "d002"): 0, ("q2", "d010"): 2})
    judge(pool, raters["bob"], {("q1", "d001"): 3, ("q1", "d002"): 1})
    judge(pool, raters["cat"], {("q1", "d001"): 2, ("q1", "d003"): None, ("q2", "d011"): 1})
    judge(pool, raters["dan"], {("q1", "d002"): 0, ("q2", "d010"): 3})
    everything = PoolItem.objects.filter(pool=pool).values_list("topic__qid", "document__docid")
    judge(pool, raters[ODD], dict.fromkeys(everything, 0))
    return raters


def browser(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def html_of(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, start: str, end: str) -> str:
    return html[html.index(start) : html.index(end, html.index(start))]


def shown(html: str) -> dict[str, list[str]]:
    """The raters of each per-rater part of the page, in its order: the statistics table, the quality
    table, the chart's bars."""
    statistics = section(html, '<table class="rater-stats">', "</table>")
    quality = section(html, '<table class="rater-quality">', "<h2>Grade distribution per rater</h2>")
    chart = section(html, "<svg", "</svg>")
    return {
        "statistics": [unescape(n) for n in re.findall(r"<tr>\s*<td>([^<]*)</td>", statistics)],
        "quality": [
            unescape(n) for n in re.findall(r'<tr class="[^"]*" id="rater-\d+">\s*<td>([^<]*)</td>', quality)
        ],
        "chart": [
            unescape(n)
            for n in re.findall(r'<g class="bar"[^>]*>\s*<title>(.*?): \d+ judgements?</title>', chart)
        ],
    }


def raters_of(html: str) -> list[str]:
    """The raters the page shows, the same in all three parts."""
    parts = shown(html)
    assert parts["statistics"] == parts["quality"] == parts["chart"], parts
    return parts["statistics"]


# ------------------------------------------------------------------------------------------------ pages


def test_it_pages_both_tables_and_the_chart_together_in_the_statistics_order(crowd, manager):
    pool = Pool.objects.get(name="crowd")
    order = [row.username for row in stats.rater_statistics(pool=pool)]
    assert order == NAMES  # by username: the order the page pages
    client = browser(manager)
    pages = [raters_of(html_of(client, f"{URL}?page={n}")) for n in (1, 2, 3)]
    assert pages == [["ann", "bob"], ["cat", "dan"], [ODD]]
    assert raters_of(html_of(client, URL)) == pages[0]
    assert raters_of(html_of(client, f"{URL}?page=99")) == pages[2]  # past the end: the last
    assert raters_of(html_of(client, f"{URL}?page=x")) == pages[0]  # not a number: the first
    second = html_of(client, f"{URL}?page=2")
    assert 'href="?page=1"' in second and 'href="?page=3"' in second and "page 2 of 3" in second
    assert "5 raters; 3–4 shown; 1 flagged by the quality report" in second


def test_the_whole_pools_figures_stay_the_whole_pools(crowd, manager):
    html = html_of(browser(manager), f"{URL}?page=3")
    assert "20 judgements" in html  # 3 + 2 + 3 + 2 + 10, though page 3 shows one rater's 10


def test_it_lists_the_flagged_raters_with_a_link_to_their_page_and_escapes_their_names(crowd, manager):
    flagged = crowd[ODD]
    html = html_of(browser(manager), URL)  # page 1: the flagged rater is on page 3
    assert ODD not in raters_of(html)
    summary = section(html, '<p class="rater-count">', "</p>")
    assert "5 raters; 1–2 shown; 1 flagged by the quality report:" in summary
    link = f'<a href="?page=3#rater-{flagged.pk}">zed&lt;b&gt;&amp;x</a>'
    assert link in summary
    assert ODD not in html  # never raw
    third = html_of(browser(manager), f"{URL}?page=3")
    row = re.search(rf'<tr class="flagged" id="rater-{flagged.pk}">\s*<td>([^<]*)</td>', third)
    assert row is not None and unescape(row.group(1)) == ODD
    assert ODD not in third


def test_an_exclusion_on_page_two_returns_to_page_two_and_a_restoration_too(crowd, manager):
    dan = crowd["dan"]
    client = browser(manager)
    exclude = buttons(html_of(client, f"{URL}?page=2"))[str(dan.pk)]
    assert exclude["page"] == "2" and exclude["action"] == f"{URL}raters/exclude/"
    response = client.post(exclude["action"], {k: v for k, v in exclude.items() if k != "action"})
    assert response.status_code == 302 and response["Location"] == f"{URL}?page=2"
    assert RaterExclusion.objects.get(restored_at__isnull=True).rater == dan
    restore = buttons(html_of(client, f"{URL}?page=2"))[str(dan.pk)]
    assert restore["action"] == f"{URL}raters/restore/" and restore["page"] == "2"
    response = client.post(restore["action"], {k: v for k, v in restore.items() if k != "action"})
    assert response.status_code == 302 and response["Location"] == f"{URL}?page=2"
    assert not RaterExclusion.objects.filter(restored_at__isnull=True).exists()


@pytest.mark.parametrize("page", ["1", "", "x", "²", "-2", "2.0", "9" * 5000])
def test_a_page_that_is_not_a_later_one_returns_to_the_bare_page(crowd, manager, page):
    response = browser(manager).post(f"{URL}raters/exclude/", {"rater": crowd["bob"].pk, "page": page})
    assert response.status_code == 302 and response["Location"] == URL


def test_one_rule_makes_the_way_back_to_a_page():
    assert paging.page_url("/x/", "3") == "/x/?page=3"
    assert [paging.page_url("/x/", p) for p in (None, "", "1", "0", "²", "٣", " 3", "3x")] == ["/x/"] * 8


def test_others_get_the_same_refusal_as_before_on_any_page(crowd, manager):
    pool = Pool.objects.get(name="crowd")
    other_manager = make_manager("elsewhere")
    make_pool(name="theirs", managers=[other_manager])
    assert not pool.managers.filter(pk=other_manager.pk).exists()
    for url in (URL, f"{URL}?page=2"):
        anonymous = browser(None).get(url)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
        assert browser(crowd["ann"]).get(url).status_code == 403
        assert browser(other_manager).get(url).status_code == 404
    body = {"rater": crowd["dan"].pk, "page": "2"}
    for who, status in ((None, 302), (crowd["ann"], 403), (other_manager, 404)):
        for action in ("exclude", "restore"):
            response = browser(who).post(f"{URL}raters/{action}/", body)
            assert response.status_code == status
            assert status != 302 or response["Location"].startswith("/accounts/login/")
    assert not RaterExclusion.objects.exists()


# --------------------------------------------------------------------------------- the API's numbers


def test_a_raters_numbers_on_page_two_are_the_apis(crowd, manager):
    html = html_of(browser(manager), f"{URL}?page=2")
    api = client_for(manager)
    statistics = {
        row["rater"]: row for row in api.get("/api/judging/crowd/stats/?limit=100").json()["results"]
    }
    quality = {row["rater"]: row for row in api.get("/api/rater-quality/crowd/").json()["raters"]}
    table = section(html, '<table class="rater-stats">', "</table>")
    for name in ("cat", "dan"):
        cells = re.search(
            rf'<tr>\s*<td>{name}</td>\s*<td class="num">(\d+)</td>\s*<td class="num">([^<]*)</td>', table
        )
        assert cells is not None
        assert int(cells.group(1)) == statistics[name]["judgements"]
        rater_id = crowd[name].pk
        row = section(html, f'id="rater-{rater_id}"', "</tr>")
        votes = re.search(rf'<td>{name}</td><td class="num">(\d+)</td>', row)
        assert votes is not None and int(votes.group(1)) == quality[name]["votes"]
    assert statistics["cat"]["unrateable"] == 1 and '1 <span class="muted">(33%)</span>' in table
    third = html_of(browser(manager), f"{URL}?page=3")
    flags = section(third, f'id="rater-{crowd[ODD].pk}"', "</tr>")
    assert re.findall(r'<strong class="warning">([^<]*)</strong>', flags) == [
        f["flag"] for f in quality[ODD]["flags"]
    ]
    assert quality[ODD]["flags"] and quality[ODD]["votes"] == 10


def test_the_adjudication_page_returns_by_the_same_rule(crowd, manager):
    """A decision's posted page goes back through the same rule: a digit that is not ASCII ('²' passes
    `str.isdigit`, then fails `int`) is no page, not a server error."""
    item = PoolItem.objects.get(pool__name="crowd", topic__qid="q1", document__docid="d001")
    url = f"{URL}adjudication/{item.pk}/"
    response = browser(manager).post(url, {"decision": "1", "page": "²"})
    assert response.status_code == 302 and response["Location"] == f"{URL}adjudication/"

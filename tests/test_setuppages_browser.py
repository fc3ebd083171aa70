"""Taking a run out of a pool in Chromium, by a pool manager who is not staff: the pool's page offers
Remove for each run, a page says what goes (unjudged items only the run contributed) and what stays
(judged items), the button takes it out, and the pool's page then shows the runs left and a row for the
items kept for their judgements, as the API's statistics count them.

Chromium and Playwright as in tests/judgements/test_browser.py (its fixtures are reused)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from pooling.models import PoolItem
from tests.browser import PASSWORD, log_in
from tests.factories import make_collection, make_manager, make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]


def test_a_manager_takes_a_run_out_of_a_pool_in_the_browser(page, live_server):  # noqa: F811
    manager = make_manager("mia", password=PASSWORD)
    rater = make_user("ray")
    collection = make_collection(name="news", managers=[manager])
    pool = make_pool(collection=collection, name="news-pool", managers=[manager], raters=[rater])
    # beta alone brought q1 d005, d006 and q2 d013; d005 is judged
    judge(pool, rater, {("q1", "d005"): 2})
    assert PoolItem.objects.filter(pool=pool).count() == 10

    log_in(page, live_server, "mia")
    page.goto(f"{live_server.url}/pools/news-pool/")
    page.get_by_role("link", name="Remove run beta").click()
    page.wait_for_url(re.compile(r"/pools/news-pool/runs/beta/remove/$"))
    statement = page.inner_text(".remove-run")
    assert "go if nobody has judged them" in statement and "judged items stay" in statement
    assert page.inner_text(".remove-run .unique") == "3"

    page.get_by_role("button", name="Remove run beta").click()
    page.wait_for_url(f"{live_server.url}/pools/news-pool/")
    expect(page.locator(".messages")).to_contain_text("2 unjudged items only it contributed removed")
    runs = page.locator("table.runs tbody tr td:first-child").all_inner_texts()
    assert runs == ["alpha", "No current run (kept for their judgements)"]
    statistics = page.request.get(f"{live_server.url}/api/pools/news-pool/statistics/").json()
    assert [run["run"] for run in statistics["runs"]] == ["alpha"]
    kept = int(page.inner_text("table.runs .kept-items"))
    assert kept == 1 and statistics["items"] == 8 == statistics["runs"][0]["contributed"] + kept
    assert page.problems == []

"""The journey in Chromium: a manager (not staff) uploads a click log of interleaved pages from the click
logs page, goes to the interleaving experiment, credits the log's pages from the compute form (first with
the wrong team names: the refusal beside the log's field, the choice kept), then with the teams the log
uses, and reads the result, the same numbers as the API's.

Chromium and Playwright as in tests/judgements/test_browser.py (its fixtures are reused)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from online import experiments
from tests.browser import PASSWORD, log_in
from tests.factories import make_collection, make_manager, make_pool, make_run
from tests.test_onlineform_compute_from_log import write_log

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]


def test_a_manager_credits_an_uploaded_click_log_from_the_interleaving_page(
    browser,  # noqa: F811
    page,  # noqa: F811
    live_server,
    tmp_path,
) -> None:
    mia = make_manager("mia", password=PASSWORD)
    news = make_collection(name="news", managers=[mia])
    runs = [
        make_run(collection=news, name="alpha", lists={"q1": ["d001", "d002", "d003"], "q2": ["d010"]}),
        make_run(collection=news, name="beta", lists={"q1": ["d003", "d001"], "q2": ["d011", "d010"]}),
    ]
    make_pool(collection=news, runs=runs, name="news-pool", managers=[mia])
    experiment = experiments.create_experiment(
        name="ab", collection=news, run_a="alpha", run_b="beta", length=4
    )
    path = write_log(tmp_path / "teamed.jsonl", rename={"A": "blue", "B": "red"})
    base = live_server.url
    log_in(page, live_server, "mia")

    page.goto(f"{base}/online/logs/upload/")
    page.select_option("select[name=collection]", label="news")
    page.fill("input[name=name]", "teamed")
    page.select_option("select[name=format]", value="jsonl")
    page.set_input_files("input[name=file]", path)
    page.get_by_role("button", name="Upload and import").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    expect(page.locator(".status")).to_have_text("done", timeout=30_000)

    page.locator("main").get_by_role("link", name="click log teamed").click()
    page.wait_for_url(re.compile(r"/online/logs/\d+/$"))
    page.locator("nav.subnav").get_by_role("link", name="Interleaving").click()
    page.locator("main").get_by_role("link", name="ab", exact=True).click()
    page.wait_for_url(f"{base}/online/interleaving/ab/")
    expect(page.get_by_text("No result yet.")).to_be_visible()
    choice = page.get_by_label("Credit the clicks of")
    choice.select_option(label="click log teamed (impressions JSONL)")
    expect(page.get_by_label("Team of A in the log")).to_have_value("A")  # the API's default
    page.get_by_role("button", name="Compute the result now").click()

    # the log's teams are blue and red: refused beside the log's field, the choice kept, nothing computed
    error = page.locator("#compute div:has(> label > select[name=click_log]) ul.errorlist")
    expect(error).to_contain_text("the log's pages have no teams 'A' and 'B'")
    expect(choice).to_have_value(str(experiment.collection.click_logs.get(name="teamed").pk))
    assert not experiment.results.exists()
    # the refused form comes back as a 400, which Chromium reports in the console: the one expected problem
    assert [p for p in page.problems if "status of 400" not in p or "/compute/" not in p] == []
    page.problems.clear()

    page.get_by_label("Team of A in the log").fill("blue")
    page.get_by_label("Team of B in the log").fill("red")
    page.get_by_role("button", name="Compute the result now").click()
    page.wait_for_url(f"{base}/online/interleaving/ab/")
    expect(page.get_by_text("from the click log news/teamed")).to_be_visible()
    answer = page.request.get(f"{base}/api/interleaving/ab/result/")
    assert answer.ok
    data = answer.json()
    assert data["source"] == "click log news/teamed" and (data["wins_a"], data["wins_b"]) == (1, 2)
    table = page.locator("main table").first
    for label, key in (("A (alpha) wins", "wins_a"), ("B (beta) wins", "wins_b"), ("Ties", "ties")):
        expect(table.locator(f"th:text-is('{label}') + td")).to_have_text(str(data[key]))
    assert page.problems == []

"""A form that sends a file says it is at work once sent (static/js/busy.js): the file goes up and is
checked before its job starts, a few seconds for a large one, with nothing else on the screen before.
Its button is disabled, so a second press does not send the file again; the upload itself goes on, and
the job's page follows. In Chromium, on the three upload pages a manager has: a collection's files, a
pool's crowd labels and a click log.

Chromium and Playwright as in tests/judgements/test_browser.py (its fixtures are reused)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from pooling.models import Job
from tests.browser import PASSWORD, log_in
from tests.factories import make_collection, make_manager, make_pool

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]

GOOD = Path(__file__).resolve().parent / "data" / "good"
BUSY = "Uploading and checking: a large file takes a few seconds…"


@pytest.mark.parametrize(
    ("path", "file_field", "button"),
    [
        ("/collections/news/", "#id_file", "Upload"),
        ("/manage/pools/news-pool/crowd/", "input[type=file]", None),
        ("/online/logs/upload/", "input[type=file]", None),
    ],
)
def test_an_upload_form_says_it_is_at_work_once_sent(page, live_server, path, file_field, button):  # noqa: F811
    manager = make_manager("mia", password=PASSWORD)
    collection = make_collection(name="news", managers=[manager])
    make_pool(collection=collection, name="news-pool", managers=[manager])
    log_in(page, live_server, "mia")
    page.goto(f"{live_server.url}{path}")
    page.set_input_files(file_field, str(GOOD / "topics.tsv"))
    if path.startswith("/online/"):  # the click log's collection and name, which the browser asks for first
        page.select_option("#id_collection", label="news")
        page.fill("#id_name", "week1")
    # the page's own handler runs first (on the document); this one, on the window, then keeps the
    # browser from leaving, so that the page can be read as it stands while a large file goes up
    page.evaluate("window.addEventListener('submit', (event) => event.preventDefault())")
    form = page.locator("form[data-busy]")
    submit = form.get_by_role("button", name=button) if button else form.locator("button[type=submit]")
    submit.click()

    expect(form.locator(".busy")).to_have_text(BUSY)
    expect(form.get_by_role("status")).to_have_text(BUSY)
    expect(submit).to_be_disabled()
    assert page.problems == []


def test_the_upload_goes_on_to_its_jobs_page(page, live_server):  # noqa: F811
    manager = make_manager("mia", password=PASSWORD)
    make_collection(name="news", managers=[manager], topics=())
    log_in(page, live_server, "mia")
    page.goto(f"{live_server.url}/collections/news/")
    page.select_option("#id_kind", "topics")
    page.set_input_files("#id_file", str(GOOD / "topics.tsv"))
    page.get_by_role("button", name="Upload").click()

    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    assert Job.objects.filter(kind=Job.Kind.TOPICS).count() == 1  # sent once
    assert page.problems == []

"""The judging page in a real browser: leaving revise with Escape brings the current item back with the
newest progress bars on screen, never the older ones the item was first shown with (which stayed until
the throttled refresh, up to JUDGE_PROGRESS_REFRESH_SECONDS later)."""

from __future__ import annotations

import pytest

from tests.browser import PASSWORD, log_in
from tests.factories import make_user
from tests.judgements.test_browser import make_browser_pool, press_and_wait_for_next, progress_shows

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]


def test_escape_from_revise_keeps_the_newest_progress(page, live_server, settings):
    settings.JUDGE_PROGRESS_REFRESH_SECONDS = 60  # no refresh of the bars within the test but the first
    rater = make_user("eve", password=PASSWORD)
    make_browser_pool(name="revise-escape", topics=1, per_topic=6, raters=[rater])
    log_in(page, live_server, "eve")
    page.goto(f"{live_server.url}/judge/revise-escape/")
    page.wait_for_selector("#judge[data-mode=item]")
    press_and_wait_for_next(page, "2")
    progress_shows(page, "1 / 6")  # the first judgement's refresh, at once
    press_and_wait_for_next(page, "1")  # its refresh waits for the interval: the bars still say 1
    assert page.inner_text("#progress-pool").startswith("1 / 6")
    current = page.inner_text("#doc-title")

    page.keyboard.press("u")
    page.wait_for_selector("#judge[data-mode=revise]")
    assert page.inner_text("#progress-pool").startswith("2 / 6")  # the revise screen's, from the server
    page.keyboard.press("Escape")
    page.wait_for_selector("#judge[data-mode=item]")
    assert page.inner_text("#doc-title") == current
    assert page.inner_text("#progress-pool").startswith("2 / 6")  # at once, not after the interval
    assert page.problems == []

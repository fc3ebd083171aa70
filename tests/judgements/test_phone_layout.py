"""The judging page on a phone (390 × 844): a document title that is one long identifier wraps instead of
pushing the page sideways, and the progress strip says what it counts."""

from __future__ import annotations

import pytest

from pooling.models import Document
from tests.browser import PASSWORD, log_in
from tests.factories import make_user
from tests.judgements.test_browser import make_browser_pool

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]

LONG_TITLE = "asyncio.AbstractEventLoop.run_in_executor_" + "with_a_name_longer_than_any_phone_" * 3


def test_a_long_title_wraps_on_a_phone_and_the_progress_says_judgements(browser, live_server):  # noqa: F811
    rater = make_user("pia", password=PASSWORD)
    pool = make_browser_pool(name="phone", topics=1, per_topic=3, raters=[rater])
    Document.objects.filter(collection=pool.collection).update(title=LONG_TITLE)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = context.new_page()
    try:
        log_in(page, live_server, "pia")
        page.get_by_role("link", name="Start judging").click()
        page.wait_for_selector("#judge[data-mode=item]")  # the script leased the first item
        assert page.inner_text("#doc-title") == LONG_TITLE
        overflow = page.evaluate(
            "() => { const t = document.querySelector('#doc-title'); const d = document.documentElement;"
            " return [d.scrollWidth, window.innerWidth, t.scrollWidth, t.clientWidth]; }"
        )
        page_width, viewport, title_width, title_box = overflow
        assert page_width <= viewport, overflow
        assert title_width <= title_box, overflow
        strip = page.inner_text("#progress")
        assert "This topic · judgements by all raters" in strip and "You judged 0 documents" in strip
    finally:
        context.close()

"""The browser tests' shared parts: Chromium (Debian's, driven by Playwright), a page that records its
script errors, the test password and logging in. tests/conftest.py makes the fixtures every test's.

Chromium comes from Debian's package (`make browser` installs it): Playwright cannot download its own
browsers here. Without it the browser tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = shutil.which("chromium")
PASSWORD = "browser-pass-123"
#: Generous bound for the test server on a shared 2-core machine; the 100 ms target is for the demo server.
KEYPRESS_BOUND_MS = 500.0
#: Longer than the page's double-tap guard (200 ms): grade keys are ignored right after a document appears.
PAUSE_MS = 260


@pytest.fixture(scope="module")
def browser() -> Iterator:
    if CHROMIUM is None:
        from tests.conftest import needs

        needs("needs Debian's chromium on PATH (make browser)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio event loop running in this thread while it is open. Django
    # then believes every ORM call the test makes (creating users and pools, reading the results back)
    # comes from async code and raises SynchronousOnlyOperation. The calls are plain synchronous code
    # between browser steps, so the check is switched off for this module only, and restored after.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.problems = []  # script errors, CSP violations and failed loads of our pages

    def on_console(message) -> None:
        # the project has no favicon (base.html is not ours): Chromium's request for it is not a problem
        if message.type == "error" and not message.location.get("url", "").endswith("/favicon.ico"):
            page.problems.append(f"console: {message.text} at {message.location.get('url')}")

    page.on("pageerror", lambda error: page.problems.append(f"pageerror: {error}"))
    page.on("console", on_console)
    yield page
    context.close()


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")

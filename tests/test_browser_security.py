"""In Chromium: the admin and the API docs work under the strict Content-Security-Policy that every response
carries (no violation reported), and /api/docs/ renders its operations with every request outside the
live server blocked (Swagger UI's files come from the project, not a CDN)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.browser import PASSWORD

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]


@pytest.fixture
def offline_page(browser, live_server):  # noqa: F811
    """A page whose requests outside the live server are aborted (and recorded), with its console errors,
    CSP violations among them, in `page.problems`."""
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.problems = []
    page.outside = []

    def route(route) -> None:
        if route.request.url.startswith(live_server.url) or route.request.url.startswith("data:"):
            route.continue_()
        else:
            page.outside.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and page.problems.append(f"console: {m.text}"))
    page.on("pageerror", lambda error: page.problems.append(f"pageerror: {error}"))
    yield page
    context.close()


def test_the_admin_works_under_the_csp(offline_page, live_server):
    page = offline_page
    User.objects.create_superuser("boss", password=PASSWORD)
    other = User.objects.create_user("someone", password=PASSWORD)
    response = page.goto(f"{live_server.url}/admin/login/")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    page.fill("input[name=username]", "boss")
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    for path in (
        "/admin/",
        "/admin/auth/user/",
        f"/admin/auth/user/{other.pk}/change/",
        "/admin/auth/user/add/",
        "/admin/pooling/pool/",
        "/admin/pooling/pool/add/",
        "/admin/judgements/rubric/add/",
    ):
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, path
        assert response.headers["content-security-policy"].startswith("default-src 'self'"), path
        page.wait_for_load_state("networkidle")
    # The admin's scripts run (they are files): the user list's select-all box ticks every row.
    page.goto(f"{live_server.url}/admin/auth/user/")
    page.check("#action-toggle")
    assert page.locator("input.action-select:checked").count() == 2
    assert page.problems == [] and page.outside == []


def test_the_api_docs_render_offline_under_the_csp(offline_page, live_server):
    page = offline_page
    response = page.goto(f"{live_server.url}/api/docs/")
    assert response.status == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock", timeout=20000)
    operations = page.locator(".opblock-summary-path")
    paths = set(operations.all_inner_texts())
    assert operations.count() > 20
    assert {"/api/auth/token/", "/api/pools/{name}/next/", "/api/assignments/{id}/judgement/"} <= {
        p.replace("\u200b", "") for p in paths
    }
    assert page.outside == [], page.outside
    assert page.problems == [], page.problems

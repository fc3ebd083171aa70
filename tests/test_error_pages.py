"""The 403, 404 and 500 pages: the site's look (its stylesheet, the data: favicon so the browser asks for
no /favicon.ico), a plain message and a way onward, with the status codes kept. The 500 page renders
without any context or query: Django gives 500.html none, and what failed may be the database."""

from __future__ import annotations

import pytest
from django.template import loader
from django.test import Client

from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db


def client_as(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def assert_site_page(html: str) -> None:
    assert '<link rel="icon" href="data:,">' in html
    assert 'href="/static/css/app.css"' in html
    assert 'href="/"' in html  # home, onward from the error


def test_it_shows_a_rater_on_a_manager_page_the_403_page_with_a_link_home(rater):
    response = client_as(rater).get("/manage/dashboard/")
    assert response.status_code == 403
    assert "403.html" in [t.name for t in response.templates]
    html = response.content.decode()
    assert_site_page(html)
    assert "Not allowed" in html and "Your account (rater)" in html
    assert "Dashboard</a>" not in html  # still the rater's own navigation


def test_it_shows_another_managers_pool_as_the_404_page():
    other = make_user("other-manager", is_staff=True)
    make_pool(name="theirs", managers=[])
    response = client_as(other).get("/pools/theirs/")
    assert response.status_code == 404
    assert "404.html" in [t.name for t in response.templates]


@pytest.mark.parametrize("persona", ["anonymous", "rater", "manager"])
def test_it_shows_an_unknown_address_as_the_404_page(request, persona):
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    response = client_as(user).get("/no-such-page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert_site_page(html)
    assert "Page not found" in html
    assert ('href="/accounts/login/?next=/no-such-page/"' in html) == (user is None)


def test_it_renders_the_500_page_when_a_view_fails(settings, monkeypatch, rater):
    settings.DEBUG = False

    def broken(user):
        raise RuntimeError("the view failed")

    monkeypatch.setattr("judgements.views.is_manager", broken)
    client = client_as(rater)
    client.raise_request_exception = False
    response = client.get("/")
    assert response.status_code == 500
    html = response.content.decode()
    assert_site_page(html)
    assert "Something went wrong" in html
    assert "the view failed" not in html


def test_it_renders_the_500_page_from_no_context_without_the_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        html = loader.get_template("500.html").render()
    assert_site_page(html)


def test_it_answers_a_bad_host_with_a_400(settings):
    """A bad Host header fails in CommonMiddleware, before the user is known, where the context processors
    of a 400.html would fail in their turn (a 500): Django's own context-free 400 page answers it."""
    settings.DEBUG = False
    client = Client(HTTP_HOST="evil.example")
    client.raise_request_exception = False
    assert client.get("/").status_code == 400

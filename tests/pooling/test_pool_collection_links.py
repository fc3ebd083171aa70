"""A pool's pages link its collection only for a user who may open the collection's page: a manager the
pool is shared with, who does not manage its collection, sees the name as plain text (the page would be
a 404 to them)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.factories import make_collection, make_manager, make_pool, make_run, make_user

COLLECTION_PAGE = 'href="/collections/news/"'


@pytest.fixture
def people(db):
    return {
        "owner": make_manager("owner"),
        "shared": make_manager("shared"),
        "admin": make_user("root", is_staff=True, is_superuser=True),
    }


@pytest.fixture
def collection(people):
    return make_collection(name="news", managers=[people["owner"]])


def client_as(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def shared_pool(people, collection, *, runs_left: bool):
    """A pool of `owner` shared with `shared`; `runs_left`: a run of the collection is not in it yet."""
    pool = make_pool(collection=collection, name="news-pool", managers=[people["owner"], people["shared"]])
    if runs_left:
        make_run(collection=collection, name="gamma", lists={"q1": ["d001", "d007"], "q2": ["d010"]})
    return pool


@pytest.mark.parametrize("runs_left", [True, False])
def test_it_shows_the_collection_as_text_to_a_manager_of_the_pool_only(people, collection, runs_left):
    shared_pool(people, collection, runs_left=runs_left)
    client = client_as(people["shared"])
    response = client.get("/pools/news-pool/runs/add/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "/collections/news/" not in html
    assert "news" in html
    assert client.get("/collections/news/").status_code == 404


@pytest.mark.parametrize("persona", ["owner", "admin"])
@pytest.mark.parametrize("runs_left", [True, False])
def test_it_links_the_collection_for_who_may_open_it(people, collection, persona, runs_left):
    shared_pool(people, collection, runs_left=runs_left)
    client = client_as(people[persona])
    html = client.get("/pools/news-pool/runs/add/").content.decode()
    assert COLLECTION_PAGE in html
    assert client.get("/collections/news/").status_code == 200

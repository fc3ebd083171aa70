"""Every list endpoint pages with `?limit=&offset=`, and no number in them reaches the database unbounded."""

from __future__ import annotations

import pytest

from labeling.api_urls import router
from labeling.pagination import Pagination
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run

HUGE = str(2**63)


def list_urls() -> list[str]:
    """The list route of every viewset in the router (`/api/<prefix>/`)."""
    return [f"/api/{prefix}/" for prefix, viewset, _ in router.registry if hasattr(viewset, "list")]


@pytest.fixture
def some_data(rater):
    collection = make_collection(name="news", docs=12)
    run = make_run(collection=collection, name="bm25", lists={"q1": ["d001", "d002"], "q2": ["d003"]})
    return make_pool(collection=collection, runs=[run], name="p1", raters=[rater])


@pytest.mark.django_db
def test_it_cuts_a_huge_limit_to_max_limit_on_every_list_endpoint(admin_user, some_data):
    api = client_for(admin_user)
    urls = list_urls()
    assert "/api/documents/" in urls and len(urls) > 5
    for url in urls:
        response = api.get(f"{url}?limit={HUGE}")
        assert response.status_code < 500, (url, response.status_code)
    page = api.get(f"/api/documents/?limit={HUGE}").json()
    assert len(page["results"]) == 12
    assert Pagination.max_limit == 1000


@pytest.mark.django_db
def test_it_refuses_a_huge_offset_with_400_naming_it(admin_user, some_data):
    api = client_for(admin_user)
    for url in list_urls():
        response = api.get(f"{url}?offset={HUGE}")
        assert response.status_code < 500, (url, response.status_code)
    response = api.get(f"/api/documents/?offset={HUGE}")
    assert response.status_code == 400 and "offset" in response.json()
    assert api.get("/api/documents/?offset=11").json()["results"][0]["docid"] == "d011"

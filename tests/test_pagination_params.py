"""A list's `?limit=` and `?offset=` that are not whole numbers in their range are a 400 naming the
parameter, on every list endpoint (never the first page as if nothing was asked); `?state=` of the rater's
assignments is one of the states its schema lists."""

from __future__ import annotations

import pytest

from labeling.pagination import Pagination
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run
from tests.test_pagination import list_urls

pytestmark = pytest.mark.django_db


@pytest.fixture
def some_data(rater):
    collection = make_collection(name="news", docs=12)
    run = make_run(collection=collection, name="bm25", lists={"q1": ["d001", "d002"], "q2": ["d003"]})
    return make_pool(collection=collection, runs=[run], name="p1", raters=[rater])


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("limit=abc", "limit"),
        ("limit=-1", "limit"),
        ("limit=0", "limit"),
        ("limit=1.5", "limit"),
        ("limit=%C2%B2", "limit"),  # '²' is a digit to str.isdigit
        ("limit=1e3", "limit"),
        ("offset=-5", "offset"),
        ("offset=abc", "offset"),
        ("offset=2.0", "offset"),
        (f"offset={Pagination.MAX_OFFSET + 1}", "offset"),
        ("offset=" + "9" * 5000, "offset"),
        ("offset=-" + "9" * 5000, "offset"),
        ("limit=-" + "9" * 5000, "limit"),
    ],
)
def test_a_bad_limit_or_offset_is_a_400_naming_it(admin_user, some_data, query, name):
    answer = client_for(admin_user).get(f"/api/documents/?{query}")
    assert answer.status_code == 400, answer.content
    assert list(answer.json()) == [name]


def test_every_paged_list_endpoint_refuses_them(admin_user, some_data):
    api = client_for(admin_user)
    paged = [
        url
        for url in list_urls()
        if "(" not in url and "results" in api.get(url).json()  # a prefix with a parameter; a list unpaged
    ]
    assert "/api/documents/" in paged and len(paged) > 5
    for url in paged:
        for query, name in (("limit=abc", "limit"), ("offset=-5", "offset")):
            answer = api.get(f"{url}?{query}")
            assert answer.status_code == 400 and name in answer.json(), (url, query, answer.status_code)


@pytest.mark.parametrize(
    ("query", "count", "first"),
    [
        ("", 12, "d000"),
        ("limit=&offset=", 12, "d000"),  # blank: as if not given
        ("limit=5", 5, "d000"),
        ("limit=%205%20&offset=%203", 5, "d003"),
        ("limit=" + "9" * 5000, 12, "d000"),  # a huge limit is cut to max_limit, as before
        ("offset=11", 1, "d011"),
        ("offset=0&limit=1", 1, "d000"),
    ],
)
def test_good_ones_page_as_before(admin_user, some_data, query, count, first):
    page = client_for(admin_user).get(f"/api/documents/?{query}").json()
    assert len(page["results"]) == count and page["results"][0]["docid"] == first


def test_an_assignment_state_outside_the_enum_is_a_400(rater, some_data):
    api = client_for(rater)
    api.post("/api/pools/p1/next/")
    answer = api.get("/api/assignments/?state=bogus")
    assert answer.status_code == 400 and "state" in answer.json()
    assert len(api.get("/api/assignments/").json()["results"]) == 1
    assert len(api.get("/api/assignments/?state=active").json()["results"]) == 1
    assert api.get("/api/assignments/?state=done").json()["results"] == []
    schema = api.get("/api/schema/?format=json").json()
    parameters = schema["paths"]["/api/assignments/"]["get"]["parameters"]
    enum = next(p["schema"]["enum"] for p in parameters if p["name"] == "state")
    for state in enum:
        assert api.get(f"/api/assignments/?state={state}").status_code == 200, state

"""Editing a pool's description and instructions once it is made: the service (`pool_text.edit_pool_text`),
the API's PATCH and the pool's "Edit" page. Only the texts change; any other field is refused, naming it,
and the pool's selection stays as made. Only the pool's managers: another manager is told it does not exist
(404), a rater is refused (403). The instructions are raters' text: held to the rule a new pool's are, and
escaped where raters read them."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.urls import reverse

from pooling import pool_text
from pooling.errors import PoolError
from pooling.models import Pool, PoolItem
from tests.conftest import client_for
from tests.factories import make_collection, make_pool
from tests.judgements.test_releases import judge
from tests.pooling import test_manage_pages as manage_pages

pytestmark = pytest.mark.django_db

URL = "/api/pools/news-pool/"
PAGE = "/pools/news-pool/edit/"
TEXTS = {"description", "instructions"}


# the manager pages' tests' people (owner, other manager, rater, admin) and their logged-in client
people = manage_pages.people
client_as = manage_pages.client_as


@pytest.fixture
def pool(people: dict[str, User]) -> Pool:
    """A built pool of `owner`, judged by `rater`, with a description and instructions."""
    collection = make_collection(name="news", managers=[people["owner"]])
    pool = make_pool(
        collection=collection,
        name="news-pool",
        managers=[people["owner"]],
        raters=[people["rater"]],
        description="first description",
        instructions="first instructions",
    )
    return pool


def selection(pool: Pool) -> dict[str, Any]:
    """Everything about the pool but its texts, as stored."""
    row = {k: v for k, v in Pool.objects.filter(pk=pool.pk).values().get().items() if k not in TEXTS}
    runs = sorted(pool.runs.values_list("name", flat=True))
    return {**row, "runs": runs, "items": PoolItem.objects.filter(pool=pool).count()}


# ------------------------------------------------------------------------------------------ the service


def test_it_changes_only_the_texts_given(pool: Pool) -> None:
    before = selection(pool)
    pool_text.edit_pool_text(pool=pool, instructions="judge the answer, not the style")
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("first description", "judge the answer, not the style")
    assert selection(pool) == before


def test_it_holds_an_edit_to_the_rule_a_new_pool_is_held_to(pool: Pool, monkeypatch: Any) -> None:
    """One rule for the texts (`text_problems`, the columns'): what refuses a new pool's instructions
    refuses an edit of them, and nothing is stored."""
    monkeypatch.setattr(
        pool_text, "column_problems", lambda model, column, value: ["too long"] if len(value) > 5 else []
    )
    with pytest.raises(PoolError) as refused:
        pool_text.edit_pool_text(pool=pool, instructions="far too long")
    assert refused.value.fields == {"instructions": ["instructions: too long"]}
    pool.refresh_from_db()
    assert pool.instructions == "first instructions"
    from pooling import pool_build

    with pytest.raises(PoolError) as created:
        pool_build.create_pool(
            name="fresh", collection=pool.collection, runs=list(pool.runs.all()), instructions="far too long"
        )
    assert created.value.fields == {"instructions": ["instructions: too long"]}


# ----------------------------------------------------------------------------------------------- the API


def test_it_edits_the_description_and_instructions_by_patch(pool: Pool, people: dict[str, User]) -> None:
    before = selection(pool)
    answer = client_for(people["owner"]).patch(
        URL, {"description": "for managers", "instructions": "read the whole page"}, format="json"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert (body["description"], body["instructions"]) == ("for managers", "read the whole page")
    assert body["name"] == "news-pool" and "estimate" in body  # the pool's own body, as GET answers it
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("for managers", "read the whole page")
    assert selection(pool) == before


def test_it_leaves_a_text_not_given_as_it_was(pool: Pool, people: dict[str, User]) -> None:
    answer = client_for(people["owner"]).patch(URL, {"description": ""}, format="json")
    assert answer.status_code == 200
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("", "first instructions")


def test_it_edits_a_pool_already_judged(pool: Pool, people: dict[str, User]) -> None:
    judge(pool, people["rater"], {("q1", "d001"): 1})
    answer = client_for(people["owner"]).patch(URL, {"instructions": "new"}, format="json")
    assert answer.status_code == 200
    pool.refresh_from_db()
    assert pool.instructions == "new"


@pytest.mark.parametrize(
    "given", [{"depth": 3}, {"strategy": "mtf"}, {"runs": ["alpha"]}, {"name": "renamed"}]
)
def test_it_refuses_any_other_field_naming_it_and_changes_nothing(
    pool: Pool, people: dict[str, User], given: dict[str, Any]
) -> None:
    before = selection(pool)
    answer = client_for(people["owner"]).patch(URL, {"description": "changed", **given}, format="json")
    assert answer.status_code == 400
    (field,) = given
    assert list(answer.json()) == [field]
    message = answer.json()[field][0]
    assert message.startswith(f"{field} cannot change once a pool is made")
    assert "delete the pool (if nobody has judged it) and make it again, or add or remove runs" in message
    pool.refresh_from_db()
    assert pool.description == "first description"
    assert selection(pool) == before


def test_it_refuses_a_nul_in_the_instructions_as_creating_a_pool_does(
    pool: Pool, people: dict[str, User]
) -> None:
    api = client_for(people["owner"])
    edited = api.patch(URL, {"instructions": "a\x00b"}, format="json")
    created = api.post(
        "/api/pools/",
        {"name": "fresh", "collection": "news", "runs": ["alpha"], "instructions": "a\x00b"},
        format="json",
    )
    assert edited.status_code == created.status_code == 400
    assert edited.json() == created.json()
    pool.refresh_from_db()
    assert pool.instructions == "first instructions"


def test_it_has_no_put(pool: Pool, people: dict[str, User]) -> None:
    answer = client_for(people["owner"]).put(URL, {"description": "x"}, format="json")
    assert answer.status_code == 405


@pytest.mark.parametrize("who, expected", [("other", 404), ("rater", 403), ("admin", 200)])
def test_it_lets_only_the_pools_managers_patch(
    pool: Pool, people: dict[str, User], who: str, expected: int
) -> None:
    answer = client_for(people[who]).patch(URL, {"description": "theirs"}, format="json")
    assert answer.status_code == expected
    pool.refresh_from_db()
    assert pool.description == ("theirs" if expected == 200 else "first description")


def test_it_asks_an_anonymous_caller_to_authenticate(pool: Pool) -> None:
    assert client_for(None).patch(URL, {"description": "x"}, format="json").status_code == 401


# ------------------------------------------------------------------------------------------------ the page


def test_it_links_the_edit_page_from_the_pool_page(pool: Pool, people: dict[str, User]) -> None:
    page = client_as(people["owner"]).get(reverse("pooling:pool-detail", args=["news-pool"]))
    assert f'href="{PAGE}"' in page.content.decode()


def test_it_shows_the_current_texts_on_the_edit_page(pool: Pool, people: dict[str, User]) -> None:
    page = client_as(people["owner"]).get(PAGE)
    assert page.status_code == 200
    form = page.context["form"]
    assert set(form.fields) == {"description", "instructions"}
    body = page.content.decode()
    assert ">\nfirst description</textarea>" in body and ">\nfirst instructions</textarea>" in body


def test_it_saves_the_texts_and_goes_back_to_the_pool_page(pool: Pool, people: dict[str, User]) -> None:
    before = selection(pool)
    answer = client_as(people["owner"]).post(
        PAGE, {"description": "for us", "instructions": "line one\nline two"}
    )
    assert answer.status_code == 302
    assert answer["Location"] == reverse("pooling:pool-detail", args=["news-pool"])
    assert [str(m) for m in get_messages(answer.wsgi_request)] == [
        "Pool news-pool: description and instructions saved."
    ]
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("for us", "line one\nline two")
    assert selection(pool) == before


def test_it_shows_a_refusal_beside_its_field_and_saves_nothing(
    pool: Pool, people: dict[str, User], monkeypatch: Any
) -> None:
    monkeypatch.setattr(
        pool_text, "column_problems", lambda model, column, value: ["too long"] if len(value) > 5 else []
    )
    page = client_as(people["owner"]).post(PAGE, {"description": "ok", "instructions": "far too long"})
    assert page.status_code == 200
    assert page.context["form"].errors == {"instructions": ["instructions: too long"]}
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("first description", "first instructions")


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("who, expected", [("other", 404), ("rater", 403), ("admin", None)])
def test_it_lets_only_the_pools_managers_open_the_edit_page(
    pool: Pool, people: dict[str, User], method: str, who: str, expected: int | None
) -> None:
    client = client_as(people[who])
    data = {"description": "theirs", "instructions": "theirs"}
    answer = client.get(PAGE) if method == "get" else client.post(PAGE, data)
    assert answer.status_code == (expected or (200 if method == "get" else 302))
    pool.refresh_from_db()
    assert pool.description == ("theirs" if who == "admin" and method == "post" else "first description")


def test_it_sends_an_anonymous_visitor_to_log_in(pool: Pool) -> None:
    answer = client_as(None).get(PAGE)
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")


def test_it_shows_raters_the_edited_instructions_escaped(pool: Pool, people: dict[str, User]) -> None:
    """The instructions are raters' text, stored as given: the judging page escapes them (the rule of
    every text shown), a line break becoming <br>."""
    client_as(people["owner"]).post(
        PAGE, {"description": "", "instructions": "<script>alert(1)</script>\nread <b>all</b>"}
    )
    pool.refresh_from_db()
    assert pool.instructions == "<script>alert(1)</script>\nread <b>all</b>"
    page = client_as(people["rater"]).get(reverse("judgements:judge", args=["news-pool"]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;<br>read &lt;b&gt;all&lt;/b&gt;" in body
    assert "<script>alert(1)" not in body and "<b>all</b>" not in body


def test_it_says_a_field_a_pool_does_not_have_is_none_of_its_fields(
    pool: Pool, people: dict[str, User]
) -> None:
    answer = client_for(people["owner"]).patch(URL, {"descripton": "typo"}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {
        "descripton": ["a pool has no field 'descripton': only description and instructions are edited"]
    }
    pool.refresh_from_db()
    assert pool.description == "first description"

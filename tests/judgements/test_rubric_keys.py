"""A rubric's keys, compared as the judging page reads them: in either case. No grade key and no
unrateable key may be one of the page's own keys (u revise, s skip, n note) in any case, nor may two of
them be the same key ignoring case; the API and the manager's page refuse each such rubric with the same
message, on the field it is about, and store nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from judgements import rubrics
from judgements.models import Rubric
from tests.conftest import client_for
from tests.factories import make_manager
from tests.judgements.test_rubric_pages import NEW, api_messages, client_as, form_data

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


@pytest.fixture
def manager_user(db) -> User:
    return make_manager("key-manager")


def grades_of(*keys: str) -> list[dict[str, Any]]:
    """One grade a key, highest value first."""
    return [{"value": len(keys) - n, "key": key, "label": f"grade {key}"} for n, key in enumerate(keys)]


def grades_text(*keys: str) -> str:
    return "\n".join(f"{g['value']} {g['key']} {g['label']}" for g in grades_of(*keys))


# (grade keys, unrateable key, the field refused, words the message must hold)
CLASHES = {
    "reserved keys in upper case": (("U", "S", "N"), "x", "grades", ["'U'", "u (revise)", "'S'", "'N'"]),
    "a reserved key beside a digit": (("0", "U"), "x", "grades", ["'U'", "u (revise)", "are reserved"]),
    "a reserved unrateable key": (("1", "0"), "s", "unrateable_key", ["'s'", "s (skip)"]),
    "a reserved unrateable key in upper case": (("1", "0"), "N", "unrateable_key", ["'N'", "n (note)"]),
    "the unrateable key a grade key in another case": (("x", "y"), "X", "grades", ["'X'", "'x'"]),
    "two grade keys the same in another case": (("a", "A"), "x", "grades", ["'A'", "'a'", "same key"]),
}


@pytest.mark.parametrize("case", list(CLASHES))
def test_it_refuses_a_clash_of_keys_whatever_their_case_in_the_api(manager_user, case):
    keys, unrateable, field, words = CLASHES[case]
    body = {"name": "keys", "grades": grades_of(*keys), "unrateable_key": unrateable}
    answer = client_for(manager_user).post("/api/rubrics/", body, format="json")
    assert answer.status_code == 400, answer.json()
    assert list(answer.json()) == [field]
    message = answer.json()[field][0]
    assert all(word in message for word in words), message
    assert not Rubric.objects.filter(name="keys").exists()


@pytest.mark.parametrize("case", list(CLASHES))
def test_the_page_refuses_a_clash_of_keys_with_the_apis_message(manager_user, case):
    keys, unrateable, field, _words = CLASHES[case]
    body = {"name": "keys", "grades": grades_of(*keys), "unrateable_key": unrateable}
    api = client_for(manager_user).post("/api/rubrics/", body, format="json")
    answer = client_as(manager_user).post(
        NEW, form_data(name="keys", grades=grades_text(*keys), unrateable_key=unrateable)
    )
    assert answer.status_code == 200
    shown = answer.context["form"].errors.get(field, [])
    expected = api_messages(api.json()[field])
    assert expected and shown == expected, (shown, expected)
    assert not Rubric.objects.filter(name="keys").exists()


def test_it_refuses_a_clash_made_by_allowing_unrateable_later(manager_user):
    """The unrateable key is a key on the page only while raters may mark a document unrateable: a
    rubric without it may use its key for a grade, until unrateable is allowed."""
    api = client_for(manager_user)
    made = api.post(
        "/api/rubrics/",
        {"name": "keys", "grades": grades_of("X", "y"), "allow_unrateable": False},
        format="json",
    )
    assert made.status_code == 201, made.json()
    answer = api.patch(f"/api/rubrics/{made.json()['id']}/", {"allow_unrateable": True}, format="json")
    assert answer.status_code == 400 and "also grade key 'X'" in answer.json()["grades"][0]
    assert Rubric.objects.get(name="keys").allow_unrateable is False


def test_it_keeps_accepting_the_default_scale_and_keys_that_differ():
    assert rubrics.default_rubric().labels
    rubric = rubrics.create_rubric(name="letters", grades=grades_of("a", "B", "c"), unrateable_key="Z")
    assert sorted(rubric.grades.values_list("key", flat=True)) == ["B", "a", "c"]


def test_a_facet_choice_given_twice_is_refused_on_the_api_and_the_page(manager_user):
    """A choice twice in one facet would be two keys on the page for one answer."""
    facets = [{"name": "fresh", "label": "Fresh", "choices": ["a", "b", "a"]}]
    body = {"name": "twice", "grades": grades_of("1", "0"), "facets": facets}
    answer = client_for(manager_user).post("/api/rubrics/", body, format="json")
    assert answer.status_code == 400
    assert "facet 'fresh': choices given twice: 'a'" in str(answer.json()["facets"])
    page = client_as(manager_user).post(
        NEW, form_data(name="twice", grades=grades_text("1", "0"), facets="fresh: a, b, a")
    )
    assert page.status_code == 200 and "choices given twice" in page.content.decode()
    assert not Rubric.objects.filter(name="twice").exists()

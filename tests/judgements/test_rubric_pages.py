"""The manager's rubric pages: a rubric made in the browser is the rubric the API returns; the page refuses
what `POST /api/rubrics/` refuses, with the API's messages beside the field (and the line they are on),
storing nothing; back to the judging set-up page it came from (a local `next` only); managers only."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from judgements import rubrics
from judgements.models import Rubric
from tests.browser import PASSWORD, log_in
from tests.conftest import client_for
from tests.factories import make_manager, make_pool, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

NEW = "/rubrics/new/"
GRADES = "3 h Highly relevant: the whole answer: nothing missing\n\n1 m Marginal\n0 z Not relevant: off topic"
FACETS = "freshness (How fresh): current, dated, unknown (required)\nsource: primary, secondary"


@pytest.fixture
def manager_user(db) -> User:
    return make_manager("rubric-manager")


def client_as(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def form_data(**fields: Any) -> dict[str, Any]:
    data = {"name": "graded", "description": "", "allow_unrateable": "on", "unrateable_key": "x"}
    data.update({"grades": GRADES, "facets": ""}, **fields)
    return {key: value for key, value in data.items() if value is not None}


def api_messages(body: Any) -> list[str]:
    """Every message string of an API error body, however nested."""
    if isinstance(body, dict):
        return [message for value in body.values() for message in api_messages(value)]
    if isinstance(body, list):
        return [message for value in body for message in api_messages(value)]
    return [str(body)]


def test_it_creates_the_rubric_the_api_returns(manager_user):
    response = client_as(manager_user).post(
        NEW, form_data(description="Three grades.", grades=GRADES, facets=FACETS)
    )
    rubric = Rubric.objects.get(name="graded")
    assert response.status_code == 302 and response["Location"] == f"/rubrics/{rubric.pk}/"
    shown = client_for(manager_user).get(f"/api/rubrics/{rubric.pk}/").json()
    assert {key: shown[key] for key in ("name", "version", "description", "allow_unrateable")} == {
        "name": "graded", "version": 1, "description": "Three grades.", "allow_unrateable": True,
    }  # fmt: skip
    assert shown["grades"] == [
        {
            "value": 3,
            "label": "Highly relevant",
            "description": "the whole answer: nothing missing",
            "key": "h",
        },
        {"value": 1, "label": "Marginal", "description": "", "key": "m"},
        {"value": 0, "label": "Not relevant", "description": "off topic", "key": "z"},
    ]
    assert shown["facets"] == [
        {
            "name": "freshness",
            "label": "How fresh",
            "choices": ["current", "dated", "unknown"],
            "required": True,
        },
        {"name": "source", "label": "source", "choices": ["primary", "secondary"], "required": False},
    ]
    # the same rubric written to the API directly reads back the same
    body = {
        key: shown[key] for key in ("description", "allow_unrateable", "unrateable_key", "grades", "facets")
    }
    twin = client_for(manager_user).post("/api/rubrics/", {"name": "twin", **body}, format="json").json()
    assert {key: twin[key] for key in body} == body


def test_it_offers_the_default_scale_and_saves_it_unchanged(manager_user):
    client = client_as(manager_user)
    form = client.get(NEW).context["form"]
    initial = {name: form[name].value() for name in ("grades", "facets", "unrateable_key")}
    assert "3 3 Perfect: Highly relevant" in initial["grades"]
    client.post(NEW, form_data(**initial))
    saved = rubrics.rubric_values(Rubric.objects.get(name="graded"))
    assert saved["grades"] == sorted(rubrics.DEFAULT_GRADES, key=lambda g: -g["value"])


def test_it_starts_a_next_version_from_a_rubric(manager_user):
    first = rubrics.create_rubric(
        name="fresh",
        grades=[{"value": 1, "key": "y", "label": "Yes", "description": "on topic"},
                {"value": 0, "key": "q", "label": "No"}],
        facets=[{"name": "tone", "label": "Tone", "choices": ["calm", "loud"], "required": True}],
    )  # fmt: skip
    client = client_as(manager_user)
    form = client.get(f"{NEW}?from={first.pk}").context["form"]
    data = {
        name: form[name].value() for name in ("name", "description", "grades", "facets", "unrateable_key")
    }
    client.post(NEW, form_data(**data))
    second = Rubric.objects.get(name="fresh", version=2)
    values = rubrics.rubric_values(second)
    assert {k: values[k] for k in ("grades", "facets")} == {
        k: v for k, v in rubrics.rubric_values(first).items() if k in ("grades", "facets")
    }


# (page fields, the same rubric as the API's JSON body, the field the message is about)
REFUSALS = {
    "duplicate keys": (
        {"grades": "3 a Good\n2 a Fair"},
        {"grades": [{"value": 3, "key": "a", "label": "Good"}, {"value": 2, "key": "a", "label": "Fair"}]},
        "grades",
    ),
    "value over the top": (
        {"grades": "3 a Good\n101 b Too high"},
        {
            "grades": [
                {"value": 3, "key": "a", "label": "Good"},
                {"value": 101, "key": "b", "label": "Too high"},
            ]
        },
        "grades",
    ),
    "negative value": (
        {"grades": "-1 a Below"},
        {"grades": [{"value": -1, "key": "a", "label": "Below"}]},
        "grades",
    ),
    "value not a number": (
        {"grades": "three a Good"},
        {"grades": [{"value": "three", "key": "a", "label": "Good"}]},
        "grades",
    ),
    "reserved key": (
        {"grades": "1 s Skip me"},
        {"grades": [{"value": 1, "key": "s", "label": "Skip me"}]},
        "grades",
    ),
    "unrateable key is a grade key": (
        {"grades": "1 x Yes\n0 y No"},
        {"grades": [{"value": 1, "key": "x", "label": "Yes"}, {"value": 0, "key": "y", "label": "No"}]},
        "grades",
    ),
    "over-long label": (
        {"grades": f"1 a {'L' * 101}"},
        {"grades": [{"value": 1, "key": "a", "label": "L" * 101}]},
        "grades",
    ),
    "duplicate facet names": (
        {"facets": "tone: calm, loud\ntone: soft"},
        {"facets": [{"name": "tone", "choices": ["calm", "loud"]}, {"name": "tone", "choices": ["soft"]}]},
        "facets",
    ),
    "facet name not a slug": (
        {"facets": "the tone: calm"},
        {"facets": [{"name": "the tone", "choices": ["calm"]}]},
        "facets",
    ),
    "blank name": ({"name": ""}, {"name": ""}, "name"),
    "long unrateable key": ({"unrateable_key": "xy"}, {"unrateable_key": "xy"}, "unrateable_key"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_it_refuses_what_the_api_refuses_with_the_same_message(manager_user, case):
    fields, body, field = REFUSALS[case]
    before = Rubric.objects.count()
    api = client_for(manager_user).post("/api/rubrics/", {"name": "graded", **body}, format="json")
    answer = client_as(manager_user).post(NEW, form_data(**fields))
    assert api.status_code == 400 and answer.status_code == 200
    shown = answer.context["form"].errors.get(field, [])
    expected = api_messages(api.json()[field])
    assert expected and all(any(message in error for error in shown) for message in expected), (
        shown,
        expected,
    )
    assert Rubric.objects.count() == before


def test_it_gives_the_default_scale_for_no_grades_as_the_api_does(manager_user):
    api = client_for(manager_user).post("/api/rubrics/", {"name": "api-empty", "grades": []}, format="json")
    client_as(manager_user).post(NEW, form_data(name="page-empty", grades=""))
    made = rubrics.rubric_values(Rubric.objects.get(name="page-empty"))
    assert api.status_code == 201 and made["grades"] == api.json()["grades"]
    assert [g["value"] for g in made["grades"]] == [3, 2, 1, 0]


@pytest.mark.parametrize(
    ("fields", "field", "error"),
    [
        ({"grades": "3 a Good\n\njust-one-word"}, "grades", "line 3: write a grade as VALUE KEY LABEL"),
        ({"grades": "3 a Good\n\n200 b High"}, "grades", "line 3: value: Ensure this value is less than"),
        ({"grades": f"3 a Good\n2 b {'L' * 101}"}, "grades", "line 2: label: Ensure this field has no more"),
        ({"facets": "tone: calm\nno colon here"}, "facets", "line 2: write a facet as NAME"),
        ({"facets": "tone: calm\n\nkind: a, , b"}, "facets", "line 3: choices: choice 2: This field may not"),
    ],
)
def test_it_names_the_line_of_an_error(manager_user, fields, field, error):
    errors = client_as(manager_user).post(NEW, form_data(**fields)).context["form"].errors
    assert any(e.startswith(error) for e in errors[field]), errors
    assert not Rubric.objects.exists()


def test_it_goes_back_to_the_judging_set_up_with_the_new_rubric_chosen(manager_user):
    make_pool(name="setup-me", managers=[manager_user])
    client = client_as(manager_user)
    judging_page = client.get("/pools/setup-me/judging/").content.decode()
    link = re.search(r'href="(/rubrics/new/\?next=[^"]+)"', judging_page)
    assert link is not None
    url = link[1].replace("&amp;", "&")
    assert 'name="next" value="/pools/setup-me/judging/"' in client.get(url).content.decode()
    response = client.post(url, form_data(name="for-setup", next="/pools/setup-me/judging/"))
    rubric = Rubric.objects.get(name="for-setup")
    assert response["Location"] == f"/pools/setup-me/judging/?rubric={rubric.pk}"
    back = client.get(response["Location"])
    assert back.context["setup"]["rubric"].value() == rubric.pk
    assert f'<option value="{rubric.pk}" selected>for-setup v1</option>' in back.content.decode()


@pytest.mark.parametrize(
    "next_url", ["https://evil.example/steal", "//evil.example/x", "javascript:alert(1)"]
)
def test_it_ignores_an_off_site_next(manager_user, next_url):
    client = client_as(manager_user)
    assert "evil" not in client.get(NEW, {"next": next_url}).content.decode()
    response = client.post(NEW, form_data(name="safe", next=next_url))
    assert response["Location"] == f"/rubrics/{Rubric.objects.get(name='safe').pk}/"


@pytest.mark.parametrize("url", ["/rubrics/", NEW, "/rubrics/{rubric}/"])
def test_it_lets_only_managers_in(manager_user, url):
    rubric = rubrics.default_rubric()
    url = url.format(rubric=rubric.pk)
    assert client_as(make_user("just-a-rater")).get(url).status_code == 403
    assert client_as(None).get(url)["Location"].startswith("/accounts/login/")
    assert client_as(manager_user).get(url).status_code == 200


def test_it_stores_nothing_a_rater_posts(db):
    response = client_as(make_user("just-a-rater")).post(NEW, form_data(name="sneaky"))
    assert response.status_code == 403 and not Rubric.objects.filter(name="sneaky").exists()


def test_it_lists_grades_keys_facets_version_and_judged(manager_user):
    rubrics.create_rubric(name="listed", grades=[{"value": 2, "key": "k", "label": "Keen <b>"}])
    rubrics.create_rubric(
        name="listed",
        grades=[{"value": 1, "key": "k", "label": "Keen"}],
        facets=[{"name": "tone", "label": "Tone", "choices": ["calm"], "required": True}],
    )
    html = client_as(manager_user).get("/rubrics/").content.decode()
    assert "Keen &lt;b&gt;" in html and "Keen <b>" not in html
    assert "<kbd>k</kbd> 1 Keen" in html and "Tone: calm (required)" in html
    assert '<td class="num">2</td>' in html and '<td class="judged">no</td>' in html


def test_it_shows_every_error_at_once(manager_user):
    errors = client_as(manager_user).post(NEW, form_data(name="", grades="bad")).context["form"].errors
    assert errors["grades"][0].startswith("line 1: write a grade as") and errors["name"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_makes_a_rubric_from_the_judging_set_up_in_the_browser(page, live_server):  # noqa: F811
    manager = make_manager("browser-manager", password=PASSWORD)
    make_pool(name="by-browser", managers=[manager])
    log_in(page, live_server, "browser-manager")
    page.goto(f"{live_server.url}/pools/by-browser/judging/")
    page.get_by_role("link", name="New rubric").click()
    page.fill("#id_name", "two-grades")
    page.fill("#id_grades", "1 y Yes\n0 y No")
    page.get_by_role("button", name="Create rubric").click()
    assert "every grade needs its own one-character key" in page.inner_text(".rubric-form")
    page.fill("#id_grades", "1 y Yes: on topic\n0 q No")
    page.fill("#id_facets", "freshness: current, dated (required)")
    page.get_by_role("button", name="Create rubric").click()
    page.wait_for_url(f"{live_server.url}/pools/by-browser/judging/?rubric=*")
    chosen = page.locator("#id_rubric option:checked").inner_text()
    assert chosen == "two-grades v1" and page.problems == []

"""Agreement and release pages and API: who may, who may not, and what they show."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from judgements import releases
from judgements.models import Release
from pooling.models import Job
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge


@pytest.fixture
def campaign(db, manager):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(judgements_per_item=2, raters=[alice, bob], name="campaign")
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q2", "d010"): 2})
    judge(pool, bob, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 3, ("q2", "d010"): 2})
    release = releases.create_release(pool=pool)
    return pool, alice, release


def web(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


PAGES = [
    "/campaigns/campaign/agreement/",
    "/campaigns/campaign/releases/",
    "/campaigns/campaign/releases/{release}/",
    "/campaigns/campaign/releases/{release}/qrels.txt",
    "/campaigns/campaign/releases/{release}/manifest.json",
]
API = [
    "/api/releases/",
    "/api/releases/{release}/",
    "/api/releases/{release}/files/qrels.txt/",
    "/api/agreement/campaign/",
]


@pytest.mark.parametrize("url", PAGES)
@pytest.mark.parametrize(
    ("persona", "expected"),
    [("anonymous", 302), ("rater", 403), ("outsider", 403), ("manager", 200), ("admin_user", 200)],
)
def test_pages_answer_only_managers(campaign, request, url, persona, expected):
    _, alice, release = campaign
    user = (
        None if persona == "anonymous" else alice if persona == "rater" else request.getfixturevalue(persona)
    )
    response = web(user).get(url.format(release=release.pk))
    assert response.status_code == expected


@pytest.mark.parametrize("url", API)
@pytest.mark.parametrize(
    ("persona", "expected"),
    [("anonymous", 401), ("rater", 403), ("outsider", 403), ("manager", 200), ("admin_user", 200)],
)
def test_api_answers_only_managers(campaign, request, url, persona, expected):
    _, alice, release = campaign
    user = (
        None if persona == "anonymous" else alice if persona == "rater" else request.getfixturevalue(persona)
    )
    client = client_for(user)
    response = client.get(url.format(release=release.pk))
    assert response.status_code in ((401, 403) if expected == 401 else (expected,))


def test_the_agreement_page_shows_the_sentence_the_heatmaps_and_worst_topics(campaign, manager):
    html = web(manager).get("/campaigns/campaign/agreement/").content.decode()
    assert "Raters agree" in html
    assert html.count("<svg") >= 2
    assert "Cohen" in html and "Krippendorff" in html and "Fleiss" in html
    assert html.index(">q1<") < html.index(">q2<") or "q1" in html


def test_the_release_page_says_how_much_is_pending(campaign, manager):
    _, _, release = campaign
    html = web(manager).get(f"/campaigns/campaign/releases/{release.pk}/").content.decode()
    assert f"<strong>{release.counts['pending']}</strong> pending" in html
    assert "Not a finished pool" in html
    assert "alpha" in html and "beta" in html


def test_the_downloaded_qrels_are_the_release_file(campaign, manager):
    _, _, release = campaign
    response = web(manager).get(f"/campaigns/campaign/releases/{release.pk}/qrels.txt")
    body = b"".join(response.streaming_content)
    assert body.startswith(b"q1 0 d001 2\n")
    assert web(manager).get(f"/campaigns/campaign/releases/{release.pk}/secrets.txt").status_code == 404


def test_the_api_gives_each_files_address_and_each_address_gives_the_file(campaign, manager):
    """`downloads`: a client reads the addresses instead of building them (a guessed address without the
    router's trailing slash was a 404); each gives the file whose SHA-256 `files` holds."""
    import hashlib

    _, _, release = campaign
    client = client_for(manager)
    answer = client.get(f"/api/releases/{release.pk}/").json()
    assert set(answer["downloads"]) == set(answer["files"]) and "qrels.txt" in answer["downloads"]
    for name, address in answer["downloads"].items():
        assert address.startswith("http://testserver/api/releases/") and address.endswith(f"/{name}/")
        body = b"".join(client.get(address).streaming_content)
        assert hashlib.sha256(body).hexdigest() == answer["files"][name]
    listed = client.get("/api/releases/").json()["results"]
    assert [row["downloads"] for row in listed if row["id"] == release.pk] == [answer["downloads"]]


def test_a_manager_makes_a_release_from_the_page_and_the_api(
    campaign, manager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = web(manager).post(
            "/campaigns/campaign/releases/new/", {"policy": "median", "unjudged": "omit"}
        )
    assert response.status_code == 302
    assert Release.objects.filter(policy="median", unjudged="omit").count() == 1
    job = Job.objects.get(kind="release", params__policy="median")
    assert response["Location"] == f"/jobs/{job.pk}/"  # the release's job page
    made = Release.objects.get(policy="median")
    page = web(manager).get(response["Location"]).content.decode()
    assert f'href="/campaigns/campaign/releases/{made.pk}/"' in page  # the release it made, not the list
    assert made.number == 2 and "release 2 of campaign" in page  # named by its number in the pool
    api = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/releases/", {"pool": "campaign", "policy": "mean"}, format="json")
    assert response.status_code == 202
    job = api.get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["status"] == "done"
    assert Release.objects.filter(policy="mean").count() == 1


def test_bad_release_requests_get_a_400_naming_the_field(campaign, manager):
    api = client_for(manager)
    response = api.post("/api/releases/", {"pool": "campaign", "policy": "loudest"}, format="json")
    assert response.status_code == 400 and "policy" in response.json()
    response = api.post("/api/releases/", {"pool": "nope"}, format="json")
    assert response.status_code == 400 and "pool" in response.json()
    response = api.post("/api/releases/", {"pool": "campaign", "unjudged": "zero"}, format="json")
    assert response.status_code == 400 and "unjudged" in response.json()
    before = Release.objects.count()
    page = web(manager).post("/campaigns/campaign/releases/new/", {"policy": "rater:"})
    assert page.status_code == 302 and Release.objects.count() == before


def test_a_rater_cannot_make_a_release(campaign):
    _, alice, _ = campaign
    assert web(alice).post("/campaigns/campaign/releases/new/", {"policy": "majority"}).status_code == 403
    assert client_for(alice).post("/api/releases/", {"pool": "campaign"}, format="json").status_code == 403


def test_the_agreement_api_returns_the_summary(campaign, manager):
    data = client_for(manager).get("/api/agreement/campaign/").json()
    assert data["n_pairs"] == 4
    assert json.dumps(data)


def test_the_agreement_api_and_page_give_the_intervals_of_the_weighting_asked_for(campaign, manager):
    plain = client_for(manager).get("/api/agreement/campaign/").json()
    linear = client_for(manager).get("/api/agreement/campaign/?weights=linear").json()
    assert {t["ci_weights"] for t in plain["topics"]} == {"unweighted"}
    assert {t["ci_weights"] for t in linear["topics"]} == {"linear"}
    assert [p["ci_weights"] for p in linear["pairs"]] == ["linear"]
    assert (linear["pairs"][0]["ci_low"], linear["pairs"][0]["ci_high"]) != (
        plain["pairs"][0]["ci_low"],
        plain["pairs"][0]["ci_high"],
    )
    page = web(manager).get("/campaigns/campaign/agreement/?weights=linear").content.decode()
    assert "95% interval (linear κ)" in page
    for topic in linear["topics"]:  # the page shows the API's numbers
        if topic["ci_low"] is not None:
            assert f"{topic['ci_low']:.2f} – {topic['ci_high']:.2f}" in page


def test_an_unknown_weighting_is_a_400_naming_the_field(campaign, manager):
    response = client_for(manager).get("/api/agreement/campaign/?weights=cubic")
    assert response.status_code == 400
    assert "weights" in response.json()
    page = web(manager).get("/campaigns/campaign/agreement/?weights=cubic")
    assert page.status_code == 400
    # a page in the site's layout, naming the field and the choices, with the way back to the agreement
    assert page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert "weights: must be one of" in text and 'href="/campaigns/campaign/agreement/"' in text


def test_agreement_leaves_out_the_labels_of_an_excluded_rater_until_restored(campaign, manager):
    from django.contrib.auth.models import User

    from judgements import exclusions

    pool, _, _ = campaign
    bob = User.objects.get(username="bob")
    before = client_for(manager).get("/api/agreement/campaign/").json()
    assert (before["n_raters"], before["n_pairs"], before["n_excluded_raters"]) == (2, 4, 0)
    exclusions.exclude_rater(pool=pool, rater=bob, by=manager, reason="constant")
    after = client_for(manager).get("/api/agreement/campaign/").json()
    assert (after["n_raters"], after["n_pairs"], after["n_excluded_raters"]) == (1, 0, 1)
    page = web(manager).get("/campaigns/campaign/agreement/").content.decode()
    assert "The labels of 1 rater excluded from this pool" in page
    exclusions.restore_rater(pool=pool, rater=bob, by=manager)
    assert client_for(manager).get("/api/agreement/campaign/").json()["n_pairs"] == 4


def test_the_release_form_and_the_command_offer_every_policy_of_the_registry(campaign, manager):
    from judgements import aggregation
    from judgements.management.commands.release_qrels import Command

    html = web(manager).get("/campaigns/campaign/releases/").content.decode()
    help_text = Command().create_parser("manage.py", "release_qrels").format_help()
    for name in (*aggregation.RULES, *aggregation.MODEL_POLICIES):
        assert f'<option value="{name}">' in html
    assert "glad" in aggregation.MODEL_POLICIES and "glad" in " ".join(help_text.split())

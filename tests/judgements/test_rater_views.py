"""The rater's pages through Django's test client: who may see what, the judging endpoints (submit, skip,
revise), blindness, untrusted document bodies, the Content-Security-Policy and error handling."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from judgements import lease_ends, membership, rubrics
from judgements.models import Assignment, Judgement, JudgementRevision
from judgements.views import render_body
from labeling.middleware import CONTENT_SECURITY_POLICY
from pooling.models import Document, Pool, PoolItem, Topic
from tests.factories import make_collection, make_pool, make_run

pytestmark = pytest.mark.usefixtures("fast_passwords")

RUN_A, RUN_B = "zebracorn-ranker-7731", "quokkafish-bm25-4409"
ODD_SCORE = "987.654321"
OTHER_NOTE = "second-rater-private-note-5512"
JSON: dict[str, Any] = {"HTTP_ACCEPT": "application/json"}


def blind_pool(*, name: str = "blind", raters=(), judgements_per_item: int = 1, **options) -> Pool:
    """Two topics, 8 documents each, from two runs with distinctive names and one distinctive score."""
    collection = make_collection(docs=40)
    Topic.objects.filter(collection=collection, qid="q1").update(
        description="Find the door.", narrative="Relevant: anything that names a door."
    )
    lists_a = {"q1": [f"d{i:03d}" for i in range(0, 8)], "q2": [f"d{i:03d}" for i in range(20, 28)]}
    lists_b = {"q1": [f"d{i:03d}" for i in range(4, 8)], "q2": [f"d{i:03d}" for i in range(24, 28)]}
    run_a = make_run(collection=collection, name=RUN_A, lists=lists_a)
    run_b = make_run(collection=collection, name=RUN_B, lists=lists_b)
    run_a.rows.filter(rank=1).update(score=float(ODD_SCORE))
    return make_pool(
        collection=collection,
        runs=[run_a, run_b],
        name=name,
        depth=10,
        raters=raters,
        judgements_per_item=judgements_per_item,
        **options,
    )


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def url(name: str, pool: Pool) -> str:
    return reverse(f"judgements:{name}", args=[pool.name])


def lease(client: Client, pool: Pool) -> dict:
    """What the page's script does first: ask for an item by POST (a GET leases nothing)."""
    response = client.post(url("judge", pool), **JSON)
    assert response.status_code == 200, response.content
    return response.json()


def submit(client: Client, pool: Pool, assignment: int, **fields):
    return client.post(url("submit", pool), {"assignment": assignment, **fields}, **JSON)


@pytest.fixture
def pool(rater, second_rater):
    return blind_pool(raters=[rater, second_rater], judgements_per_item=2)


@pytest.fixture
def other_pool(outsider):
    return blind_pool(name="elsewhere", raters=[outsider])


# ------------------------------------------------------------------------------------------- who may


def test_it_sends_anonymous_users_to_the_login_page(db, pool):
    client = Client()
    for method, path in [
        ("get", "/"),
        ("get", url("judge", pool)),
        ("post", url("submit", pool)),
        ("post", url("skip", pool)),
        ("get", url("revise", pool)),
        ("post", url("revise", pool)),
    ]:
        response = getattr(client, method)(path)
        assert response.status_code == 302, path
        assert response["Location"].startswith("/accounts/login/?next="), path
    assert not Assignment.objects.exists()


@pytest.mark.parametrize("persona", ["outsider", "manager", "admin_user"])
def test_it_answers_404_to_anyone_who_is_not_a_rater_of_the_pool(request, pool, other_pool, persona):
    user = request.getfixturevalue(persona)
    client = client_for(user)
    theirs = Assignment.objects.create(
        item=pool.items.first(), pool=pool, rater=request.getfixturevalue("rater"), expires_at=timezone.now()
    )
    assert client.get(url("judge", pool)).status_code == 404
    assert client.get(url("judge", pool), **JSON).status_code == 404
    assert client.get(url("revise", pool)).status_code == 404
    assert client.post(url("submit", pool), {"assignment": theirs.pk, "grade": 2}).status_code == 404
    assert client.post(url("skip", pool), {"assignment": theirs.pk}).status_code == 404
    assert client.post(url("revise", pool), {"judgement": 1, "grade": 2}).status_code == 404
    assert client.get("/judge/no-such-pool/").status_code == 404
    assert not Judgement.objects.exists()
    assert Assignment.objects.filter(rater=user).count() == 0


def test_it_lists_only_the_pools_the_user_rates(rater, outsider, manager, admin_user, pool, other_pool):
    page = client_for(rater).get("/").content.decode()
    assert pool.name in page and other_pool.name not in page
    assert 'href="/judge/blind/"' in page
    page = client_for(outsider).get("/").content.decode()
    assert other_pool.name in page and 'href="/judge/blind/"' not in page
    for user in (manager, admin_user):
        page = client_for(user).get("/").content.decode()
        assert "You are not a rater of any pool yet" in page


def test_it_lets_an_admin_who_is_also_a_rater_judge(admin_user, pool):
    membership.setup_judging(pool=pool, raters=[admin_user])
    client = client_for(admin_user)
    state = lease(client, pool)
    assert state["mode"] == "item"
    assert submit(client, pool, state["assignment"], grade=1, seconds="2").status_code == 200
    assert Judgement.objects.get(rater=admin_user).grade == 1


def test_it_refuses_get_on_the_post_endpoints(rater, pool):
    client = client_for(rater)
    assert client.get(url("submit", pool)).status_code == 405
    assert client.get(url("skip", pool)).status_code == 405


# ---------------------------------------------------------------------------------------- the pages


def test_it_shows_progress_and_what_is_left_on_the_home_page(rater, second_rater, pool):
    client = client_for(rater)
    page = client.get("/").content.decode()
    assert "Start judging" in page
    assert "<strong>16</strong> left for you" in page
    state = lease(client, pool)
    submit(client, pool, state["assignment"], grade=2, seconds="1")
    page = client.get("/").content.decode()
    assert "Resume judging" in page
    # 15 open + the lease just handed out after the submit
    assert "<strong>15</strong> left for you" in page
    assert "you judged <strong>1</strong>" in page
    assert "pool 1 / 32 judgements (3%)" in page
    assert '<progress max="32" value="1"' in page


def test_it_shows_the_topic_the_document_and_the_whole_rubric(rater, pool):
    client = client_for(rater)
    lease(client, pool)
    response = client.get(url("judge", pool))
    assert response.status_code == 200
    page = response.content.decode()
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert "query q1" in page and "Find the door." in page and "Relevant: anything that names a door." in page
    item = Assignment.objects.get(rater=rater).item
    assert item.document.title in page and item.document.text in page
    for grade in pool.judging.rubric.grades.all():
        assert f"<kbd>{grade.key}</kbd>" in page
        assert grade.label in page and grade.description in page
    for key in ("x", "s", "u", "n"):
        assert f"<kbd>{key}</kbd>" in page
    config = json.loads(re.search(r'id="judge-config" type="application/json">(.*?)</script>', page).group(1))
    assert config["grades"]["3"] == {"value": 3, "label": "Perfect"}
    assert config["unrateable"] == "x"
    assert config["state"]["assignment"] == Assignment.objects.get(rater=rater).pk
    # no inline script or style anywhere (the CSP would block them)
    assert not re.search(r"<script(?![^>]*(?:src=|type=\"application/json\"))", page)
    assert " style=" not in page and "<style" not in page and not re.search(r"\son[a-z]+=", page)


def test_it_resumes_the_live_lease(rater, pool):
    client = client_for(rater)
    first = lease(client, pool)["assignment"]
    assert lease(client, pool)["assignment"] == first
    assert client.get(url("judge", pool)).content.decode().count(f'name="assignment" value="{first}"') == 1
    assert Assignment.objects.filter(rater=rater).count() == 1


def test_it_keeps_raters_on_one_topic_until_it_is_done(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    topics = [state["topic"]]
    for _ in range(15):
        state = submit(client, pool, state["assignment"], grade=0, seconds="1").json()
        topics.append(state["topic"])
    assert topics == ["q1"] * 8 + ["q2"] * 8


# ------------------------------------------------------------------------------------------- submit


def test_it_stores_the_judgement_with_its_seconds_and_answers_with_the_next_item(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    response = submit(client, pool, state["assignment"], grade=2, seconds="3.25", note="  looks fine ")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    data = response.json()
    judgement = Judgement.objects.get(rater=rater)
    assert (judgement.grade, judgement.seconds, judgement.note, judgement.unrateable) == (
        2, 3.25, "looks fine", False
    )  # fmt: skip
    assert Assignment.objects.get(pk=state["assignment"]).state == Assignment.State.DONE
    assert data["flash"] == "Saved: Good" and data["error"] == ""
    assert data["mode"] == "item" and data["assignment"] != state["assignment"]
    next_item = Assignment.objects.get(pk=data["assignment"]).item
    assert next_item.document.title in data["parts"]["document"]
    assert set(data) == {
        "mode",
        "assignment",
        "judgement",
        "back",
        "label",
        "topic",
        "parts",
        "flash",
        "error",
    }
    assert set(data["parts"]) == {"topic", "document", "progress"}
    assert "1 / 16" in data["parts"]["progress"]


@pytest.mark.parametrize(
    ("sent", "stored"), [("1e9", 86400.0), ("-5", 0.0), ("0.5", 0.5), ("nan", None), ("soon", None)]
)
def test_it_clamps_the_seconds_the_browser_sends(rater, pool, sent, stored):
    client = client_for(rater)
    state = lease(client, pool)
    assert submit(client, pool, state["assignment"], grade=1, seconds=sent).status_code == 200
    seconds = Judgement.objects.get(rater=rater).seconds
    if stored is None:  # not a number: the time since the lease began, within the lease
        assert 0.0 <= seconds < 60.0
    else:
        assert seconds == stored


def test_it_works_as_a_plain_form_without_javascript(rater, pool):
    client = client_for(rater)
    page = client.get(url("judge", pool)).content.decode()
    assert f'<form method="post" action="{url("judge", pool)}">' in page  # the Start button
    response = client.post(url("judge", pool))
    assert response.status_code == 302 and response["Location"] == url("judge", pool)
    page = client.get(url("judge", pool)).content.decode()
    assignment = int(re.search(r'name="assignment" value="(\d+)"', page).group(1))
    Assignment.objects.filter(pk=assignment).update(leased_at=timezone.now() - timedelta(seconds=42))
    response = client.post(url("submit", pool), {"assignment": assignment, "grade": "3", "seconds": ""})
    assert response.status_code == 302 and response["Location"] == url("judge", pool)
    assert 41.0 < Judgement.objects.get(rater=rater).seconds < 60.0
    page = client.get(url("judge", pool)).content.decode()
    assert "Saved: Perfect" in page
    next_id = int(re.search(r'name="assignment" value="(\d+)"', page).group(1))
    assert client.post(url("skip", pool), {"assignment": next_id}).status_code == 302
    assert Assignment.objects.get(pk=next_id).state == Assignment.State.SKIPPED


def test_it_stores_unrateable(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    response = submit(client, pool, state["assignment"], unrateable="1", seconds="4")
    assert response.json()["flash"] == "Saved: Unrateable"
    judgement = Judgement.objects.get(rater=rater)
    assert judgement.unrateable and judgement.grade is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"grade": "7"}, "Grade 7 is not on the rubric"),
        ({"grade": "two"}, "grade: Enter a whole number."),
        ({}, "Choose a grade."),
        ({"grade": "2", "unrateable": "1"}, "Choose a grade or 'unrateable', not both."),
    ],
)
def test_it_rejects_a_bad_label_with_400_and_stores_nothing(rater, pool, fields, message):
    client = client_for(rater)
    state = lease(client, pool)
    response = submit(client, pool, state["assignment"], seconds="1", **fields)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert not Judgement.objects.exists()
    assert Assignment.objects.get(pk=state["assignment"]).state == Assignment.State.ACTIVE
    page = client.post(url("submit", pool), {"assignment": state["assignment"], **fields})
    assert page.status_code == 400 and message.replace("'", "&#x27;") in page.content.decode()
    assert not Judgement.objects.exists()


def test_it_rejects_unrateable_when_the_rubric_has_no_such_choice(rater, second_rater):
    rubric = rubrics.create_rubric(name="strict", allow_unrateable=False)
    pool = blind_pool(raters=[rater])
    membership.setup_judging(pool=pool, rubric=rubric)
    client = client_for(rater)
    page = client.get(url("judge", pool)).content.decode()
    assert 'name="unrateable"' not in page
    state = lease(client, pool)
    response = submit(client, pool, state["assignment"], unrateable="1")
    assert response.status_code == 400 and "no 'unrateable' choice" in response.json()["error"]
    assert not Judgement.objects.exists()


def test_it_enforces_required_facets_and_stores_chosen_ones(rater):
    rubric = rubrics.create_rubric(
        name="with-facets",
        facets=[
            {"name": "fresh", "label": "Freshness", "choices": ["current", "outdated"], "required": True},
            {"name": "authority", "label": "Authority", "choices": [1, 2, 3]},
        ],
    )
    pool = blind_pool(raters=[rater])
    membership.setup_judging(pool=pool, rubric=rubric)
    client = client_for(rater)
    page = client.get(url("judge", pool)).content.decode()
    assert "Freshness" in page and "required" in page and 'name="facet_fresh" value="outdated"' in page
    config = json.loads(re.search(r'id="judge-config" type="application/json">(.*?)</script>', page).group(1))
    keys = {(v["facet"], v["value"]): k for k, v in config["facets"].items()}
    assert set(keys) == {("fresh", "current"), ("fresh", "outdated"), ("authority", "1"),
                         ("authority", "2"), ("authority", "3")}  # fmt: skip
    assert not set(keys.values()) & {"0", "1", "2", "3", "x", "u", "s", "n"}
    assert all(f"<kbd>{key}</kbd>" in page for key in keys.values())
    assert config["required"] == [{"name": "fresh", "label": "Freshness"}]

    state = lease(client, pool)
    response = submit(client, pool, state["assignment"], grade=2, seconds="1")
    assert response.status_code == 400 and "Choose Freshness first" in response.json()["error"]
    response = submit(client, pool, state["assignment"], grade=2, facet_fresh="stale", seconds="1")
    assert response.status_code == 400
    assert not Judgement.objects.exists()
    response = submit(
        client, pool, state["assignment"], grade=2, facet_fresh="outdated", facet_authority="3", seconds="1"
    )
    assert response.status_code == 200
    assert Judgement.objects.get(rater=rater).facets == {"fresh": "outdated", "authority": 3}


def test_it_reports_an_expired_lease_taken_by_someone_else_inline(rater, second_rater):
    pool = blind_pool(raters=[rater, second_rater], judgements_per_item=1)
    client = client_for(rater)
    state = lease(client, pool)
    lease_ends.sweep_expired_leases(now=timezone.now() + timedelta(hours=1))
    mine = Assignment.objects.get(pk=state["assignment"])
    Assignment.objects.create(
        item=mine.item, pool=pool, rater=second_rater, expires_at=timezone.now() + timedelta(hours=1)
    )
    PoolItem.objects.filter(pk=mine.item_id).update(active_leases=1)
    response = submit(client, pool, state["assignment"], grade=2, seconds="1")
    assert response.status_code == 409
    data = response.json()
    assert "expired" in data["error"] and data["flash"] == ""
    assert data["mode"] == "item" and data["assignment"] != state["assignment"]
    assert not Judgement.objects.exists()


def test_it_answers_a_double_submit_with_a_message_not_a_500(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    assert submit(client, pool, state["assignment"], grade=2, seconds="1").status_code == 200
    response = submit(client, pool, state["assignment"], grade=3, seconds="1")
    assert response.status_code == 409 and "judged this item already" in response.json()["error"]
    assert Judgement.objects.get(rater=rater).grade == 2


def test_it_returns_404_for_an_assignment_of_another_rater_or_pool(rater, second_rater, pool, outsider):
    theirs = lease(client_for(second_rater), pool)["assignment"]
    elsewhere_pool = blind_pool(name="second", raters=[rater])
    elsewhere = lease(client_for(rater), elsewhere_pool)["assignment"]
    client = client_for(rater)
    lease(client, pool)
    for assignment in (theirs, elsewhere, "abc", "-1", "", 10**9):
        assert submit(client, pool, assignment, grade=2).status_code == 404
        assert client.post(url("skip", pool), {"assignment": assignment}, **JSON).status_code == 404
    assert not Judgement.objects.exists()
    assert Assignment.objects.get(pk=theirs).state == Assignment.State.ACTIVE
    assert Assignment.objects.get(pk=elsewhere).state == Assignment.State.ACTIVE


def test_it_keeps_a_submit_to_a_few_queries(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    with CaptureQueriesContext(connection) as captured:
        assert submit(client, pool, state["assignment"], grade=2, seconds="1").status_code == 200
    statements = [q["sql"] for q in captured.captured_queries]
    queries = [sql for sql in statements if not re.match(r"\s*(SAVEPOINT|RELEASE|ROLLBACK)", sql)]
    # session and user (2), membership (1), the assignment (1), the rubric (2), submit_label (about
    # 7), lease_next (about 8), progress (1): nothing per grade, per item or per part rendered
    assert len(queries) <= 25, "\n".join(queries)
    assert sum("pooling_poolitem pi" in sql and "SUM(" in sql for sql in queries) == 1


# --------------------------------------------------------------------------------------------- skip


def test_it_skips_an_item_and_never_offers_it_again(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    response = client.post(url("skip", pool), {"assignment": state["assignment"]}, **JSON)
    assert response.status_code == 200 and response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    data = response.json()
    assert data["flash"] == "Skipped" and data["assignment"] != state["assignment"]
    assert Assignment.objects.get(pk=state["assignment"]).state == Assignment.State.SKIPPED
    seen = {state["assignment"]}
    while data["mode"] == "item":
        seen.add(data["assignment"])
        data = submit(client, pool, data["assignment"], grade=1, seconds="1").json()
    skipped_item = Assignment.objects.get(pk=state["assignment"]).item_id
    assert not Judgement.objects.filter(rater=rater, item_id=skipped_item).exists()
    assert Judgement.objects.filter(rater=rater).count() == 15
    response = client.post(url("skip", pool), {"assignment": state["assignment"]}, **JSON)
    assert response.status_code == 409 and "no longer leased" in response.json()["error"]


# ------------------------------------------------------------------------------------------- revise


def test_it_revises_the_previous_judgement_keeping_a_revision(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    first = Assignment.objects.get(pk=state["assignment"])
    current = submit(client, pool, state["assignment"], grade=2, seconds="1", note="hm").json()

    data = client.get(url("revise", pool), **JSON).json()
    judgement = Judgement.objects.get(rater=rater)
    assert data["mode"] == "revise" and data["judgement"] == judgement.pk and data["assignment"] is None
    assert data["label"] == {"grade": 2, "unrateable": False, "facets": {}, "note": "hm"}
    assert first.item.document.title in data["parts"]["document"]
    page = client.get(url("revise", pool)).content.decode()
    assert re.search(r'value="2" class="grade current"', page)
    assert 'data-mode="revise"' in page and ">hm</textarea>" in page

    response = client.post(
        url("revise", pool), {"judgement": judgement.pk, "grade": "3", "note": "hm"}, **JSON
    )
    assert response.status_code == 200 and response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    back = response.json()
    assert back["flash"] == "Revised: Perfect"
    assert back["mode"] == "item" and back["assignment"] == current["assignment"]
    revision = JudgementRevision.objects.get(judgement=judgement)
    assert (revision.old_grade, revision.new_grade, revision.changed_by) == (2, 3, rater)
    assert Judgement.objects.get(pk=judgement.pk).grade == 3


def test_it_walks_back_through_earlier_judgements(rater, pool):
    client = client_for(rater)
    assert client.get(url("revise", pool), **JSON).status_code == 409
    state = lease(client, pool)
    titles = []
    for grade in (1, 2, 3):
        titles.append(Assignment.objects.get(pk=state["assignment"]).item.document.title)
        state = submit(client, pool, state["assignment"], grade=grade, seconds="1").json()
    for back, (title, grade) in enumerate(zip(reversed(titles), (3, 2, 1), strict=True)):
        data = client.get(url("revise", pool) + f"?back={back}", **JSON).json()
        assert title in data["parts"]["document"] and data["label"]["grade"] == grade and data["back"] == back
    response = client.get(url("revise", pool) + "?back=3", **JSON)
    assert response.status_code == 409 and "No earlier judgement" in response.json()["error"]


def test_it_revises_only_the_raters_own_judgements(rater, second_rater, pool):
    other = client_for(second_rater)
    state = lease(other, pool)
    submit(other, pool, state["assignment"], grade=1, seconds="1")
    theirs = Judgement.objects.get(rater=second_rater)
    client = client_for(rater)
    lease(client, pool)
    response = client.post(url("revise", pool), {"judgement": theirs.pk, "grade": "3"}, **JSON)
    assert response.status_code == 404
    assert Judgement.objects.get(pk=theirs.pk).grade == 1 and not JudgementRevision.objects.exists()


def test_it_rejects_a_bad_revision_with_400(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    submit(client, pool, state["assignment"], grade=2, seconds="1")
    judgement = Judgement.objects.get(rater=rater)
    response = client.post(url("revise", pool), {"judgement": judgement.pk, "grade": "9"}, **JSON)
    assert response.status_code == 400 and "not on the rubric" in response.json()["error"]
    assert not JudgementRevision.objects.exists()


# ------------------------------------------------------------------------------------------ all done


def test_it_shows_a_calm_all_done_screen(rater):
    pool = blind_pool(raters=[rater])
    client = client_for(rater)
    data = lease(client, pool)
    while data["mode"] == "item":
        data = submit(client, pool, data["assignment"], grade=0, seconds="1").json()
    assert data["mode"] == "done" and data["assignment"] is None
    assert "All done" in data["parts"]["document"]
    page = client.get(url("judge", pool)).content.decode()
    assert "All done" in page and 'data-mode="done"' in page and "You have judged 16 items here" in page
    assert client.get(url("revise", pool), **JSON).json()["mode"] == "revise"


# ---------------------------------------------------------------------------------------- blindness


def test_it_never_shows_runs_ranks_scores_or_other_raters_grades(rater, second_rater, pool):
    other = client_for(second_rater)
    state = lease(other, pool)
    submit(other, pool, state["assignment"], grade=3, seconds="1", note=OTHER_NOTE)
    client = client_for(rater)
    pages = [client.get("/").content.decode(), client.get(url("judge", pool)).content.decode()]
    data = lease(client, pool)
    for _ in range(16):  # every item of the pool, including the one the second rater judged
        pages.append(json.dumps(data))
        if data["mode"] != "item":
            break
        data = submit(client, pool, data["assignment"], grade=1, seconds="1").json()
    pages.append(json.dumps(client.get(url("revise", pool), **JSON).json()))
    pages.append(client.get(url("revise", pool)).content.decode())
    assert Judgement.objects.filter(rater=rater).count() == 16
    for page in pages:
        for secret in (RUN_A, RUN_B, ODD_SCORE, OTHER_NOTE, "provenance", "blind_key", "consensus"):
            assert secret not in page
        assert not re.search(r"\b(?:rank|score)", page, re.I)


# ------------------------------------------------------------------------------- untrusted documents


def test_it_sanitises_an_html_document_body(rater):
    pool = blind_pool(raters=[rater])
    body = (
        "<p>Doors <b>open</b></p><script>window.__pwned=1</script>"
        '<img src=x onerror="window.__pwned=1"><a href="javascript:window.__pwned=1">click</a>'
        '<a href="https://example.org/" onclick="x()">ok</a><iframe src="https://evil.test/"></iframe>'
        '<style>body{display:none}</style><p style="color:red">styled</p><form><input name=q></form>'
    )
    Document.objects.filter(collection=pool.collection).update(text=body, url="javascript:alert(1)")
    client = client_for(rater)
    leased = lease(client, pool)["parts"]["document"]
    for content in (client.get(url("judge", pool)).content.decode(), leased):
        start = content.index('<article class="doc">')
        doc = content[start : content.index("</article>", start)]
        body = doc[doc.index('class="doc-body"') :]
        assert "<p>Doors <b>open</b></p>" in body
        bad_parts = ("__pwned", "onerror", "onclick", "<script", "<iframe", "<img", "<style", "style=",
                     "<form", "<input", "javascript:")  # fmt: skip
        for bad in bad_parts:
            assert bad not in body, bad
        assert (
            '<a href="https://example.org/" target="_blank" rel="noopener noreferrer nofollow">ok</a>' in body
        )
        assert '<p class="doc-url">javascript:alert(1)</p>' in doc  # a URL that is not http(s) is only text
        assert 'href="javascript' not in content


def test_it_keeps_the_line_breaks_of_plain_text_bodies():
    text = "Return the sum.\n\n   >>> add(1, 2)\n   3\n\nSee <object object> & a < b."
    assert render_body(text) == (
        '<pre class="doc-text">Return the sum.\n\n   &gt;&gt;&gt; add(1, 2)\n   3\n\n'
        "See &lt;object object&gt; &amp; a &lt; b.</pre>"
    )
    assert render_body("one <b>bold</b>\ntwo") == '<div class="doc-html doc-text">one <b>bold</b>\ntwo</div>'
    assert render_body("<p>a</p>\n<p>b</p>").startswith('<div class="doc-html">')


def test_it_links_only_http_urls(rater):
    pool = blind_pool(raters=[rater])
    Document.objects.filter(collection=pool.collection).update(url="https://docs.example.org/x?a=1&b=2")
    doc = lease(client_for(rater), pool)["parts"]["document"]
    assert (
        '<a href="https://docs.example.org/x?a=1&amp;b=2" target="_blank" rel="noopener noreferrer nofollow">'
        in doc
    )
    Document.objects.filter(collection=pool.collection).update(url="data:text/html,<script>x</script>")
    client = client_for(rater)
    doc = client.get(url("judge", pool), **JSON).json()["parts"]["document"]
    assert "<a href=" not in doc and "data:text/html,&lt;script&gt;x&lt;/script&gt;" in doc


def test_it_sends_the_content_security_policy_on_every_rater_page(rater, pool):
    client = client_for(rater)
    state = lease(client, pool)
    submit(client, pool, state["assignment"], grade=2, seconds="1")
    for response in (
        client.get("/"),
        client.get(url("judge", pool)),
        client.get(url("judge", pool), **JSON),
        client.get(url("revise", pool)),
        client.get(url("revise", pool), **JSON),
    ):
        assert response["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert response["X-Frame-Options"] == "DENY"


def test_it_serves_the_progress_bars_the_page_refreshes_after_a_key_press(rater, second_rater, outsider):
    pool = blind_pool(raters=[rater, second_rater])
    client = client_for(rater)
    first = lease(client, pool)
    before = client.get(url("progress", pool), **JSON)
    assert before.status_code == 200 and set(before.json()) == {"progress"}
    assert "0 / 16" in before.json()["progress"] and "This topic" in before.json()["progress"]
    submit(client, pool, first["assignment"], grade="1")
    after = client.get(url("progress", pool), **JSON).json()["progress"]
    assert "1 / 16" in after and "You judged <strong>1</strong>" in after
    for text in (RUN_A, RUN_B, ODD_SCORE):
        assert text not in after  # blind, as every part of the page
    assert client_for(outsider).get(url("progress", pool)).status_code == 404
    assert client_for(None).get(url("progress", pool)).status_code == 302
    assert client.post(url("progress", pool)).status_code == 405


def test_a_fresh_adaptive_pool_offers_to_start_and_its_first_request_leases(rater):
    """An adaptive pool selects its items as raters ask for them (`leasing.lease_next`): with nothing
    selected yet, nothing is 'left' for the rater, but its strategy has its budget to select — the page
    offers to start (its script then asks by POST), the home page says 'Start judging', not 'Open' and
    'All done' (a dead end found in the browser: the page never asked for the first item)."""
    pool = blind_pool(name="adaptive", raters=[rater], strategy="mtf", budget=6)
    assert not PoolItem.objects.filter(pool=pool, selected=True).exists()
    client = client_for(rater)
    page = client.get(url("judge", pool)).content.decode()
    assert 'data-mode="start"' in page and "All done" not in page
    assert "the pool's strategy selects up to 6 more as judgements come in" in page
    home = re.sub(r"\s+", " ", client.get("/").content.decode())
    assert re.search(r'class="button primary start"[^>]*>Start judging<', home)
    assert "(the pool's strategy selects up to 6 more as judgements come in)" in home
    state = lease(client, pool)  # what the script does in start mode
    assert state["mode"] == "item" and PoolItem.objects.filter(pool=pool, selected=True).exists()


def test_a_depth_pool_judged_to_the_end_is_all_done(rater):
    """The start offer is for items still to come: a depth pool with nothing left says 'All done'."""
    pool = blind_pool(name="finished", raters=[rater])
    client = client_for(rater)
    state = lease(client, pool)
    while state["mode"] == "item":
        assert submit(client, pool, state["assignment"], grade=1, seconds="1").status_code == 200
        state = lease(client, pool)
    page = client.get(url("judge", pool)).content.decode()
    assert 'data-mode="done"' in page and "All done" in page and "strategy selects" not in page

"""The judging API end to end: a rater's session, a manager's campaign, blindness, errors, the schema."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from judgements import adjudication, imports, lease_ends, membership, rubrics
from judgements.models import (
    Adjudication,
    Assignment,
    GoldLabel,
    Judgement,
    JudgementRevision,
    Judging,
    Rubric,
)
from pooling.models import Document, Pool, PoolItem, Run, RunRow, Topic
from tests.conftest import client_for
from tests.factories import lease_for, make_collection, make_pool, make_run, submit_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

RUN_NAMES = ("zebraRUNxq-alpha", "yakRUNxq-beta")
SCORE = 31337.25


def distinctive_pool(raters, *, name: str = "blind", judgements_per_item: int = 1):
    """A pool whose run names and scores are strings that could not appear by chance."""
    collection = make_collection(docs=12, topics=["q1"])
    topic = Topic.objects.get(collection=collection, qid="q1")
    topic.description, topic.narrative = "what the searcher wants", "relevant if it answers"
    topic.save()
    docs = list(Document.objects.filter(collection=collection).order_by("docid"))
    runs = []
    for n, run_name in enumerate(RUN_NAMES):
        run = Run.objects.create(collection=collection, name=run_name, description=f"{run_name} description")
        RunRow.objects.bulk_create(
            RunRow(run=run, topic=topic, document=docs[(n + i) % len(docs)], rank=i + 1, score=SCORE - i)
            for i in range(4)
        )
        runs.append(run)
    return make_pool(
        collection=collection,
        runs=runs,
        name=name,
        depth=4,
        raters=raters,
        judgements_per_item=judgements_per_item,
    )


def lease(client, pool: str = "blind") -> dict[str, Any]:
    response = client.post(f"/api/pools/{pool}/next/")
    assert response.status_code == 200, response.content
    return response.json()


# ------------------------------------------------------------------------------------------- the rater


def test_it_takes_a_rater_through_a_whole_pool(rater):
    pool = distinctive_pool([rater])
    client = client_for(rater)
    items = PoolItem.objects.filter(pool=pool).count()
    (mine,) = client.get("/api/judging/").json()["results"]
    assert (
        mine["pool"] == "blind" and mine["progress"]["left_for_me"] == items and mine["progress"]["mine"] == 0
    )
    assert [g["value"] for g in mine["rubric"]["grades"]] == [3, 2, 1, 0]

    first = lease(client)
    assert lease(client)["assignment"] == first["assignment"]  # resumes the live lease
    assert [a["assignment"] for a in client.get("/api/assignments/").json()["results"]] == [
        first["assignment"]
    ]
    response = client.post(
        f"/api/assignments/{first['assignment']}/judgement/",
        {"grade": 2, "note": "  mostly  ", "seconds": 12.5, "facets": {}},
        format="json",
    )
    assert response.status_code == 201, response.content
    judged = response.json()
    assert (judged["grade"], judged["note"], judged["seconds"], judged["revisions"]) == (2, "mostly", 12.5, 0)
    assert judged["docid"] == first["document"]["docid"]

    skipped = lease(client)
    assert client.post(f"/api/assignments/{skipped['assignment']}/skip/").status_code == 204
    assert Assignment.objects.get(pk=skipped["assignment"]).state == Assignment.State.SKIPPED

    offered = [first["document"]["docid"], skipped["document"]["docid"]]
    while (response := client.post("/api/pools/blind/next/")).status_code == 200:
        payload = response.json()
        offered.append(payload["document"]["docid"])
        client.post(
            f"/api/assignments/{payload['assignment']}/judgement/", {"unrateable": True}, format="json"
        )
    assert response.status_code == 204 and response.content == b""
    assert len(offered) == len(set(offered)) == items
    progress = client.get("/api/judging/blind/").json()["progress"]
    assert progress == {
        "items": items,
        "complete": items - 1,
        "required": items,
        "judgements": items - 1,
        "done": items - 1,
        "fraction": round((items - 1) / items, 4),
        "mine": items - 1,
        "left_for_me": 0,
    }

    listed = client.get("/api/judgements/?pool=blind").json()
    assert listed["count"] == items - 1
    assert client.get("/api/judgements/?pool=elsewhere").json()["count"] == 0


def test_it_revises_a_judgement_with_patch_and_keeps_the_history(rater):
    distinctive_pool([rater])
    client = client_for(rater)
    first = lease(client)
    judgement = client.post(
        f"/api/assignments/{first['assignment']}/judgement/", {"grade": 1, "note": "hm"}, format="json"
    ).json()
    response = client.patch(f"/api/judgements/{judgement['id']}/", {"grade": 3}, format="json")
    assert response.status_code == 200
    assert (response.json()["grade"], response.json()["note"], response.json()["revisions"]) == (3, "hm", 1)
    client.patch(f"/api/judgements/{judgement['id']}/", {"note": "read again"}, format="json")
    client.patch(f"/api/judgements/{judgement['id']}/", {"unrateable": True}, format="json")
    history = client.get(f"/api/judgements/{judgement['id']}/history/").json()
    assert [
        (h["changed_by"], h["old_grade"], h["new_grade"], h["old_note"], h["new_note"], h["new_unrateable"])
        for h in history
    ] == [
        ("rater", 1, 3, "hm", "hm", False),
        ("rater", 3, 3, "hm", "read again", False),
        ("rater", 3, None, "read again", "read again", True),
    ]
    assert history[0]["changed_at"] <= history[1]["changed_at"] <= history[2]["changed_at"]
    back = client.patch(f"/api/judgements/{judgement['id']}/", {"grade": 0}, format="json").json()
    assert (back["grade"], back["unrateable"]) == (0, False)
    both = client.patch(
        f"/api/judgements/{judgement['id']}/", {"grade": 2, "unrateable": True}, format="json"
    )
    assert both.status_code == 400 and both.json()["grade"] == ["an unrateable judgement has no grade"]
    off = client.patch(f"/api/judgements/{judgement['id']}/", {"grade": 5}, format="json")
    assert off.status_code == 400 and off.json()["grade"] == ["grade 5 is not on the rubric (0, 1, 2, 3)"]
    assert JudgementRevision.objects.filter(judgement_id=judgement["id"]).count() == 4


def test_it_serves_the_topic_the_document_and_the_rubric(rater):
    pool = distinctive_pool([rater])
    membership.setup_judging(
        pool=pool,
        rubric=rubrics.create_rubric(
            name="faceted",
            facets=[{"name": "freshness", "label": "Freshness", "choices": ["fresh", "stale"]}],
        ),
    )
    payload = lease(client_for(rater))
    assert set(payload) == {
        "assignment",
        "state",
        "leased_at",
        "expires_at",
        "pool",
        "topic",
        "document",
        "rubric",
    }
    assert payload["topic"] == {
        "qid": "q1",
        "query": "query q1",
        "description": "what the searcher wants",
        "narrative": "relevant if it answers",
    }
    assert set(payload["document"]) == {"docid", "title", "url", "body"}
    docid = payload["document"]["docid"]
    assert payload["document"]["body"] == f'<pre class="doc-text">text of document {int(docid[1:])}</pre>'
    assert payload["rubric"]["name"] == "faceted"
    assert payload["rubric"]["facets"] == [
        {"name": "freshness", "label": "Freshness", "choices": ["fresh", "stale"], "required": False}
    ]
    assert payload["rubric"]["grades"][0] == {
        "value": 3,
        "label": "Perfect",
        "key": "3",
        "description": rubrics.DEFAULT_GRADES[0]["description"],
    }


# ------------------------------------------------------------------------------------------- blindness


def test_it_never_shows_runs_ranks_scores_gold_or_other_raters_grades(rater, second_rater, manager):
    pool = distinctive_pool([rater, second_rater], judgements_per_item=2)
    Pool.objects.filter(pk=pool.pk).update(description=f"pooled from {' and '.join(RUN_NAMES)}")
    adjudication.set_gold(item=PoolItem.objects.filter(pool=pool).first(), grade=3, by=manager)
    first, second = client_for(rater), client_for(second_rater)
    seen: list[str] = []
    while (response := first.post("/api/pools/blind/next/")).status_code == 200:
        payload = response.json()
        seen.append(response.content.decode())
        first.post(
            f"/api/assignments/{payload['assignment']}/judgement/",
            {"grade": 3, "note": "SECRET-NOTE-of-rater-one"},
            format="json",
        )
    while (response := second.post("/api/pools/blind/next/")).status_code == 200:
        payload = response.json()
        seen.append(response.content.decode())
        seen.append(second.get(f"/api/assignments/{payload['assignment']}/").content.decode())
        second.post(f"/api/assignments/{payload['assignment']}/judgement/", {"grade": 0}, format="json")
    for url in ("/api/judging/", "/api/judging/blind/", "/api/judgements/", "/api/assignments/?state=done"):
        seen.append(second.get(url).content.decode())
    assert len(seen) > 2 * PoolItem.objects.filter(pool=pool).count()
    text = "\n".join(seen)
    for forbidden in (
        *RUN_NAMES,
        "RUNxq",
        "31337",
        "rank",
        "score",
        "provenance",
        "gold",
        "blind_key",
        "SECRET-NOTE",
        "consensus",
        "num_judgements",
        "required_judgements",
    ):
        assert forbidden not in text, forbidden
    for body in seen[:3]:
        assert set(json.loads(body)) == {
            "assignment",
            "state",
            "leased_at",
            "expires_at",
            "pool",
            "topic",
            "document",
            "rubric",
        }


def test_it_sanitises_untrusted_documents(rater):
    pool = distinctive_pool([rater])
    Document.objects.filter(pk__in=PoolItem.objects.filter(pool=pool).values("document")).update(
        text='<p onmouseover="steal()">Hello <b>world</b><script>alert(1)</script>'
        '<img src="https://tracker.example/p.gif"><a href="javascript:alert(2)">x</a>'
        '<a href="https://ok.example/">ok</a><style>body{display:none}</style></p>',
        url="javascript:alert(3)",
    )
    document = lease(client_for(rater))["document"]
    body = document["body"]
    assert "<b>world</b>" in body and 'href="https://ok.example/"' in body
    for bad in (
        "script",
        "alert",
        "onmouseover",
        "steal",
        "<img",
        "tracker",
        "javascript",
        "<style",
        "display",
    ):
        assert bad not in body, bad
    assert document["url"] == ""


# ----------------------------------------------------------------------------------------- the manager


def test_it_lets_a_manager_run_a_campaign(manager, rater, second_rater):
    collection = make_collection()
    pool = make_pool(collection=collection, name="camp", build=True)
    Judging.objects.filter(pool=pool).delete()
    client = client_for(manager)

    rubric = client.post(
        "/api/rubrics/",
        {
            "name": "graded",
            "description": "two grades",
            "grades": [
                {"value": 1, "label": "Relevant", "key": "r", "description": "on topic"},
                {"value": 0, "label": "Not", "key": "0"},
            ],
            "facets": [{"name": "fresh", "label": "Fresh?", "choices": ["yes", "no"]}],
        },
        format="json",
    )
    assert rubric.status_code == 201, rubric.content
    rubric = rubric.json()
    assert (rubric["version"], rubric["judged"], [g["value"] for g in rubric["grades"]]) == (1, False, [1, 0])

    setup = client.post(
        "/api/judging/",
        {
            "pool": "camp",
            "rubric": rubric["id"],
            "raters": ["rater"],
            "lease_minutes": 7,
            "adjudication_gap": 1,
        },
        format="json",
    )
    assert setup.status_code == 201, setup.content
    assert (setup.json()["lease_minutes"], setup.json()["adjudication_gap"], setup.json()["raters"]) == (
        7,
        1,
        ["rater"],
    )
    added = client.post("/api/judging/camp/raters/", {"usernames": ["rater2"]}, format="json")
    assert added.json()["raters"] == ["rater", "rater2"] and added.json()["adjudication_gap"] == 1
    again = client.post("/api/judging/", {"pool": "camp"}, format="json")
    assert (
        again.status_code == 200
        and again.json()["adjudication_gap"] == 1
        and again.json()["lease_minutes"] == 7
    )
    # two grades never differ by 2: that gap is refused on its field (`membership.check_adjudication_gap`)
    wide = client.patch("/api/judging/camp/", {"adjudication_gap": 2}, format="json")
    assert wide.status_code == 400 and list(wide.json()) == ["adjudication_gap"]
    assert client.get("/api/judging/camp/").json()["adjudication_gap"] == 1

    item = (
        PoolItem.objects.filter(pool=pool)
        .select_related("topic", "document")
        .order_by("topic", "blind_key")[0]
    )
    gold = client.post(
        "/api/judging/camp/gold/",
        {"qid": item.topic.qid, "docid": item.document.docid, "grade": 1},
        format="json",
    )
    assert (
        gold.status_code == 201 and gold.json()["item"] == item.pk and gold.json()["created_by"] == "manager"
    )
    assert [g["item"] for g in client.get("/api/judging/camp/gold/").json()["results"]] == [item.pk]

    raters = [client_for(rater), client_for(second_rater)]
    for grade, rc in zip((1, 0), raters, strict=True):
        payload = lease(rc, "camp")
        assert payload["document"]["docid"] == item.document.docid  # first in blind order, and gold
        response = rc.post(
            f"/api/assignments/{payload['assignment']}/judgement/",
            {"grade": grade, "facets": {"fresh": "yes"}, "note": f"says {grade}"},
            format="json",
        )
        assert response.status_code == 201, response.content

    queue = client.get("/api/judging/camp/adjudication/").json()["results"]
    assert [entry["item"] for entry in queue] == [item.pk]
    assert queue[0]["gold"] == 1 and queue[0]["spread"] == 1
    assert sorted(
        (j["rater"], j["grade"], j["note"], j["facets"]["fresh"]) for j in queue[0]["judgements"]
    ) == [
        ("rater", 1, "says 1", "yes"),
        ("rater2", 0, "says 0", "yes"),
    ]
    assert client.get("/api/judging/camp/adjudication/?gap=2").json()["results"] == []

    decision = client.post(
        "/api/judging/camp/adjudication/",
        {"item": item.pk, "grade": 1, "note": "gold says so"},
        format="json",
    )
    assert decision.status_code == 201, decision.content
    assert (decision.json()["grade"], decision.json()["adjudicator"], decision.json()["note"]) == (
        1,
        "manager",
        "gold says so",
    )
    assert Adjudication.objects.get(item=item).grade == 1
    assert client.get("/api/judging/camp/adjudication/").json()["results"] == []
    assert [d["item"] for d in client.get("/api/judging/camp/adjudications/").json()["results"]] == [item.pk]

    judged = client.patch(f"/api/rubrics/{rubric['id']}/", {"description": "now versioned"}, format="json")
    assert judged.status_code == 201 and judged.json()["version"] == 2 and judged.json()["id"] != rubric["id"]
    assert Rubric.objects.get(pk=rubric["id"]).description == "two grades"
    assert client.delete(f"/api/rubrics/{rubric['id']}/").status_code == 400
    assert client.delete(f"/api/rubrics/{judged.json()['id']}/").status_code == 204

    assert client.delete("/api/judging/camp/raters/rater2/").status_code == 204
    assert client.get("/api/judging/camp/").json()["raters"] == ["rater"]
    assert client.delete(f"/api/judging/camp/gold/{item.pk}/").status_code == 204
    assert not GoldLabel.objects.exists() and not PoolItem.objects.get(pk=item.pk).gold

    rows = client.get("/api/judging/camp/judgements/?rater=rater2").json()
    assert rows["count"] == 1 and rows["results"][0]["rater"] == "rater2"


def test_it_edits_an_unjudged_rubric_in_place_through_the_api(manager):
    client = client_for(manager)
    created = client.post("/api/rubrics/", {"name": "plain"}, format="json").json()
    assert [g["value"] for g in created["grades"]] == [3, 2, 1, 0]  # the default scale
    updated = client.put(
        f"/api/rubrics/{created['id']}/",
        {
            "name": "plain",
            "grades": [{"value": 1, "label": "yes", "key": "y"}, {"value": 0, "label": "no", "key": "0"}],
        },
        format="json",
    )
    assert updated.status_code == 200, updated.content
    assert updated.json()["id"] == created["id"] and [g["key"] for g in updated.json()["grades"]] == [
        "y",
        "0",
    ]
    renamed = client.patch(f"/api/rubrics/{created['id']}/", {"name": "other"}, format="json")
    assert renamed.status_code == 400 and "name" in renamed.json()
    assert client.post("/api/rubrics/default/").json()["name"] == "relevance-4"


def test_it_reports_rater_statistics_and_gold_accuracy(manager, rater, second_rater):
    pool = make_pool(name="stats", raters=[rater, second_rater], judgements_per_item=2)
    items = list(PoolItem.objects.filter(pool=pool).order_by("topic__qid", "blind_key"))
    adjudication.set_gold(item=items[0], grade=3, by=manager)
    adjudication.set_gold(item=items[1], grade=1, by=manager)
    plan = {  # rater → list of (grade or None for unrateable, seconds) in lease order
        rater: [(3, 10.0), (2, 20.0), (2, 40.0), (None, 5.0)],
        second_rater: [(1, 7.0), (1, 9.0)],
    }
    for user, labels in plan.items():
        for grade, seconds in labels:
            assignment = lease_for(pool=pool, rater=user)
            submit_for(assignment=assignment, grade=grade, unrateable=grade is None, seconds=seconds)
    lease_ends.skip_item(assignment=lease_for(pool=pool, rater=second_rater))
    page = client_for(manager).get("/api/judging/stats/stats/").json()
    rows = {row["rater"]: row for row in page["results"]}
    assert set(rows) == {"rater", "rater2"}
    one, two = rows["rater"], rows["rater2"]
    assert (one["judgements"], one["unrateable"], one["unrateable_share"]) == (4, 1, 0.25)
    assert one["median_seconds"] == statistics.median([10.0, 20.0, 40.0, 5.0]) == 15.0
    assert one["grades"] == {"0": 0, "1": 0, "2": 2, "3": 1}
    assert (two["judgements"], two["median_seconds"], two["skips"], one["skips"]) == (2, 8.0, 1, 0)
    assert two["grades"] == {"0": 0, "1": 2, "2": 0, "3": 0}
    gold = {item.pk: g for item, g in ((items[0], 3), (items[1], 1))}
    for name, user in (("rater", rater), ("rater2", second_rater)):
        labels = list(Judgement.objects.filter(rater=user, item_id__in=gold).values_list("item_id", "grade"))
        exact = sum(g is not None and g == gold[i] for i, g in labels)
        near = sum(g is not None and abs(g - gold[i]) <= 1 for i, g in labels)
        assert rows[name]["gold"]["n"] == len(labels) == 2
        assert (rows[name]["gold"]["exact"], rows[name]["gold"]["within_one"]) == (exact, near)
        assert rows[name]["gold"]["exact_rate"] == exact / 2
    assert (one["gold"]["exact"], one["gold"]["within_one"]) == (1, 2)  # 3 on gold 3, 2 on gold 1
    assert (two["gold"]["exact"], two["gold"]["within_one"]) == (1, 1)  # 1 on gold 3, 1 on gold 1


# -------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"grade": "abc"}, "grade", "A valid integer is required."),
        ({"grade": 9}, "grade", "grade 9 is not on the rubric (0, 1, 2, 3)"),
        ({}, "grade", "choose a grade"),
        ({"grade": 2, "unrateable": True}, "grade", "an unrateable judgement has no grade"),
        ({"grade": 2, "facets": ["a"]}, "facets", 'Expected a dictionary of items but got type "list".'),
        ({"grade": 2, "facets": {"colour": "red"}}, "facets", "unknown facets: colour"),
        ({"grade": 2, "seconds": -1}, "seconds", "Ensure this value is greater than or equal to 0.0."),
        ({"grade": 2, "seconds": "soon"}, "seconds", "A valid number is required."),
        ({"grade": 2, "note": None}, "note", "This field may not be null."),
    ],
)
def test_it_answers_a_bad_judgement_with_a_400_naming_the_field(rater, body, field, message):
    distinctive_pool([rater])
    client = client_for(rater)
    payload = lease(client)
    response = client.post(f"/api/assignments/{payload['assignment']}/judgement/", body, format="json")
    assert response.status_code == 400
    detail = response.json()[field]
    assert (detail if isinstance(detail, str) else detail[0]) == message
    assert not Judgement.objects.exists()
    assert Assignment.objects.get(pk=payload["assignment"]).state == Assignment.State.ACTIVE


def test_it_refuses_a_second_judgement_and_a_skip_of_a_judged_item(rater):
    distinctive_pool([rater])
    client = client_for(rater)
    payload = lease(client)
    url = f"/api/assignments/{payload['assignment']}/"
    assert client.post(url + "judgement/", {"grade": 1}, format="json").status_code == 201
    twice = client.post(url + "judgement/", {"grade": 2}, format="json")
    assert twice.status_code == 400 and "judged this item already" in twice.json()["detail"]
    skip = client.post(url + "skip/")
    assert skip.status_code == 400 and skip.json()["detail"] == "this item is no longer leased to you"


def test_it_refuses_a_judgement_on_an_expired_lease_taken_by_another_rater(rater, second_rater):
    pool = distinctive_pool([rater, second_rater])
    PoolItem.objects.filter(pool=pool).exclude(pk=PoolItem.objects.filter(pool=pool).first().pk).delete()
    payload = lease(client_for(rater))
    assignment = Assignment.objects.get(pk=payload["assignment"])
    lease_ends.sweep_expired_leases(now=assignment.expires_at)
    lease(client_for(second_rater))
    response = client_for(rater).post(
        f"/api/assignments/{assignment.pk}/judgement/", {"grade": 1}, format="json"
    )
    assert response.status_code == 400 and "went to another rater" in response.json()["detail"]


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        (
            "post",
            "/api/rubrics/",
            {"name": "bad", "grades": [{"value": 1, "label": "a", "key": "ab"}]},
            "grades",
        ),
        (
            "post",
            "/api/rubrics/",
            {"name": "bad", "grades": [{"value": -1, "label": "a", "key": "a"}]},
            "grades",
        ),
        (
            "post",
            "/api/rubrics/",
            {"name": "bad", "grades": [{"value": 1, "label": "a", "key": "s"}]},
            "grades",
        ),
        ("post", "/api/rubrics/", {"name": "bad", "facets": [{"name": "a b"}]}, "facets"),
        ("post", "/api/rubrics/", {"name": "bad", "facets": [{"name": "a"}, {"name": "a"}]}, "facets"),
        ("post", "/api/judging/", {"pool": "nowhere"}, "pool"),
        ("post", "/api/judging/", {"pool": "p", "raters": ["ghost"]}, "raters"),
        ("post", "/api/judging/", {"pool": "p", "rubric": 999999}, "rubric"),
        ("patch", "/api/judging/p/", {"lease_minutes": 0}, "lease_minutes"),
        ("post", "/api/judging/p/raters/", {"usernames": []}, "usernames"),
        ("post", "/api/judging/p/gold/", {"grade": 1}, "item"),
        ("post", "/api/judging/p/gold/", {"qid": "q1", "docid": "d001", "grade": 7}, "grade"),
        ("post", "/api/judging/p/adjudication/", {"item": "x"}, "item"),
        ("post", "/api/judging/p/adjudication/", {"qid": "q1", "docid": "d001"}, "grade"),
        ("get", "/api/judging/p/adjudication/?gap=-1", None, "gap"),
    ],
)
def test_it_answers_bad_manager_requests_with_a_400_naming_the_field(manager, method, url, body, field):
    make_pool(name="p")
    response = getattr(client_for(manager), method)(url, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert Rubric.objects.filter(name="bad").count() == 0


NASTY = [None, "", "x", -1, 0, 10**30, 1.5, True, [], {}, ["a"], {"a": {"b": None}}, "\x00", "💥" * 300]


def test_it_never_answers_a_500(rater, manager):
    distinctive_pool([rater])
    raters_client, managers_client = client_for(rater), client_for(manager)
    raters_client.raise_request_exception = managers_client.raise_request_exception = False
    judgement = submit_for(assignment=Assignment.objects.get(pk=lease(raters_client)["assignment"]), grade=1)
    payload = lease(raters_client)
    submit, revise = (
        f"/api/assignments/{payload['assignment']}/judgement/",
        f"/api/judgements/{judgement.pk}/",
    )
    targets = [
        (raters_client, "post", submit, ("grade", "unrateable", "facets", "note", "seconds")),
        (raters_client, "patch", revise, ("grade", "unrateable", "facets", "note")),
        (
            managers_client,
            "post",
            "/api/rubrics/",
            ("name", "grades", "facets", "allow_unrateable", "unrateable_key"),
        ),
        (
            managers_client,
            "post",
            "/api/judging/",
            ("pool", "rubric", "raters", "lease_minutes", "adjudication_gap"),
        ),
        (managers_client, "patch", "/api/judging/blind/", ("rubric", "lease_minutes", "adjudication_gap")),
        (managers_client, "post", "/api/judging/blind/raters/", ("usernames",)),
        (managers_client, "post", "/api/judging/blind/gold/", ("item", "qid", "docid", "grade")),
        (
            managers_client,
            "post",
            "/api/judging/blind/adjudication/",
            ("item", "qid", "docid", "grade", "note"),
        ),
    ]
    codes = set()
    for client, method, url, fields in targets:
        for field in fields:
            for value in NASTY:
                response = getattr(client, method)(url, {"grade": 1, field: value}, format="json")
                assert response.status_code < 500, (url, field, value, response.content[:300])
                codes.add(response.status_code)
        response = getattr(client, method)(url, "not json", content_type="application/json")
        assert response.status_code == 400
    huge = "9" * 23
    for url in (
        f"/api/assignments/{huge}/",
        "/api/judgements/abc/",
        f"/api/judgements/{huge}/history/",
        f"/api/judging/blind/adjudication/?gap={huge}",
    ):
        response = (managers_client if "judging" in url else raters_client).get(url)
        assert response.status_code < 500, url
    response = managers_client.delete(f"/api/judging/blind/gold/{huge}/")
    assert response.status_code == 404
    assert 400 in codes


# -------------------------------------------------------------------------------------------- schema


def test_it_keeps_the_openapi_schema_valid_and_documents_every_judging_endpoint():
    GENERATOR_STATS.reset()
    schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    paths = schema["paths"]
    for path, methods in {
        "/api/pools/{name}/next/": {"post"},
        "/api/assignments/{id}/judgement/": {"post"},
        "/api/assignments/{id}/skip/": {"post"},
        "/api/judgements/{id}/": {"get", "patch"},
        "/api/judgements/{id}/history/": {"get"},
        "/api/rubrics/{id}/": {"get", "put", "patch", "delete"},
        "/api/judging/": {"get", "post"},
        "/api/judging/{pool}/": {"get", "patch"},
        "/api/judging/{pool}/raters/{username}/": {"delete"},
        "/api/judging/{pool}/gold/": {"get", "post"},
        "/api/judging/{pool}/gold/{item_id}/": {"delete"},
        "/api/judging/{pool}/stats/": {"get"},
        "/api/judging/{pool}/adjudication/": {"get", "post"},
        "/api/judging/{pool}/judgements/": {"get"},
    }.items():
        assert methods <= set(paths[path]), path
    next_item = paths["/api/pools/{name}/next/"]["post"]["responses"]
    assert set(next_item) == {"200", "204"}
    assert "requestBody" in paths["/api/assignments/{id}/judgement/"]["post"]
    messages = [*GENERATOR_STATS._warn_cache, *GENERATOR_STATS._error_cache]
    ours = [message for message in messages if "judgements/api.py" in message]
    assert ours == []


def test_it_lists_the_judging_endpoints_in_the_api_root(manager):
    root = client_for(manager).get("/api/").json()
    for prefix in ("rubrics", "judging", "assignments", "judgements"):
        assert root[prefix].endswith(f"/api/{prefix}/")
    assert "pools" not in root or root["pools"].endswith("/api/pools/")


def test_it_answers_a_400_when_an_imported_label_took_the_leased_item(rater, tmp_path):
    pool = distinctive_pool([rater])
    client = client_for(rater)
    payload = lease(client)
    qrels = tmp_path / "earlier.qrels"
    qrels.write_text(f"q1 0 {payload['document']['docid']} 2\n")
    imports.import_judgements(pool=pool, path=qrels, rater=rater)
    url = f"/api/assignments/{payload['assignment']}/judgement/"
    response = client.post(url, {"grade": 1}, format="json")
    assert response.status_code == 400 and response.json()["detail"]
    assert Judgement.objects.get().grade == 2


def test_the_statistics_and_the_quality_take_a_raters_median_time_over_the_same_times(manager, rater):
    """A judgement's time is known when above 0 (`rater_quality.known_seconds`). The statistics counted a
    0 given through the interface and left out a crowd file's real times; the quality flag the opposite."""
    from judgements.rater_quality import MIN_VOTES

    collection = make_collection(docs=MIN_VOTES + 2, topics=("q1",))
    docids = [f"d{i:03d}" for i in range(MIN_VOTES + 2)]
    run = make_run(collection=collection, name="r", lists={"q1": docids})
    pool = make_pool(name="timed", collection=collection, runs=[run], raters=[rater], depth=MIN_VOTES + 2)
    items = list(PoolItem.objects.filter(pool=pool).order_by("pk"))[: MIN_VOTES + 2]
    assert len(items) == MIN_VOTES + 2
    times = [float(10 + i) for i in range(MIN_VOTES)]
    for item, seconds in zip(items, [*times, 0.0, 0.0], strict=True):  # two given without a time
        Judgement.objects.create(item=item, rater=rater, rubric=pool.judging.rubric, grade=1, seconds=seconds)
    Judgement.objects.filter(item=items[0]).update(imported=True)  # a crowd file's time: a real one
    api = client_for(manager)
    stats = {row["rater"]: row for row in api.get("/api/judging/timed/stats/").json()["results"]}
    quality = {row["rater"]: row for row in api.get("/api/rater-quality/timed/").json()["raters"]}
    assert stats["rater"]["median_seconds"] == quality["rater"]["median_seconds"] == statistics.median(times)

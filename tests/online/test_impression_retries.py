"""A front end's retried impression (a post repeated after a timeout) is counted once: an impression
carries the id the front end made for the search (`query_id`, UBI's name), unique in its experiment; the
same id with the same content answers 200 with the impression stored first, with other content 409 naming
the fields; without an id every post is stored, as before. Two posts of one id at once store one."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
from django.db import connection

from online import experiments, impressions, serving
from online.experiment_models import InterleavedImpression
from tests.conftest import client_for, require_services
from tests.factories import make_collection, make_run, make_user
from tests.test_openapi_truth import check

A_LIST = ["d001", "d002", "d003", "d004", "d005"]
B_LIST = ["d003", "d001", "d006", "d007", "d002"]
URL = "/api/interleaving/ab/impressions/"


def make_world(manager: Any) -> dict[str, Any]:
    frontend = make_user("frontend")
    collection = make_collection(name="news", managers=[manager])
    make_run(collection=collection, name="alpha", lists={"q1": A_LIST, "q2": ["d010"]})
    make_run(collection=collection, name="beta", lists={"q1": B_LIST, "q2": ["d011", "d010"]})
    experiment = experiments.create_experiment(
        name="ab", collection=collection, run_a="alpha", run_b="beta", length=4, clients=[frontend]
    )
    serving.clear_caches()
    return {"experiment": experiment, "frontend": frontend, "collection": collection}


@pytest.fixture
def world(db, manager) -> dict[str, Any]:
    """An experiment `ab` of two runs of `news` (the manager's), a front end account among its clients."""
    return make_world(manager)


def shown_to(experiment: Any, user: str = "u1", qid: str = "q1", **extra: Any) -> dict[str, Any]:
    """The impression body of what `serve` gives `user` for `qid`, a click on team B's first position."""
    served = serving.serve(experiment=experiment, qid=qid, user=user)
    body = {"qid": qid, "user": user, "docids": list(served.docids), "teams": list(served.teams)}
    return {**body, "clicks": [served.teams.index("B") + 1], **extra}


def test_it_counts_a_retried_impression_once(world, manager):
    client = client_for(world["frontend"])
    body = shown_to(world["experiment"], query_id="7d1c0e5e-2f0a-4c51-9d0b-3b2f7f0f6a11")
    first = client.post(URL, body, format="json")
    retry = client.post(URL, body, format="json")
    assert first.status_code == 201, first.content
    assert retry.status_code == 200, retry.content
    stored = {"id": InterleavedImpression.objects.get().pk, "query_id": body["query_id"], "outcome": "B"}
    assert first.json() == stored and retry.json() == stored
    result = client_for(manager).post("/api/interleaving/ab/result/", {}, format="json").json()
    assert (result["impressions"], result["wins_b"], result["wins_a"], result["ties"]) == (1, 1, 0, 0)


def test_it_takes_the_clicks_of_a_retry_in_any_order_and_repeated(world):
    """The clicks are stored each position once, in order: a retry that lists them otherwise is the same."""
    client = client_for(world["frontend"])
    body = shown_to(world["experiment"], query_id="s-1")
    teams = body["teams"]
    clicks = [teams.index("B") + 1, teams.index("A") + 1]
    assert client.post(URL, {**body, "clicks": clicks}, format="json").status_code == 201
    again = client.post(URL, {**body, "clicks": [*reversed(clicks), clicks[0]]}, format="json")
    assert again.status_code == 200, again.content
    assert InterleavedImpression.objects.get().clicks == sorted(clicks)


@pytest.mark.parametrize("change", [{"clicks": []}, {"session": "other-tab"}, "another searcher"])
def test_it_refuses_a_query_id_logged_with_other_content_naming_the_fields(world, change):
    client = client_for(world["frontend"])
    experiment = world["experiment"]
    body = shown_to(experiment, query_id="s-1")
    assert client.post(URL, body, format="json").status_code == 201
    if change == "another searcher":  # a valid impression of its own, under a taken id
        change = shown_to(experiment, user="u2", clicks=[])
    refused = client.post(URL, {**body, **change}, format="json")
    assert refused.status_code == 409, refused.content
    differ = sorted(field for field, value in change.items() if body.get(field, "") != value)
    assert differ and sorted(refused.json()) == differ
    assert "s-1" in refused.json()[differ[0]][0]
    stored = InterleavedImpression.objects.get()
    assert (stored.query_id, stored.user, stored.clicks, stored.outcome) == ("s-1", "u1", body["clicks"], "B")


def test_it_stores_each_post_without_a_query_id_as_before(world):
    """No id, no way to tell a retry from a second impression: each post is one (the schema says so)."""
    client = client_for(world["frontend"])
    body = shown_to(world["experiment"])
    answers = [client.post(URL, body, format="json") for _ in range(2)]
    assert [a.status_code for a in answers] == [201, 201]
    assert [a.json()["query_id"] for a in answers] == [None, None]
    assert InterleavedImpression.objects.filter(query_id__isnull=True).count() == 2
    explicit_null = client.post(URL, {**body, "query_id": None}, format="json")
    assert explicit_null.status_code == 201 and InterleavedImpression.objects.count() == 3


def test_it_keeps_query_ids_apart_per_experiment(world, manager):
    """An id is unique in its experiment: another experiment's impression may carry it."""
    collection = world["collection"]
    make_run(collection=collection, name="gamma", lists={"q1": B_LIST[::-1]})
    other = experiments.create_experiment(
        name="ag", collection=collection, run_a="alpha", run_b="gamma", length=4, clients=[world["frontend"]]
    )  # fmt: skip
    client = client_for(world["frontend"])
    assert client.post(URL, shown_to(world["experiment"], query_id="s-1"), format="json").status_code == 201
    second = client.post("/api/interleaving/ag/impressions/", shown_to(other, query_id="s-1"), format="json")
    assert second.status_code == 201, second.content
    assert sorted(InterleavedImpression.objects.values_list("experiment__name", "query_id")) == [
        ("ab", "s-1"),
        ("ag", "s-1"),
    ]


@pytest.mark.parametrize("query_id", ["", "x" * 101, ["s-1"]])
def test_it_refuses_a_blank_or_overlong_query_id_naming_it(world, query_id):
    response = client_for(world["frontend"]).post(
        URL, shown_to(world["experiment"], query_id=query_id), format="json"
    )
    assert response.status_code == 400 and "query_id" in response.json(), response.content
    assert not InterleavedImpression.objects.exists()


def test_it_answers_a_retry_the_stored_impression_after_the_experiment_is_switched_off(world, manager):
    """A retry stores nothing: it answers what was stored when the experiment was on, not a refusal that
    would tell the front end its impression was lost."""
    client = client_for(world["frontend"])
    body = shown_to(world["experiment"], query_id="s-1")
    first = client.post(URL, body, format="json")
    off = client_for(manager).patch("/api/interleaving/ab/", {"active": False}, format="json")
    assert off.status_code == 200
    serving.clear_caches()
    retry = client.post(URL, body, format="json")
    assert retry.status_code == 200 and retry.json() == first.json()
    fresh = client.post(URL, {**body, "query_id": "s-2"}, format="json")
    assert fresh.status_code == 400 and "experiment" in fresh.json()


def test_it_stores_an_id_repeated_within_one_call_once_and_refuses_a_clash_storing_nothing(world):
    experiment = world["experiment"]
    one = impressions.Shown(**shown_to(experiment, query_id="s-1"))
    logged = impressions.log_impressions(experiment=experiment, shown=[one, one])
    assert [entry.created for entry in logged] == [True, False]
    assert logged[0].impression.pk == logged[1].impression.pk == InterleavedImpression.objects.get().pk
    fresh = impressions.Shown(**shown_to(experiment, user="u2", query_id="s-2"))
    clash = impressions.Shown(**shown_to(experiment, user="u2", query_id="s-2", clicks=[]))
    with pytest.raises(impressions.ImpressionConflict) as refused:
        impressions.log_impressions(experiment=experiment, shown=[fresh, clash])
    assert refused.value.message_dict.keys() == {"clicks"}
    assert InterleavedImpression.objects.count() == 1  # all or nothing: `fresh` is not stored either
    assert impressions.log_impression(experiment=experiment, **shown_to(experiment, query_id="s-1")).pk == (
        logged[0].impression.pk
    )


def test_it_answers_the_row_another_caller_stored_first_when_its_insert_loses(world, monkeypatch):
    """The race, made to happen on any database: after this call found no impression with its id, another
    stores one with it; the unique constraint refuses this call's insert (in a savepoint, so the rest of
    the transaction goes on) and it answers the other's row: the same content a repeat, else a conflict."""
    experiment = world["experiment"]
    checked = impressions._checked

    def raced(experiment: Any, shown: impressions.Shown) -> InterleavedImpression:
        row = checked(experiment, shown)
        checked(experiment, dataclasses.replace(shown, clicks=clicks_of_winner)).save()  # the other caller
        return row

    monkeypatch.setattr(impressions, "_checked", raced)
    body = shown_to(experiment, query_id="s-1")
    clicks_of_winner = body["clicks"]
    (logged,) = impressions.log_impressions(experiment=experiment, shown=[impressions.Shown(**body)])
    assert not logged.created and logged.impression.pk == InterleavedImpression.objects.get().pk
    clicks_of_winner = []
    other = impressions.Shown(**shown_to(experiment, user="u2", query_id="s-2"))
    with pytest.raises(impressions.ImpressionConflict) as refused:
        impressions.log_impressions(experiment=experiment, shown=[other])
    assert refused.value.message_dict.keys() == {"clicks"}
    assert InterleavedImpression.objects.get(query_id="s-2").clicks == []  # the other caller's, as it was
    assert InterleavedImpression.objects.count() == 2


def test_it_answers_201_200_and_409_as_the_schema_declares(world):
    client = client_for(world["frontend"])
    body = shown_to(world["experiment"], query_id="s-1")
    path = "/api/interleaving/{name}/impressions/"
    problems = [
        *check(client, "post", URL, path, 201, data=body),
        *check(client, "post", URL, path, 200, data=body),
        *check(client, "post", URL, path, 409, data={**body, "clicks": []}),
        *check(client, "post", URL, path, 201, data={**body, "query_id": None}),
    ]
    assert problems == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("same", [True, False], ids=["same content", "other clicks"])
def test_it_stores_one_impression_of_two_concurrent_posts_of_one_id(world, monkeypatch, same):
    """Two front end workers post one query_id at the same moment (PostgreSQL, a connection each): both
    have found no impression with it before either inserts (a barrier after the look-up), one row is
    stored, and the other post answers it (a repeat) or is refused (other content)."""
    require_services()
    experiment = world["experiment"]
    body = shown_to(experiment, query_id="s-1")
    barrier = threading.Barrier(2)
    checked = impressions._checked

    def looked_up(experiment: Any, shown: impressions.Shown) -> InterleavedImpression:
        row = checked(experiment, shown)
        barrier.wait(timeout=30)  # both have looked for the id and found none
        return row

    monkeypatch.setattr(impressions, "_checked", looked_up)
    answers: list[int] = []
    failures: list[BaseException] = []

    def post(data: dict[str, Any]) -> None:
        try:
            answers.append(client_for(world["frontend"]).post(URL, data, format="json").status_code)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
        finally:
            connection.close()

    bodies = [body, body if same else {**body, "clicks": []}]
    threads = [threading.Thread(target=post, args=(data,)) for data in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures[:3]
    assert sorted(answers) == ([200, 201] if same else [201, 409])
    assert InterleavedImpression.objects.filter(experiment=experiment).count() == 1


def test_the_admin_lists_and_finds_an_impression_by_its_query_id(world, admin_user):
    from django.test import Client

    impressions.log_impression(
        experiment=world["experiment"], **shown_to(world["experiment"], query_id="q-77")
    )
    impressions.log_impression(experiment=world["experiment"], **shown_to(world["experiment"], user="u2"))
    admin = Client()
    admin.force_login(admin_user)
    found = admin.get("/admin/online/interleavedimpression/", {"q": "q-77"})
    assert found.status_code == 200
    assert found.context["cl"].result_count == 1 and "q-77" in found.content.decode()

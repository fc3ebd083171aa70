"""The interleaving API: the search path (ranking, impressions) for a front end's account, results and
the power planner for managers, and who may do what."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from online import experiments, impressions, serving
from online.experiment_models import InterleavedImpression
from pooling.permissions import MANAGERS_GROUP
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run, make_user

A_LIST = ["d001", "d002", "d003", "d004", "d005"]
B_LIST = ["d003", "d001", "d006", "d007", "d002"]


@pytest.fixture
def world(db, manager, rater):
    frontend = make_user("frontend")
    other = make_user("other-manager")
    other.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    collection = make_collection(name="news", managers=[manager])
    runs = [
        make_run(collection=collection, name="alpha", lists={"q1": A_LIST, "q2": ["d010"]}),
        make_run(collection=collection, name="beta", lists={"q1": B_LIST, "q2": ["d011", "d010"]}),
    ]
    make_pool(collection=collection, runs=runs, name="news-pool", managers=[manager], raters=[rater])
    experiment = experiments.create_experiment(
        name="ab", collection=collection, run_a="alpha", run_b="beta", length=4, clients=[frontend]
    )
    serving.clear_caches()
    return {"experiment": experiment, "frontend": frontend, "other": other, "collection": collection}


def test_it_serves_the_same_interleaved_list_to_the_same_searcher(world):
    client = client_for(world["frontend"])
    first = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"})
    assert first.status_code == 200, first.content
    data = first.json()
    assert len(data["docids"]) == 4 and len(data["teams"]) == 4
    assert set(data["docids"]) <= set(A_LIST) | set(B_LIST)
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"})
    # who may use it and the runs' lists are memoised in the process: nothing of the experiment is read
    assert not [q["sql"] for q in queries.captured_queries if "online_" in q["sql"] or "pooling_" in q["sql"]]
    assert again.json() == data
    seen = {tuple(client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": f"u{i}"}).json()["teams"])
            for i in range(30)}  # fmt: skip
    assert len(seen) > 1  # the coins differ between searchers


def test_it_refuses_bad_queries_naming_the_field(world):
    client = client_for(world["frontend"])
    unknown = client.get("/api/interleaving/ab/ranking/", {"qid": "nope", "user": "u1"})
    assert unknown.status_code == 400 and "qid" in unknown.json()
    no_user = client.get("/api/interleaving/ab/ranking/", {"qid": "q1"})
    assert no_user.status_code == 400 and "user" in no_user.json()
    world["experiment"].active = False
    world["experiment"].save()
    serving.clear_caches()  # (the search path would see it within ACCESS_SECONDS)
    inactive = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"})
    assert inactive.status_code == 400 and "experiment" in inactive.json()


def test_it_lets_managers_switch_an_experiment_off_and_name_its_clients(world, manager):
    frontend = client_for(world["frontend"])
    query = {"qid": "q1", "user": "u1"}
    assert frontend.get("/api/interleaving/ab/ranking/", query).status_code == 200
    off = client_for(manager).patch("/api/interleaving/ab/", {"active": False}, format="json")
    assert off.status_code == 200 and off.json()["active"] is False
    assert "experiment" in frontend.get("/api/interleaving/ab/ranking/", query).json()  # 400: not active
    nobody = client_for(manager).patch(
        "/api/interleaving/ab/", {"active": True, "clients": []}, format="json"
    )
    assert nobody.json()["clients"] == []
    assert frontend.get("/api/interleaving/ab/ranking/", query).status_code == 404
    ghost = client_for(manager).patch("/api/interleaving/ab/", {"clients": ["ghost"]}, format="json")
    assert ghost.status_code == 400 and "clients" in ghost.json()
    assert client_for(world["frontend"]).patch("/api/interleaving/ab/", {"active": True}).status_code == 403
    assert client_for(world["other"]).patch("/api/interleaving/ab/", {"active": True}).status_code == 404


def test_it_forgets_a_removed_client_once_the_access_memo_expires(world, monkeypatch):
    client = client_for(world["frontend"])
    assert client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).status_code == 200
    world["experiment"].clients.clear()
    clock = [1000.0]
    monkeypatch.setattr(serving.time, "monotonic", lambda: clock[0])
    serving.clear_caches()
    assert client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).status_code == 404
    world["experiment"].clients.add(world["frontend"])
    assert client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).status_code == 404
    clock[0] += serving.ACCESS_SECONDS + 1
    assert client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).status_code == 200


def test_the_search_path_reads_nothing_from_the_database_once_warm(world):
    client = client_for(world["frontend"])
    assert client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).status_code == 200
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u2"})
    assert again.status_code == 200
    assert queries.captured_queries == []  # the token's user, the access and the lists are memoised


def test_it_refuses_a_deleted_token_once_the_access_memo_expires(world, monkeypatch):
    from rest_framework.authtoken.models import Token

    client = client_for(world["frontend"])
    query = {"qid": "q1", "user": "u1"}
    assert client.get("/api/interleaving/ab/ranking/", query).status_code == 200
    clock = [1000.0]
    monkeypatch.setattr(serving.time, "monotonic", lambda: clock[0])
    serving.clear_caches()
    assert client.get("/api/interleaving/ab/ranking/", query).status_code == 200
    Token.objects.filter(user=world["frontend"]).delete()
    assert client.get("/api/interleaving/ab/ranking/", query).status_code == 200  # within ACCESS_SECONDS
    clock[0] += serving.ACCESS_SECONDS + 1
    refused = client.get("/api/interleaving/ab/ranking/", query)
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Token"
    assert refused.json() == {"detail": "Invalid token."}
    world["frontend"].is_active = False
    world["frontend"].save()
    inactive = client_for(world["frontend"])  # a new token of an inactive user: refused at once
    assert inactive.get("/api/interleaving/ab/ranking/", query).status_code == 401


def test_the_search_path_answers_get_and_says_so(world):
    client = client_for(world["frontend"])
    url = "/api/interleaving/ab/ranking/?qid=q1&user=u1"
    posted = client.post(url)
    assert posted.status_code == 405 and posted.json() == {"detail": 'Method "POST" not allowed.'}
    options = client.options(url)
    assert options.status_code == 200 and options.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert client.head(url).status_code == 200
    assert client.get("/api/interleaving/nope/ranking/?qid=q1&user=u1").json() == {"detail": "Not found."}


def test_the_search_path_is_in_the_api_schema(world):
    schema = APIClient().get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/interleaving/{name}/ranking/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"name", "qid", "q", "user"}
    assert "404" in operation["responses"]


def test_it_serves_a_query_given_by_its_text_as_its_topic(world):
    client = client_for(world["frontend"])
    by_qid = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u7"}).json()
    by_text = client.get("/api/interleaving/ab/ranking/", {"q": "  QUERY\tq1 ", "user": "u7"})
    assert by_text.status_code == 200, by_text.content
    assert by_text.json() == by_qid  # the topic's qid named, the same list and teams for this searcher


def test_it_maps_query_text_by_the_click_logs_rule(world):
    from online.clicklogs import normalise_query
    from pooling.models import Topic

    # two topics with the same normalised text: the first qid maps, as in a click log's import
    Topic.objects.create(collection=world["collection"], qid="q0", query="Query Ｑ1")  # (NFKC: Ｑ is Q)
    assert normalise_query("Query Ｑ1") == normalise_query("query q1")
    answer = client_for(world["frontend"]).get(
        "/api/interleaving/ab/ranking/", {"q": "query q1", "user": "u"}
    )
    assert answer.status_code == 200 and answer.json()["qid"] == "q0"


def test_it_answers_an_unmapped_query_text_404_naming_it_and_counts_it(world, manager):
    client = client_for(world["frontend"])
    for _ in range(2):
        unknown = client.get("/api/interleaving/ab/ranking/", {"q": "How to bake bread", "user": "u1"})
        assert unknown.status_code == 404
        assert unknown.json() == {
            "detail": "no topic of the experiment's collection has the query 'how to bake bread'",
            "q": "How to bake bread",
        }
    assert client_for(manager).get("/api/interleaving/ab/").json()["unmapped_queries"] == 2
    page = client_for(manager)
    page.force_login(manager)
    assert b'<span class="unmapped">2</span> searches' in page.get("/online/interleaving/ab/").content


@pytest.mark.parametrize(
    "query",
    [{"q": "query q1", "qid": "q1", "user": "u"}, {"q": "   ", "user": "u"}, {"q": "x" * 1001, "user": "u"}],
)
def test_it_refuses_a_bad_query_text_naming_it(world, query):
    answer = client_for(world["frontend"]).get("/api/interleaving/ab/ranking/", query)
    assert answer.status_code == 400 and "q" in answer.json()
    assert serving.unmapped_queries(world["experiment"]) == 0


def test_it_logs_impressions_with_the_credited_outcome(world):
    client = client_for(world["frontend"])
    shown = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).json()
    b_position = shown["teams"].index("B") + 1
    body = {
        "qid": "q1",
        "user": "u1",
        "docids": shown["docids"],
        "teams": shown["teams"],
        "clicks": [b_position],
    }
    logged = client.post("/api/interleaving/ab/impressions/", body, format="json")
    assert logged.status_code == 201, logged.content
    assert logged.json()["outcome"] == "B"
    stored = InterleavedImpression.objects.get()
    assert stored.teams == "".join(shown["teams"]) and stored.clicks == [b_position]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"clicks": [5]}, "clicks"),
        ({"clicks": [0]}, "clicks"),
        ({"clicks": ["x"]}, "clicks"),
        ({"docids": ["d001"]}, "docids"),
        ({"teams": ["A", "A", "A", "A"]}, "teams"),
        ({"teams": ["C", "A", "B", "A"]}, "teams"),
        ({"qid": ""}, "qid"),
        ({"user": None}, "user"),
    ],
)
def test_it_refuses_a_bad_impression_naming_the_field_and_stores_nothing(world, change, field):
    client = client_for(world["frontend"])
    shown = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).json()
    body = {"qid": "q1", "user": "u1", "docids": shown["docids"], "teams": shown["teams"], "clicks": [1]}
    if change.get("teams") == ["A", "A", "A", "A"] and shown["teams"] == ["A", "A", "A", "A"]:
        change = {"teams": ["B", "B", "B", "B"]}
    response = client.post("/api/interleaving/ab/impressions/", {**body, **change}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not InterleavedImpression.objects.exists()


def test_it_computes_the_result_for_managers(world, manager):
    experiment = world["experiment"]
    for i in range(40):
        shown = serving.serve(experiment=experiment, qid="q1", user=f"u{i}")
        # searchers prefer B: they click B's first position, and A's now and then
        clicks = [shown.teams.index("B") + 1] + ([shown.teams.index("A") + 1] if i % 4 == 0 else [])
        impressions.log_impression(experiment=experiment, qid="q1", user=f"u{i}", docids=shown.docids,
                                   teams=shown.teams, clicks=clicks)  # fmt: skip
    response = client_for(manager).post("/api/interleaving/ab/result/")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["wins_a"], data["wins_b"], data["ties"]) == (0, 30, 10)
    assert data["delta_ab"] == pytest.approx(-0.375)
    assert data["preferred"] == "beta" and data["p_value"] < 1e-6
    assert data["interval"][0] <= -0.375 <= data["interval"][1]
    assert data["per_query"]["q1"]["B"] == 30
    assert client_for(manager).get("/api/interleaving/ab/").json()["result"]["id"] == data["id"]


def test_it_plans_power_and_refuses_a_zero_delta(world, manager):
    client = client_for(manager)
    plan = client.get("/api/interleaving/power/", {"delta": 0.05, "tie_share": 0.2, "click_rate": 0.5})
    assert plan.status_code == 200 and plan.json()["impressions"] > plan.json()["decisive"]
    zero = client.get("/api/interleaving/power/", {"delta": 0})
    assert zero.status_code == 400 and "delta" in zero.json()
    assert client.get("/api/interleaving/power/", {"delta": "x"}).status_code == 400


def test_it_creates_experiments_only_on_collections_the_manager_manages(world, manager):
    body = {"name": "new", "collection": "news", "run_a": "alpha", "run_b": "beta"}
    assert client_for(world["other"]).post("/api/interleaving/", body, format="json").status_code == 400
    bad_run = client_for(manager).post("/api/interleaving/", {**body, "run_b": "gamma"}, format="json")
    assert bad_run.status_code == 400 and "run_b" in bad_run.json()
    bad_client = client_for(manager).post("/api/interleaving/", {**body, "clients": ["ghost"]}, format="json")
    assert bad_client.status_code == 400 and "clients" in bad_client.json()
    created = client_for(manager).post("/api/interleaving/", {**body, "method": "balanced"}, format="json")
    assert created.status_code == 201 and created.json()["method"] == "balanced"


def test_it_shows_each_role_only_what_it_may_use(world, manager, rater, outsider):
    anonymous = APIClient()
    assert anonymous.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u"}).status_code == 401
    for user in (rater, outsider, world["other"]):
        assert (
            client_for(user).get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u"}).status_code
            == 404
        )
    assert (
        client_for(manager).get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u"}).status_code
        == 200
    )
    # the front end's account fetches lists, and nothing else
    assert client_for(world["frontend"]).get("/api/interleaving/ab/").status_code == 403
    assert client_for(world["frontend"]).get("/api/interleaving/ab/result/").status_code == 403
    assert client_for(rater).get("/api/interleaving/").status_code == 403
    assert client_for(world["other"]).get("/api/interleaving/").json()["results"] == []
    assert client_for(world["other"]).get("/api/interleaving/ab/").status_code == 404


def test_it_credits_the_interleaved_pages_of_an_imported_click_log(world, manager, tmp_path):
    from online.clicklogs import import_click_log

    # A's document clicked: A wins; B's: B wins; both: tie; none: no click; a page without teams is not
    # interleaved and left out; a click on the shared top ("-") credits nobody: a tie
    pages = [
        ("u1", "q1", ["d001", "d003"], ["A", "B"], [1]),
        ("u1", "q1", ["d003", "d001"], ["B", "A"], [1]),
        ("u2", "q1", ["d001", "d003"], ["A", "B"], [2]),
        ("u3", "q1", ["d001", "d003"], ["A", "B"], [1, 2]),
        ("u3", "q2", ["d010", "d011"], ["A", "B"], []),
        ("u4", "q2", ["d010", "d011"], None, [1]),
        ("u4", "q2", ["d010", "d011"], ["-", "B"], [1]),
    ]
    lines = [
        json.dumps({"session": f"s{i}", "user": user, "qid": qid, "docids": docids, "clicks": clicks,
                    **({"teams": teams} if teams else {})})
        for i, (user, qid, docids, teams, clicks) in enumerate(pages)
    ]  # fmt: skip
    path = tmp_path / "interleaved.jsonl"
    path.write_text("\n".join(lines) + "\n")
    log = import_click_log(collection=world["collection"], name="ab-log", format="jsonl", paths=[str(path)])
    response = client_for(manager).post("/api/interleaving/ab/result/", {"click_log": log.pk}, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["wins_a"], data["wins_b"], data["ties"], data["no_clicks"]) == (1, 2, 2, 1)
    assert data["users"] == 4 and data["source"] == "click log news/ab-log"
    assert data["per_query"]["q2"] == {"A": 0, "B": 0, "ties": 1, "none": 1, "delta_ab": 0.0, "p_value": 1.0}
    wrong = client_for(manager).post(
        "/api/interleaving/ab/result/", {"click_log": log.pk, "team_a": "alpha"}, format="json"
    )
    assert wrong.status_code == 400 and "click_log" in wrong.json()
    other = client_for(world["other"]).post(
        "/api/interleaving/ab/result/", {"click_log": log.pk}, format="json"
    )
    assert other.status_code == 404

"""Who may change an interleaving or a tracked experiment, and whose release a tracked experiment may be
scored on: the collection `pydocs` is manager A's, with A's pool `pa` over it; manager B reads it because
B's pool `pb` is built on it, and manages neither the collection nor `pa`.

- a write (switching an interleaving experiment off, naming its clients, computing its result, logging
  impressions, entering a tracked experiment's online delta, deleting it) is for the collection's
  managers: a reader is told the experiment does not exist (404), as for every other write the API
  scopes to `managed_by`;
- a tracked experiment's offline figures are scores on one release: only those who may open it (the
  managers of its pool) see the experiment, and only they may score runs on it;
- an interleaving experiment may not take a name its API's own routes use (`power`).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from judgements import releases
from online import experiments, serving, tracking
from online.experiment_api import InterleavingViewSet
from online.experiment_models import InterleavedImpression, InterleavingExperiment, TrackedExperiment
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

GRADES: dict[tuple[str, str], int | None] = {
    ("q1", "d001"): 2,
    ("q1", "d002"): 0,
    ("q1", "d003"): 1,
    ("q2", "d010"): 1,
    ("q2", "d011"): 0,
}


@pytest.fixture
def world(db) -> dict[str, Any]:
    people = {
        "a": make_manager("manager-a"),
        "b": make_manager("manager-b"),
        "rater": make_user("rater-a"),
        "admin": make_user("root", is_staff=True, is_superuser=True),
        "frontend": make_user("frontend"),
    }
    collection = make_collection(name="pydocs", managers=[people["a"]])
    runs = [
        make_run(collection=collection, name="bm25",
                 lists={"q1": ["d001", "d002", "d003"], "q2": ["d010", "d011"]}),
        make_run(collection=collection, name="lsa", lists={"q1": ["d003", "d001"], "q2": ["d011", "d010"]}),
    ]  # fmt: skip
    pool_a = make_pool(collection=collection, runs=runs, name="pa", managers=[people["a"]],
                       raters=[people["rater"]])  # fmt: skip
    pool_b = make_pool(collection=collection, runs=runs, name="pb", managers=[people["b"]],
                       raters=[people["rater"]])  # fmt: skip
    judge(pool_a, people["rater"], GRADES)
    judge(pool_b, people["rater"], GRADES)
    release_a, release_b = releases.create_release(pool=pool_a), releases.create_release(pool=pool_b)
    experiment = experiments.create_experiment(
        name="ab", collection=collection, run_a="bm25", run_b="lsa", length=3, clients=[people["frontend"]]
    )
    serving.clear_caches()
    on_a = track(collection, "on-a", release_a)
    on_b = track(collection, "on-b", release_b)  # an admin's: B's release, A's collection
    return {**people, "collection": collection, "experiment": experiment, "release_a": release_a,
            "release_b": release_b, "on_a": on_a, "on_b": on_b}  # fmt: skip


def track(collection, name: str, release) -> TrackedExperiment:
    return tracking.track_experiment(
        collection=collection, name=name, release=release, metric="ndcg_cut_10", baseline="bm25",
        treatment="lsa", online_metric="ctr", online_delta=0.01,
    )  # fmt: skip


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- 1. writes are for the collection's managers


def test_it_lets_a_reader_of_the_collection_read_an_interleaving_experiment(world):
    for user in ("a", "b", "admin"):
        assert client_for(world[user]).get("/api/interleaving/ab/").status_code == 200, user
        assert [e["name"] for e in client_for(world[user]).get("/api/interleaving/").json()["results"]] == [
            "ab"
        ]
    experiments.compute_result(experiment=world["experiment"])  # a GET reads one, computes none
    assert client_for(world["b"]).get("/api/interleaving/ab/result/").status_code == 200
    assert client_for(world["rater"]).get("/api/interleaving/ab/").status_code == 403


@pytest.mark.parametrize(
    "body",
    [{"active": False}, {"clients": ["manager-b"]}, {"description": "taken over"}],
    ids=["switch-off", "clients", "description"],
)
def test_it_refuses_a_reader_who_changes_an_interleaving_experiment(world, body):
    response = client_for(world["b"]).patch("/api/interleaving/ab/", body, format="json")
    assert response.status_code == 404, response.content
    experiment = InterleavingExperiment.objects.get(name="ab")
    assert experiment.active and experiment.description == ""
    assert list(experiment.clients.values_list("username", flat=True)) == ["frontend"]
    assert client_for(world["rater"]).patch("/api/interleaving/ab/", body, format="json").status_code == 403


@pytest.mark.parametrize("user", ["a", "admin"])
def test_it_lets_the_collections_managers_change_an_interleaving_experiment(world, user):
    response = client_for(world[user]).patch(
        "/api/interleaving/ab/", {"active": False, "description": "paused"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert (response.json()["active"], response.json()["description"]) == (False, "paused")


def test_it_lets_only_the_collections_managers_compute_a_result(world):
    assert client_for(world["b"]).post("/api/interleaving/ab/result/").status_code == 404
    assert not world["experiment"].results.exists()
    assert client_for(world["rater"]).post("/api/interleaving/ab/result/").status_code == 403
    for user in ("a", "admin"):
        assert client_for(world[user]).post("/api/interleaving/ab/result/").status_code == 200, user
    assert world["experiment"].results.count() == 2


def test_it_lets_a_reader_neither_fetch_lists_nor_log_impressions(world):
    """The search path is for the experiment's clients and the collection's managers (README)."""
    query = {"qid": "q1", "user": "s1"}
    assert client_for(world["b"]).get("/api/interleaving/ab/ranking/", query).status_code == 404
    shown = serving.serve(experiment=world["experiment"], qid="q1", user="s1")
    body = {"qid": "q1", "user": "s1", "docids": shown.docids, "teams": shown.teams, "clicks": [1]}
    refused = client_for(world["b"]).post("/api/interleaving/ab/impressions/", body, format="json")
    assert refused.status_code == 404 and not InterleavedImpression.objects.exists()
    for user in ("frontend", "a", "admin"):
        assert client_for(world[user]).get("/api/interleaving/ab/ranking/", query).status_code == 200, user
        logged = client_for(world[user]).post("/api/interleaving/ab/impressions/", body, format="json")
        assert logged.status_code == 201, (user, logged.content)


def test_it_refuses_a_reader_who_changes_or_deletes_a_tracked_experiment(world):
    on_b = world["on_b"]  # B reads it: scored on B's own release, in a collection B only reads
    assert client_for(world["b"]).get(f"/api/tracker/{on_b.pk}/").status_code == 200
    patch = {"online_metric": "ctr", "online_delta": -0.5}
    assert client_for(world["b"]).patch(f"/api/tracker/{on_b.pk}/", patch, format="json").status_code == 404
    assert client_for(world["b"]).delete(f"/api/tracker/{on_b.pk}/").status_code == 404
    on_b.refresh_from_db()
    assert on_b.online_delta == 0.01
    assert client_for(world["rater"]).delete(f"/api/tracker/{on_b.pk}/").status_code == 403
    admin = client_for(world["admin"])
    assert admin.patch(f"/api/tracker/{on_b.pk}/", patch, format="json").status_code == 200
    assert admin.delete(f"/api/tracker/{on_b.pk}/").status_code == 204


def test_it_lets_the_collections_manager_change_and_delete_their_tracked_experiment(world):
    on_a, client = world["on_a"], client_for(world["a"])
    patched = client.patch(f"/api/tracker/{on_a.pk}/", {"online_metric": "ctr", "online_delta": -0.5},
                           format="json")  # fmt: skip
    assert patched.status_code == 200 and patched.json()["online_delta"] == -0.5
    assert client.delete(f"/api/tracker/{on_a.pk}/").status_code == 204
    assert not TrackedExperiment.objects.filter(pk=on_a.pk).exists()


def test_it_shows_the_compute_button_only_to_those_who_may_press_it(world):
    page = "/online/interleaving/ab/"
    reader = logged_in(world["b"]).get(page)
    assert reader.status_code == 200 and "/compute/" not in reader.content.decode()
    for user in ("a", "admin"):
        assert "/online/interleaving/ab/compute/" in logged_in(world[user]).get(page).content.decode()


def test_it_refuses_a_reader_who_computes_a_result_from_the_page(world):
    assert logged_in(world["b"]).post("/online/interleaving/ab/compute/").status_code == 404
    assert logged_in(world["rater"]).post("/online/interleaving/ab/compute/").status_code == 403
    assert not world["experiment"].results.exists()
    response = logged_in(world["a"]).post("/online/interleaving/ab/compute/")
    assert response.status_code == 302 and world["experiment"].results.count() == 1


# --- 2. a tracked experiment is seen by those who may open its release


def test_it_shows_a_tracked_experiment_only_to_those_who_may_open_its_release(world):
    on_a, on_b = world["on_a"], world["on_b"]
    seen = {user: [e["name"] for e in client_for(world[user]).get("/api/tracker/").json()["results"]]
            for user in ("a", "b", "admin")}  # fmt: skip
    assert seen == {"a": ["on-a"], "b": ["on-b"], "admin": ["on-a", "on-b"]}
    assert client_for(world["b"]).get(f"/api/tracker/{on_a.pk}/").status_code == 404
    assert client_for(world["a"]).get(f"/api/tracker/{on_b.pk}/").status_code == 404
    assert client_for(world["rater"]).get("/api/tracker/").status_code == 403


def test_it_correlates_only_the_experiments_whose_release_the_viewer_may_open(world):
    correlated = client_for(world["b"]).get("/api/tracker/correlation/").json()
    assert [e["name"] for group in correlated for e in group["experiments"]] == ["on-b"]


def test_it_leaves_other_releases_figures_off_the_tracker_page(world):
    world["on_a"].offline_delta = 0.123456
    world["on_a"].save()
    page = logged_in(world["b"]).get("/online/tracker/").content.decode()
    assert "on-b" in page and "on-a" not in page and "0.1235" not in page
    assert "0.1235" in logged_in(world["a"]).get("/online/tracker/").content.decode()


def test_it_keeps_a_tracked_experiment_whose_release_is_gone_for_the_collections_managers(world):
    TrackedExperiment.objects.filter(pk=world["on_b"].pk).update(release=None)
    assert set(TrackedExperiment.objects.visible_to(world["a"])) == {world["on_a"], world["on_b"]}
    assert set(TrackedExperiment.objects.visible_to(world["b"])) == set()
    assert set(TrackedExperiment.objects.managed_by(world["a"])) == {world["on_a"], world["on_b"]}


# --- 3. runs are scored on releases the caller may open


def tracked_body(release, name: str = "x") -> dict[str, Any]:
    return {"collection": "pydocs", "name": name, "release": release.pk, "baseline": "bm25",
            "treatment": "lsa"}  # fmt: skip


def test_it_refuses_to_score_runs_on_a_release_of_a_pool_the_caller_does_not_manage(world):
    assert client_for(world["a"]).get(f"/api/releases/{world['release_b'].pk}/").status_code == 404
    response = client_for(world["a"]).post("/api/tracker/", tracked_body(world["release_b"]), format="json")
    assert response.status_code == 400 and "release" in response.json()
    assert "offline_delta" not in response.content.decode()
    assert not TrackedExperiment.objects.filter(name="x").exists()


def test_it_scores_runs_on_a_release_the_caller_may_open(world):
    created = client_for(world["a"]).post("/api/tracker/", tracked_body(world["release_a"]), format="json")
    assert created.status_code == 201, created.content
    by_admin = tracked_body(world["release_b"], "y")
    admin = client_for(world["admin"]).post("/api/tracker/", by_admin, format="json")
    assert admin.status_code == 201, admin.content
    # B manages pb's release, not the collection: only the collection's managers track its changes
    by_b = client_for(world["b"]).post("/api/tracker/", tracked_body(world["release_b"], "z"), format="json")
    assert by_b.status_code == 400 and "collection" in by_b.json()


def test_it_offers_and_takes_in_the_form_only_releases_the_manager_may_open(world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world["a"])
    page = client.get("/online/tracker/new/?collection=pydocs").content.decode()
    assert f'value="{world["release_a"].pk}"' in page and f'value="{world["release_b"].pk}"' not in page
    assert "of pb (id" not in page and "of pa (id" in page  # "release N of POOL (id M)"
    fields = {**tracked_body(world["release_b"]), "metric": "ndcg_cut_10",
              "csrfmiddlewaretoken": client.cookies["csrftoken"].value}  # fmt: skip
    refused = client.post("/online/tracker/new/", fields)
    assert refused.status_code == 400 and not TrackedExperiment.objects.filter(name="x").exists()
    assert "no release of that id" in refused.content.decode()


# --- 4. names the API's routes use


def test_it_refuses_an_interleaving_experiment_named_as_an_api_route(world):
    body = {"name": "power", "collection": "pydocs", "run_a": "bm25", "run_b": "lsa"}
    response = client_for(world["a"]).post("/api/interleaving/", body, format="json")
    assert response.status_code == 400 and "name" in response.json(), response.content
    assert not InterleavingExperiment.objects.filter(name="power").exists()
    # the page's form sends its fields through the same check
    client = Client(enforce_csrf_checks=True)
    client.force_login(world["a"])
    client.get("/online/new-interleaving/")
    token = client.cookies["csrftoken"].value
    page = client.post("/online/new-interleaving/", {**body, "length": "5", "csrfmiddlewaretoken": token})
    assert page.status_code == 400 and not InterleavingExperiment.objects.filter(name="power").exists()
    # a name that merely starts like one is free, and reachable
    free = client_for(world["a"]).post("/api/interleaving/", {**body, "name": "power-2"}, format="json")
    assert free.status_code == 201
    assert client_for(world["a"]).get("/api/interleaving/power-2/").json()["name"] == "power-2"


def test_it_reserves_every_route_the_router_puts_beside_an_experiments_name():
    beside_names = {a.url_path for a in InterleavingViewSet.get_extra_actions() if not a.detail}
    assert beside_names and beside_names <= experiments.RESERVED_NAMES

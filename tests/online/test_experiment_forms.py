"""The pages' forms that create an interleaving experiment and a tracked experiment: the API's checks
(`online.experiment_input`), shown beside the fields, and who may use them."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from online.experiment_models import InterleavingExperiment, TrackedExperiment
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

NEW = "/online/new-interleaving/"
TRACK = "/online/tracker/new/"


def logged_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def post(client: Client, url: str, data: dict) -> object:
    """A POST carrying the CSRF token the form's page gave, as a browser sends it."""
    client.get(url)
    return client.post(url, {**data, "csrfmiddlewaretoken": client.cookies["csrftoken"].value})


@pytest.fixture
def world(db, manager, rater):
    from judgements import releases

    other = make_user("other-manager")
    other.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    make_collection(name="sports", managers=[other])
    collection = make_collection(name="news", managers=[manager])
    runs = [
        make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002", "d003"]}),
        make_run(collection=collection, name="beta", lists={"q1": ["d003", "d001", "d004"]}),
    ]
    pool = make_pool(collection=collection, runs=runs, name="news-pool", managers=[manager], raters=[rater])
    judge(pool, rater, {("q1", "d001"): 2, ("q1", "d003"): 1})
    release = releases.create_release(pool=pool)
    make_user("frontend")
    return {"other": other, "release": release}


FIELDS = {"collection": "news", "name": "alpha-vs-beta", "run_a": "alpha", "run_b": "beta", "length": "5",
          "method": "team_draft", "identical_prefix": "on", "clients": "frontend",
          "description": "first"}  # fmt: skip


def test_it_creates_an_interleaving_experiment_from_the_form(world, manager):
    client = logged_in(manager)
    page = client.get(NEW, {"collection": "news"}).content.decode()
    assert 'value="alpha"' in page and 'value="beta"' in page and "csrfmiddlewaretoken" in page
    response = post(client, NEW, FIELDS)
    assert response.status_code == 302 and response["Location"] == "/online/interleaving/alpha-vs-beta/"
    experiment = InterleavingExperiment.objects.get()
    assert (experiment.run_a.name, experiment.run_b.name, experiment.length) == ("alpha", "beta", 5)
    assert experiment.identical_prefix and experiment.created_by == manager
    assert list(experiment.clients.values_list("username", flat=True)) == ["frontend"]


def test_it_shows_the_services_refusals_beside_their_fields(world, manager):
    client = logged_in(manager)
    same = post(client, NEW, {**FIELDS, "run_b": "alpha", "clients": "frontend nobody"})
    assert same.status_code == 400
    assert "no user named &#x27;nobody&#x27;" in same.content.decode()
    post(client, NEW, FIELDS)
    again = post(client, NEW, {**FIELDS, "run_b": "alpha"}).content.decode()
    assert "exists already" in again and "run_b must differ from run_a" in again
    bad = post(client, NEW, {**FIELDS, "name": "not a slug", "length": "500"}).content.decode()
    assert "slug" in bad and "100" in bad
    assert InterleavingExperiment.objects.count() == 1


def test_it_refuses_a_post_without_the_csrf_token(world, manager):
    assert logged_in(manager).post(NEW, FIELDS).status_code == 403
    assert not InterleavingExperiment.objects.exists()


def test_it_lets_no_manager_of_another_collection_pick_its_runs(world):
    client = logged_in(world["other"])
    page = client.get(NEW, {"collection": "news"}).content.decode()
    assert 'value="alpha"' not in page and ">news<" not in page
    response = post(client, NEW, FIELDS)
    assert response.status_code == 400
    assert "no collection of that name that you manage" in response.content.decode()
    assert not InterleavingExperiment.objects.exists()
    assert post(client, TRACK, {"collection": "news", "name": "x", "release": world["release"].pk,
                                "baseline": "alpha", "treatment": "beta"}).status_code == 400  # fmt: skip
    assert not TrackedExperiment.objects.exists()


@pytest.mark.parametrize("url", [NEW, TRACK])
def test_it_sends_anonymous_users_to_log_in_and_refuses_raters(world, rater, url):
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert logged_in(rater).get(url).status_code == 403
    assert Client().post(url, FIELDS).status_code in (302, 403)
    assert not InterleavingExperiment.objects.exists()


def test_it_tracks_an_experiment_from_the_form(world, manager):
    client = logged_in(manager)
    page = client.get(TRACK).content.decode()  # the only collection the manager has is chosen
    assert f'value="{world["release"].pk}"' in page
    fields = {"collection": "news", "name": "beta over alpha", "release": world["release"].pk,
              "metric": "ndcg_cut_10", "baseline": "alpha", "treatment": "beta", "online_metric": "ctr",
              "online_delta": "0.02", "interleaving": ""}  # fmt: skip
    response = post(client, TRACK, fields)
    assert response.status_code == 302 and response["Location"] == "/online/tracker/?collection=news"
    tracked = TrackedExperiment.objects.get()
    assert (tracked.baseline_name, tracked.treatment_name, tracked.online_delta) == ("alpha", "beta", 0.02)
    refused = post(client, TRACK, {**fields, "name": "other", "online_metric": ""}).content.decode()
    assert "name the online metric" in refused and TrackedExperiment.objects.count() == 1

"""The manager pages of interleaving experiments and of the tracker: what they show, and to whom."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from online import experiments, impressions, serving, tracking
from online.experiment_models import InterleavingResult
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge
from tests.online.test_tracker import OFFLINE, ONLINE


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(db, manager, rater):
    from judgements import releases

    other = make_user("other-manager")
    other.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    collection = make_collection(name="news", managers=[manager])
    runs = [
        make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002", "d003"]}),
        make_run(collection=collection, name="beta", lists={"q1": ["d003", "d001", "d004"]}),
    ]
    pool = make_pool(collection=collection, runs=runs, name="news-pool", managers=[manager], raters=[rater])
    judge(pool, rater, {("q1", "d001"): 2, ("q1", "d003"): 1})
    release = releases.create_release(pool=pool)
    experiment = experiments.create_experiment(name="ab", collection=collection, run_a="alpha", run_b="beta")
    serving.clear_caches()
    for i in range(12):
        shown = serving.serve(experiment=experiment, qid="q1", user=f"u{i}")
        impressions.log_impression(experiment=experiment, qid="q1", user=f"u{i}", docids=shown.docids,
                                   teams=shown.teams, clicks=[1] if i % 3 else [])  # fmt: skip
    # the twelve experiments, their offline deltas stored as the tracker stores them
    for i, (offline, online) in enumerate(zip(OFFLINE, ONLINE, strict=True)):
        tracked = tracking.track_experiment(
            collection=collection, name=f"change-{i + 1}", release=release, metric="ndcg_cut_10",
            baseline="alpha", treatment="beta", online_metric="ctr", online_delta=online,
        )  # fmt: skip
        tracked.offline_delta = offline
        tracked.save()
    return {"other": other}


def test_it_shows_the_tracker_with_its_figures_verdict_and_labelled_points(world, manager):
    page = logged_in(manager).get("/online/tracker/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "0.9089" in text and "0.7004 to 0.9745" in text and "0.6970" in text and "0.8601" in text
    assert "10 / 12" in text and "Offline deltas have predicted online deltas" in text
    assert "<svg" in text and all(f">change-{i}<" in text for i in range(1, 13))


def test_it_says_when_the_offline_metric_is_not_a_decision_tool(world, manager):
    from online.experiment_models import TrackedExperiment

    for tracked, online in zip(TrackedExperiment.objects.order_by("name"), [0.1, -0.1] * 6, strict=True):
        tracking.set_online_delta(experiment=tracked, online_metric="ctr", online_delta=online)
    text = logged_in(manager).get("/online/tracker/").content.decode()
    assert "not a decision tool" in text


def test_it_shows_the_interleaving_result_and_the_power_plan(world, manager):
    client = logged_in(manager)
    assert "No result yet" in client.get("/online/interleaving/ab/").content.decode()
    assert client.post("/online/interleaving/ab/compute/").status_code == 302
    result = InterleavingResult.objects.get()
    assert result.wins_a + result.wins_b + result.ties == 8 and result.no_clicks == 4
    page = client.get("/online/interleaving/ab/", {"delta": "0.05", "tie_share": "0", "click_rate": "1"})
    text = page.content.decode()
    assert f"{result.p_value:.4f}" in text and "Per query" in text
    assert "786 impressions" in text  # plan_power(0.05): 786 decisive impressions, all clicked
    bad = client.get("/online/interleaving/ab/", {"delta": "0"}).content.decode()
    assert "delta must be between" in bad
    assert "ab" in client.get("/online/interleaving/").content.decode()


def test_it_shows_nothing_of_it_to_raters_or_other_managers(world, rater):
    for url in ("/online/tracker/", "/online/interleaving/", "/online/interleaving/ab/"):
        assert logged_in(rater).get(url).status_code == 403
    other = logged_in(world["other"])
    assert other.get("/online/interleaving/ab/").status_code == 404
    assert "change-1" not in other.get("/online/tracker/").content.decode()
    assert ">ab<" not in other.get("/online/interleaving/").content.decode()


def test_the_planner_says_where_its_shares_come_from(world, manager):
    """With no result the shares are placeholders (every impression clicked, none tied) and the page says
    so; with a result they start as its traffic (8 of 12 impressions clicked, none tied), named."""
    client = logged_in(manager)
    before = client.get("/online/interleaving/ab/").content.decode()
    assert "No traffic yet: the shares start as placeholders" in before
    assert client.post("/online/interleaving/ab/compute/").status_code == 302
    after = client.get("/online/interleaving/ab/").content.decode()
    assert "No traffic yet" not in after
    assert "traffic so far: 12 impressions, a share 0.667 of them with a click, 0.0 of those tied" in after

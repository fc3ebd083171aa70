"""The tracker takes an interleaving result only of the change it tracks (its two runs exactly the baseline
and the treatment), says which result an online delta is and when a newer one exists; a GET of an
interleaving result writes nothing; the deltas import command names each file once."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from online import experiments, impressions, serving, tracking
from online.experiment_models import InterleavingResult, TrackedExperiment
from tests.conftest import client_for
from tests.online import conftest as online_fixtures

BODY = {"collection": "news", "name": "beta over alpha", "metric": "P_5", "baseline": "alpha",
        "treatment": "beta"}  # fmt: skip

# the online tests' fixtures: their world (a judged pool of runs alpha, beta, gamma and its release)
world = online_fixtures.world
fresh_interleaving_caches = online_fixtures.fresh_interleaving_caches
pytestmark = pytest.mark.usefixtures("fast_passwords")


def with_result(world, name: str, run_a: str, run_b: str, *, clicks_on: str = "A") -> InterleavingResult:
    """An interleaving experiment of `run_a` and `run_b` whose searchers click `clicks_on`'s document."""
    experiment = experiments.create_experiment(
        name=name, collection=world["collection"], run_a=run_a, run_b=run_b, length=3
    )
    serving.clear_caches()
    log(experiment, clicks_on)
    return experiments.compute_result(experiment=experiment, resamples=50)


def log(experiment, clicks_on: str, users: range = range(8)) -> None:
    for i in users:
        shown = serving.serve(experiment=experiment, qid="q1", user=f"u{i}")
        clicks = [shown.teams.index(clicks_on) + 1] if clicks_on in shown.teams else []
        impressions.log_impression(experiment=experiment, qid="q1", user=f"u{i}", docids=shown.docids,
                                   teams=shown.teams, clicks=clicks)  # fmt: skip


def test_it_refuses_an_interleaving_result_of_another_change(world, manager):
    with_result(world, "gamma-vs-beta", "beta", "gamma")  # serves the treatment, but against gamma
    api = client_for(manager)
    body = {**BODY, "release": world["release"].pk, "interleaving": "gamma-vs-beta"}
    created = api.post("/api/tracker/", body, format="json")
    assert created.status_code == 400, created.content
    (message,) = created.json()["interleaving"]
    assert "'beta' with 'gamma'" in message and "baseline 'alpha'" in message
    assert not TrackedExperiment.objects.exists()
    # entered later: the same refusal
    tracked = tracking.track_experiment(collection=world["collection"], release=world["release"],
                                        **{k: v for k, v in BODY.items() if k != "collection"})  # fmt: skip
    patched = api.patch(f"/api/tracker/{tracked.pk}/", {"interleaving": "gamma-vs-beta"}, format="json")
    assert patched.status_code == 400 and "interleaving" in patched.json()
    tracked.refresh_from_db()
    assert tracked.online_delta is None and tracked.interleaving_id is None
    # the command says it beside the field
    with pytest.raises(CommandError, match=r"^interleaving: the interleaving experiment 'gamma-vs-beta'"):
        call_command("track_experiment", "other", "--collection", "news",
                     "--release", str(world["release"].pk), "--metric", "P_5", "--baseline", "alpha",
                     "--treatment", "beta", "--interleaving", "gamma-vs-beta")  # fmt: skip


def test_it_offers_only_experiments_of_the_baseline_and_the_treatment(world, manager):
    with_result(world, "gamma-vs-beta", "beta", "gamma")
    with_result(world, "alpha-vs-beta", "beta", "alpha")
    tracked = tracking.track_experiment(collection=world["collection"], release=world["release"],
                                        **{k: v for k, v in BODY.items() if k != "collection"})  # fmt: skip
    page = Client()
    page.force_login(manager)
    online = page.get(f"/online/tracker/{tracked.pk}/online/").content.decode()
    assert 'value="alpha-vs-beta"' in online and 'value="gamma-vs-beta"' not in online
    chosen = page.get("/online/tracker/new/?collection=news&baseline=alpha&treatment=beta").content.decode()
    assert 'value="alpha-vs-beta"' in chosen and 'value="gamma-vs-beta"' not in chosen
    # before the runs are chosen: every experiment, named with its two runs
    fresh = page.get("/online/tracker/new/?collection=news").content.decode()
    assert "alpha-vs-beta (beta and alpha)" in fresh and "gamma-vs-beta (beta and gamma)" in fresh


def test_it_says_which_result_the_online_delta_is_and_when_a_newer_exists(world, manager):
    first = with_result(world, "ab", "beta", "alpha", clicks_on="A")  # the treatment (A) preferred
    tracked = tracking.track_experiment(collection=world["collection"], release=world["release"],
                                        interleaving=first,
                                        **{k: v for k, v in BODY.items() if k != "collection"})  # fmt: skip
    api = client_for(manager)
    body = api.get(f"/api/tracker/{tracked.pk}/").json()
    assert body["interleaving_result"] == {
        "id": first.pk, "experiment": "ab", "computed_at": first.computed_at.isoformat(),
        "source": "impressions logged back", "latest": first.pk, "newer": False,
    }  # fmt: skip
    # more searchers, who click the baseline: the latest result turns, the tracked delta stays the first's
    log(first.experiment, "B", range(8, 40))
    latest = experiments.compute_result(experiment=first.experiment, resamples=50)
    assert (latest.delta_ab or 0) < 0 < (first.delta_ab or 0)
    body = api.get(f"/api/tracker/{tracked.pk}/").json()
    assert body["interleaving_result"]["id"] == first.pk and body["online_delta"] == first.delta_ab
    assert body["interleaving_result"]["newer"] is True and body["interleaving_result"]["latest"] == latest.pk
    page = Client()
    page.force_login(manager)
    html = page.get("/online/tracker/?collection=news").content.decode()
    assert f"result {first.pk} of ab, computed {first.computed_at:%Y-%m-%d %H:%M}" in html
    assert f"ab has a newer result ({latest.pk})" in html
    action = re.search(r'<form method="post" action="([^"]+)" class="inline-form">', html)
    assert action and action.group(1) == f"/online/tracker/{tracked.pk}/online/"
    assert '<input type="hidden" name="interleaving" value="ab">' in html
    # the one click: the form's one field, posted
    assert page.post(action.group(1), {"interleaving": "ab"}).status_code == 302
    tracked.refresh_from_db()
    assert tracked.interleaving_id == latest.pk and tracked.online_delta == latest.delta_ab
    assert api.get(f"/api/tracker/{tracked.pk}/").json()["interleaving_result"]["newer"] is False
    assert "has a newer result" not in page.get("/online/tracker/?collection=news").content.decode()
    # an entered delta names no result
    entered = api.patch(f"/api/tracker/{tracked.pk}/", {"online_metric": "ctr", "online_delta": 0.1},
                        format="json")  # fmt: skip
    assert entered.json()["interleaving_result"] is None


def test_a_get_of_an_interleaving_result_writes_nothing(world, manager):
    experiment = experiments.create_experiment(
        name="ab", collection=world["collection"], run_a="beta", run_b="alpha", length=3
    )
    api = client_for(manager)
    response = api.get("/api/interleaving/ab/result/")
    assert response.status_code == 404
    detail = response.json()["detail"]
    assert detail == "interleaving experiment 'ab' has no result yet: POST here computes one"
    assert not InterleavingResult.objects.exists()
    computed = api.post("/api/interleaving/ab/result/", {}, format="json")
    assert computed.status_code == 200
    assert api.get("/api/interleaving/ab/result/").json()["id"] == computed.json()["id"]
    assert InterleavingResult.objects.filter(experiment=experiment).count() == 1


def test_the_interleaving_page_shows_when_it_was_computed_as_other_pages_show_times(world, manager):
    result = with_result(world, "ab", "beta", "alpha")
    page = Client()
    page.force_login(manager)
    html = page.get("/online/interleaving/ab/").content.decode()
    assert f"Computed {result.computed_at:%Y-%m-%d %H:%M} from" in html
    assert result.computed_at.isoformat() not in html


def test_the_deltas_import_command_names_the_file_once(world, tmp_path):
    path = tmp_path / "deltas.tsv"
    path.write_text("# name metric delta\nnobody\tctr\t0.1\n")
    with pytest.raises(CommandError) as refused:
        call_command("import_online_deltas", "news", str(path))
    assert str(refused.value) == f"{path}:2: no tracked experiment named 'nobody'"


def test_the_tracker_reads_no_row_more_per_tracked_interleaving_result(world, manager):
    """The tracker's page and the API's list read each tracked experiment's interleaving result, its
    experiment and that experiment's latest result with the experiments themselves
    (`TrackedExperimentQuerySet.for_answers`): one more tracked result costs no query more."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = with_result(world, "ab", "beta", "alpha", clicks_on="A")
    page = Client()
    page.force_login(manager)
    api = client_for(manager)

    def track(n: int) -> None:
        fields: dict[str, Any] = {k: v for k, v in BODY.items() if k != "collection"}
        fields["name"] = f"change {n}"
        tracking.track_experiment(
            collection=world["collection"], release=world["release"], interleaving=first, **fields
        )

    def queries() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as on_page:
            assert page.get("/online/tracker/?collection=news").status_code == 200
        with CaptureQueriesContext(connection) as on_api:
            assert api.get("/api/tracker/?collection=news").status_code == 200
        return len(on_page), len(on_api)

    track(1)
    one = queries()
    for n in range(2, 6):
        track(n)
    assert queries() == one

"""The offline–online tracker through the services and the API: offline deltas scored by the evaluation
app on a release, online deltas entered, imported or taken from an interleaving result, the correlation,
bad input, and who may see what."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytrec_eval
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client

from online import experiments, impressions, serving, tracker, tracking
from online.experiment_models import TrackedExperiment
from tests.conftest import client_for
from tests.factories import make_manager


def trec_eval_delta(release, metric: str) -> float:
    """The delta as pytrec_eval (trec_eval's C code) scores the release's qrels.txt."""
    qrels: dict[str, dict[str, int]] = {}
    for line in (Path(settings.MEDIA_ROOT) / release.directory / "qrels.txt").read_text().splitlines():
        qid, _, docid, grade = line.split()
        qrels.setdefault(qid, {})[docid] = int(grade)
    runs = {
        "alpha": {"q1": {"d001": 3, "d002": 2, "d003": 1}, "q2": {"d010": 1}},
        "beta": {"q1": {"d003": 3, "d001": 2, "d004": 1}, "q2": {"d011": 2, "d010": 1}},
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {metric})
    means = {}
    for name, run in runs.items():
        scores = evaluator.evaluate(run)
        means[name] = sum(s[metric] for s in scores.values()) / len(scores)
    return means["beta"] - means["alpha"]


def test_it_scores_the_offline_delta_as_trec_eval_does(world, manager):
    response = client_for(manager).post(
        "/api/tracker/",
        {"collection": "news", "name": "beta over alpha", "release": world["release"].pk,
         "metric": "ndcg_cut.10", "baseline": "alpha", "treatment": "beta", "online_metric": "ctr",
         "online_delta": 0.012},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["metric"] == "ndcg_cut_10" and data["offline_topics"] == 2
    assert data["offline_delta"] == pytest.approx(trec_eval_delta(world["release"], "ndcg_cut_10"), abs=1e-9)
    assert data["offline_delta"] == pytest.approx(data["offline_treatment"] - data["offline_baseline"])
    assert data["online_delta"] == 0.012 and data["online_metric"] == "ctr"


@pytest.mark.parametrize(
    "change, field",
    [
        ({"metric": "nonsense_at_3"}, "metric"),
        ({"baseline": "ghost"}, "baseline"),
        ({"treatment": "alpha"}, "treatment"),
        ({"release": 999}, "release"),
        ({"collection": "elsewhere"}, "collection"),
        ({"online_delta": "NaN"}, "online_delta"),
        ({"online_delta": 0.1, "online_metric": ""}, "online_metric"),
        ({"interleaving": "nope"}, "interleaving"),
    ],
)
def test_it_refuses_a_bad_experiment_naming_the_field(world, manager, change, field):
    body = {"collection": "news", "name": "x", "release": world["release"].pk, "baseline": "alpha",
            "treatment": "beta"}  # fmt: skip
    response = client_for(manager).post("/api/tracker/", {**body, **change}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert not TrackedExperiment.objects.exists()


def test_it_takes_the_treatments_interleaving_preference_as_the_online_delta(world, manager):
    experiment = experiments.create_experiment(
        name="ab", collection=world["collection"], run_a="beta", run_b="alpha", length=3
    )
    serving.clear_caches()
    for i in range(10):
        shown = serving.serve(experiment=experiment, qid="q1", user=f"u{i}")
        clicks = [shown.teams.index("A") + 1] if "A" in shown.teams else []
        impressions.log_impression(experiment=experiment, qid="q1", user=f"u{i}", docids=shown.docids,
                                   teams=shown.teams, clicks=clicks)  # fmt: skip
    result = experiments.compute_result(experiment=experiment, resamples=100)
    tracked = tracking.track_experiment(
        collection=world["collection"], name="beta", release=world["release"], metric="P_5",
        baseline="alpha", treatment="beta", interleaving=result,
    )  # fmt: skip
    assert tracked.online_delta == pytest.approx(result.delta_ab) and tracked.online_delta > 0
    assert tracked.online_metric == tracking.INTERLEAVING_METRIC
    # the same result, read for a treatment that is run B: the sign turns
    gamma = tracking.track_experiment(
        collection=world["collection"], name="alpha", release=world["release"], metric="P_5",
        baseline="beta", treatment="alpha", interleaving=result,
    )  # fmt: skip
    assert gamma.online_delta == pytest.approx(-result.delta_ab)
    with pytest.raises(ValidationError) as refused:
        tracking.track_experiment(
            collection=world["collection"], name="g", release=world["release"], metric="P_5",
            baseline="alpha", treatment="gamma", interleaving=result,
        )  # fmt: skip
    assert "interleaving" in refused.value.message_dict


def _track_many(world, online: list[float | None]) -> list[TrackedExperiment]:
    tracked = []
    for i, delta in enumerate(online):
        baseline, treatment = [("alpha", "beta"), ("beta", "alpha"), ("alpha", "gamma")][i % 3]
        tracked.append(
            tracking.track_experiment(
                collection=world["collection"], name=f"e{i}", release=world["release"], metric="ndcg_cut_10",
                baseline=baseline, treatment=treatment, online_metric="ctr" if delta is not None else "",
                online_delta=delta,
            )
        )  # fmt: skip
    return tracked


def test_it_correlates_per_metric_pair_and_gives_a_verdict(world, manager):
    online = [0.2, -0.1, -0.3, 0.21, -0.12, -0.28, None]
    tracked = _track_many(world, online)
    tracking.track_experiment(
        collection=world["collection"], name="other metric", release=world["release"], metric="P_5",
        baseline="alpha", treatment="beta", online_metric="ctr", online_delta=0.5,
    )  # fmt: skip
    response = client_for(manager).get("/api/tracker/correlation/")
    assert response.status_code == 200
    first, second = response.json()
    assert (first["metric"], first["online_metric"], first["n"]) == ("P_5", "ctr", 1)
    assert (second["metric"], second["online_metric"], second["n"]) == ("ndcg_cut_10", "ctr", 6)
    expected = tracker.correlate([t.offline_delta for t in tracked[:6]], online[:6])
    assert second["pearson"] == pytest.approx(expected.pearson)
    assert second["kendall_tau_b"] == pytest.approx(expected.kendall_tau_b)
    assert second["verdict"] == expected.verdict
    assert client_for(world["other"]).get("/api/tracker/correlation/").json() == []


def test_it_imports_online_deltas_atomically_with_errors_by_line(world, manager, tmp_path):
    _track_many(world, [None, None])
    client = client_for(manager)
    bad = SimpleUploadedFile("ab.tsv", b"e0\tctr\t0.1\ne1\tctr\tlots\nghost\tctr\t0.2\n\ne0\tctr\t0.3\n")
    response = client.post("/api/tracker/import/", {"collection": "news", "file": bad}, format="multipart")
    assert response.status_code == 400
    assert response.json()["file"] == [
        "ab.tsv:2: online delta 'lots' is not a number",
        "ab.tsv:3: no tracked experiment named 'ghost'",
        "ab.tsv:5: 'e0' again (first at line 1)",
    ]
    assert not TrackedExperiment.objects.filter(online_delta__isnull=False).exists()
    good = tmp_path / "ab.tsv"
    good.write_text("# name\tmetric\tdelta\ne0\tctr\t0.1\ne1\tctr\t-0.05\n")
    call_command("import_online_deltas", "news", str(good))
    assert sorted(TrackedExperiment.objects.values_list("online_delta", flat=True)) == [-0.05, 0.1]


def test_it_shows_tracked_experiments_only_to_their_managers(world, manager, rater):
    (tracked,) = _track_many(world, [0.1])
    assert client_for(manager).get(f"/api/tracker/{tracked.pk}/").status_code == 200
    assert client_for(world["other"]).get(f"/api/tracker/{tracked.pk}/").status_code == 404
    assert client_for(rater).get(f"/api/tracker/{tracked.pk}/").status_code == 403
    assert client_for(rater).get("/api/tracker/").status_code == 403
    patched = client_for(manager).patch(
        f"/api/tracker/{tracked.pk}/", {"online_metric": "ctr", "online_delta": -0.2}, format="json"
    )
    assert patched.status_code == 200 and patched.json()["online_delta"] == -0.2
    assert client_for(world["other"]).delete(f"/api/tracker/{tracked.pk}/").status_code == 404
    assert client_for(manager).delete(f"/api/tracker/{tracked.pk}/").status_code == 204


def test_the_deltas_command_names_a_missing_file_or_a_directory(world, tmp_path):
    # Both were tracebacks (FileNotFoundError, IsADirectoryError).
    for target, problem in ((tmp_path / "nowhere.tsv", "file not found"), (tmp_path, "not a file")):
        with pytest.raises(CommandError) as info:
            call_command("import_online_deltas", "news", str(target))
        assert f"{target}: {problem}" in str(info.value)


def test_it_shows_how_much_of_each_runs_top_ten_the_release_judged(world, manager):
    # The offline delta counts what the release did not judge as non-relevant; an audit found nothing on
    # the tracker saying how much that was (the demo's runs: a fifth of their top 10 judged).
    (tracked,) = _track_many(world, [0.1])
    judged: dict[str, set[str]] = {}
    for line in (
        (Path(settings.MEDIA_ROOT) / world["release"].directory / "qrels.txt").read_text().splitlines()
    ):
        qid, _, docid, grade = line.split()
        if int(grade) >= 0:
            judged.setdefault(qid, set()).add(docid)
    lists = {"alpha": {"q1": ["d001", "d002", "d003"], "q2": ["d010"]},
             "beta": {"q1": ["d003", "d001", "d004"], "q2": ["d011", "d010"]}}  # fmt: skip
    shares = [
        sum(len(set(docs[:10]) & judged.get(qid, set())) / 10 for qid, docs in run.items()) / len(run)
        for run in lists.values()
    ]
    data = client_for(manager).get(f"/api/tracker/{tracked.pk}/").json()
    assert data["offline_judged_10"] == pytest.approx(min(shares)) and 0 < min(shares) < 0.8
    browser = Client()
    browser.force_login(manager)
    page = browser.get("/online/tracker/").content.decode()
    assert f'class="num judged warning">{min(shares):.2f}<' in page


def test_online_deltas_reach_only_experiments_the_importer_may_change(world, manager):
    # A co-manager of the collection who does not manage the release's pool sees no such experiment; the
    # import by name reached it all the same.
    _track_many(world, [None])
    co = make_manager("co-manager")
    world["collection"].managers.add(co)
    upload = SimpleUploadedFile("d.tsv", b"e0\tctr\t0.1\n")
    response = client_for(co).post(
        "/api/tracker/import/", {"collection": "news", "file": upload}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["file"] == ["d.tsv:1: no tracked experiment named 'e0'"]
    assert TrackedExperiment.objects.get(name="e0").online_delta is None


def test_it_names_an_unreadable_release_file_by_its_name_never_its_path(world, manager):
    qrels = Path(settings.MEDIA_ROOT) / world["release"].directory / "qrels.txt"
    qrels.unlink()
    qrels.write_text("")
    response = client_for(manager).post(
        "/api/tracker/",
        {"collection": "news", "name": "beta over alpha", "release": world["release"].pk,
         "metric": "ndcg_cut.10", "baseline": "alpha", "treatment": "beta"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 400
    assert response.json()["release"] == [
        f"release {world['release'].pk} has no readable qrels: qrels.txt: file is empty"
    ]
    assert str(settings.MEDIA_ROOT) not in response.content.decode()
    assert not TrackedExperiment.objects.exists()

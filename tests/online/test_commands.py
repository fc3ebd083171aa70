"""The online app's commands on small real data: what each prints and what it stores (their refusals of
what they cannot find are in test_command_lookups)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from scipy import stats

from online import tracker
from online.experiment_models import InterleavingExperiment, TrackedExperiment
from online.models import ClickLabel, ClickLabelSet, ClickRelease, PropensityEstimate
from tests.factories import make_user
from tests.online.helpers import judged_pool, pool_log
from tests.online.test_click_labels import THETA5, pages_for
from tests.online.test_tracker_api import _track_many, trec_eval_delta


def run(*argv: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*argv, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def click_log(db, tmp_path):
    pool = judged_pool(grades={"d001": 3, "d003": 2, "d010": 1})
    docs = {"q1": ["d001", "d003", "d002", "d004"], "q2": ["d010", "d011", "d013"]}
    return pool_log(tmp_path, pool, pages_for(docs, {"q1": [1, 2], "q2": [1]}, repeat=100))  # all seen enough


def test_estimate_propensity_stores_the_given_theta_and_prints_it(click_log):
    out, _ = run("estimate_propensity", str(click_log.pk), "--method", "given", "--theta", "1, 0.5,0.25",
                 "--name", "by hand")  # fmt: skip
    estimate = PropensityEstimate.objects.get(log=click_log)
    assert (estimate.name, estimate.method, estimate.theta) == ("by hand", "given", [1.0, 0.5, 0.25])
    assert out == f"propensity {estimate.pk} (given): θ = 1.0000 0.5000 0.2500\n"


def test_estimate_propensity_refuses_a_theta_that_is_not_numbers_and_stores_nothing(click_log):
    with pytest.raises(CommandError, match="--theta: numbers, comma separated"):
        run("estimate_propensity", str(click_log.pk), "--method", "given", "--theta", "1,half")
    assert not PropensityEstimate.objects.exists()


def test_click_labels_derives_grades_prints_the_agreement_and_releases_them(click_log):
    estimate = PropensityEstimate.objects.create(
        log=click_log, collection=click_log.collection, name="given", method="given", theta=THETA5
    )
    out, _ = run("click_labels", str(click_log.pk), "--propensity", str(estimate.pk),
                 "--thresholds", "0.2:1,0.6:2,0.9:3", "--release")  # fmt: skip
    label_set = ClickLabelSet.objects.get(log=click_log)
    assert (label_set.estimator, label_set.propensity_id) == ("ips", estimate.pk)
    # seven (topic, document) pairs were shown: d001 d003 d002 d004 of q1 and d010 d011 d013 of q2
    assert ClickLabel.objects.filter(label_set=label_set).count() == 7
    gate = label_set.agreement
    release = ClickRelease.objects.get(label_set=label_set)
    assert out.splitlines() == [
        f"click labels {label_set.pk}: 7 (topic, document) pairs",
        f"agreement with humans over 7 pairs: kappa {gate['kappa']}, alpha (ordinal) {gate['alpha_ordinal']}",
        f"click-label release {release.pk}: {release.directory}",
    ]
    manifest = json.loads((Path(settings.MEDIA_ROOT) / release.directory / "manifest.json").read_text())
    assert manifest["agreement_with_humans"]["kappa"] == gate["kappa"]


def test_click_labels_without_thresholds_releases_nothing_and_says_why(click_log):
    with pytest.raises(CommandError):
        run("click_labels", str(click_log.pk), "--estimator", "coec", "--release")
    assert not ClickRelease.objects.exists()


def test_track_experiment_stores_the_offline_delta_trec_eval_gives_and_the_online_one(world):
    out, _ = run("track_experiment", "beta vs alpha", "--collection", "news", "--release",
                 str(world["release"].pk), "--metric", "ndcg_cut_10", "--baseline", "alpha", "--treatment",
                 "beta", "--online-metric", "ctr", "--online-delta", "0.02")  # fmt: skip
    tracked = TrackedExperiment.objects.get(name="beta vs alpha")
    assert tracked.offline_delta == pytest.approx(trec_eval_delta(world["release"], "ndcg_cut_10"))
    assert (tracked.baseline_name, tracked.treatment_name, tracked.offline_topics) == ("alpha", "beta", 2)
    assert (tracked.online_metric, tracked.online_delta) == ("ctr", 0.02)
    assert out == (
        f"beta vs alpha: ndcg_cut_10 {tracked.offline_baseline:.4f} → {tracked.offline_treatment:.4f} "
        f"(offline delta {tracked.offline_delta:+.4f} over 2 topics, "
        f"judged@10 {tracked.offline_judged_10:.2f}); online ctr +0.0200\n"
    )


def test_track_experiment_names_the_field_it_refuses_and_stores_nothing(world):
    with pytest.raises(CommandError, match="treatment: the treatment must differ from the baseline"):
        run("track_experiment", "same", "--collection", "news", "--release", str(world["release"].pk),
            "--baseline", "alpha", "--treatment", "alpha")  # fmt: skip
    assert not TrackedExperiment.objects.exists()


def test_tracker_report_prints_the_correlation_of_each_metric_pair(world):
    online = [0.2, -0.1, -0.3, 0.21, -0.12, -0.28, None]
    tracked = _track_many(world, online)
    expected = tracker.correlate([t.offline_delta for t in tracked[:6]], online[:6])
    out, _ = run("tracker_report", "--collection", "news")
    first, verdict = out.splitlines()
    assert first.startswith(f"ndcg_cut_10 against ctr: 6 experiments; Pearson {expected.pearson:.4f}")
    assert f"Kendall τb {expected.kendall_tau_b:.4f}" in first
    assert first.endswith(f"signs agree {expected.signs_agree}/{expected.signs_compared}")
    assert verdict == f"  {expected.verdict}"
    (group,) = json.loads(run("tracker_report", "--json")[0])
    assert (group["metric"], group["online_metric"], group["n"]) == ("ndcg_cut_10", "ctr", 6)
    assert group["pearson"] == pytest.approx(expected.pearson)


def test_tracker_report_says_when_no_experiment_has_an_online_delta(world):
    _track_many(world, [None, None])
    assert run("tracker_report")[0] == "no tracked experiment has an online delta yet\n"


def test_create_interleaving_stores_the_experiment_and_how_to_serve_it(world):
    front = make_user("front-end")
    out, _ = run("create_interleaving", "ab", "--collection", "news", "--a", "alpha", "--b", "beta",
                 "--length", "3", "--no-identical-prefix", "--clients", "front-end")  # fmt: skip
    experiment = InterleavingExperiment.objects.get(name="ab")
    assert (experiment.run_a.name, experiment.run_b.name, experiment.length) == ("alpha", "beta", 3)
    assert (experiment.method, experiment.identical_prefix) == ("team_draft", False)
    assert list(experiment.clients.all()) == [front]
    assert out == (
        "interleaving experiment ab: alpha (A) and beta (B), team_draft, 3 positions; "
        "GET /api/interleaving/ab/ranking/?qid=QID&user=SEARCHER\n"
    )


def test_create_interleaving_refuses_an_unknown_client_and_stores_nothing(world):
    with pytest.raises(CommandError, match="clients: no user named 'nobody'"):
        run("create_interleaving", "ab", "--collection", "news", "--a", "alpha", "--b", "beta",
            "--clients", "nobody")  # fmt: skip
    assert not InterleavingExperiment.objects.exists()


def _sign_test_power(n: int, win_share: float, alpha: float) -> float:
    """The exact two-sided sign test's power on n decisive impressions, from scipy's binomial test."""
    rejected = [k for k in range(n + 1) if stats.binomtest(k, n, 0.5).pvalue <= alpha]
    return float(sum(stats.binom.pmf(k, n, win_share) for k in rejected))


def test_plan_interleaving_prints_impressions_whose_sign_test_has_the_power():
    out, _ = run("plan_interleaving", "--delta", "0.05", "--tie-share", "0.2", "--click-rate", "0.5")
    words = out.split()
    impressions, clicked, decisive = (int(words[i].strip("(").replace(",", "")) for i in (0, 2, 6))
    assert decisive == 0.8 * clicked or clicked == math.ceil(decisive / 0.8)
    assert impressions == math.ceil(clicked / 0.5)
    # A wins a decisive impression with probability 1/2 + 0.05 / (1 - 0.2)
    power = _sign_test_power(decisive, 0.5 + 0.05 / 0.8, 0.05)
    assert power >= 0.8
    assert f"with power {power:.3f} at α = 0.05" in out
    assert 300 < decisive < 700  # the normal approximation: ((1.96·0.5 + 0.84·0.48) / 0.0625)² ≈ 500


def test_plan_interleaving_refuses_an_impossible_delta():
    with pytest.raises(CommandError, match="delta must be between -0.5 and 0.5"):
        run("plan_interleaving", "--delta", "0.7")


@pytest.mark.parametrize(("name", "message"), [("power", "name of an API route"), ("a/b", "valid")])
def test_create_interleaving_refuses_a_name_no_url_can_reach(world, name, message):
    # The command went around the API's checks: 'power' is a route, and a '/' breaks every URL of it.
    with pytest.raises(CommandError, match=message):
        run("create_interleaving", name, "--collection", "news", "--a", "alpha", "--b", "beta")
    assert not InterleavingExperiment.objects.filter(name=name).exists()


def test_estimate_propensity_refuses_more_positions_than_a_page_shows_and_stores_nothing(click_log):
    """θ has one value per position, and a page shows at most MAX_POSITION (1,000): the rule of
    `propensity.validate`, so the command and the page refuse what the API's serializer does."""
    longer = ",".join(["0.5"] * 1001)
    with pytest.raises(CommandError, match="1,001 propensities given; a page shows at most 1,000 positions"):
        run("estimate_propensity", str(click_log.pk), "--method", "given", "--theta", longer)
    assert not PropensityEstimate.objects.exists()
    run("estimate_propensity", str(click_log.pk), "--method", "given", "--theta", ",".join(["0.5"] * 1000))
    assert len(PropensityEstimate.objects.get(log=click_log).theta) == 1000

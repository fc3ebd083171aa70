"""An audit of the online part: what a manager meets on the pages and the commands where a number or a
refusal was wrong (each test fails without its fix)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from online import services
from online.models import ClickLabelSet, ClickRelease
from pooling.models import Job
from tests.online.helpers import judged_pool, pool_log
from tests.online.test_tracker_pages import logged_in

PAGES = [{"session": f"s{i}", "qid": "q1", "docids": ["d001", "d003"], "clicks": [1]} for i in range(6)]


@pytest.fixture
def log(db, manager, tmp_path):
    pool = judged_pool(grades={"d001": 3}, managers=[manager])
    return pool_log(tmp_path, pool, PAGES)


@pytest.mark.parametrize("tau", ["0.5", "nan", "inf", "-3"])
def test_it_refuses_a_bad_tau_on_the_log_page_before_any_job(
    manager, log, tau, django_capture_on_commit_callbacks
):
    estimate = services.estimate_propensity(log=log, method="given", params={"theta": [1, 0.5]})
    client = logged_in(manager)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            f"/online/logs/{log.pk}/labels/", {"estimator": "ips", "propensity": estimate.pk, "tau": tau}
        )
    assert answer.status_code == 400  # the log's page again, with the refusal beside the field
    assert not Job.objects.filter(kind=Job.Kind.CLICK_LABELS).exists()
    assert not ClickLabelSet.objects.exists()
    beside_tau = answer.content.decode().split('name="tau"')[1].split("</label>")[1]
    assert "tau must be a number of at least 1" in beside_tau.split("<label>")[0]


def test_click_labels_refused_release_leaves_no_label_set_behind(log):
    """`click_labels --release` without thresholds fails (exit 1): the label set it derived first is not
    left stored behind the error, nor announced on stdout as made."""
    out = io.StringIO()
    with pytest.raises(CommandError, match="no grades"):
        call_command("click_labels", str(log.pk), "--estimator", "coec", "--release", stdout=out)
    assert not ClickLabelSet.objects.exists() and not ClickRelease.objects.exists()
    assert out.getvalue() == ""


def test_a_manager_enters_a_tracked_experiments_online_delta_from_the_tracker_page(world, manager, rater):
    """The tracker's form says "or neither to enter it later", and its table said "not entered" with no way
    on: the online delta could be entered only through the API or a TSV import."""
    from online import experiments, impressions, serving, tracking
    from online.experiment_models import TrackedExperiment

    tracked = tracking.track_experiment(
        collection=world["collection"], name="beta over alpha", release=world["release"], metric="P_5",
        baseline="alpha", treatment="beta",
    )  # fmt: skip
    client = logged_in(manager)
    page = client.get("/online/tracker/").content.decode()
    form = f'href="/online/tracker/{tracked.pk}/online/"'
    assert form in page
    assert form not in logged_in(world["other"]).get("/online/tracker/").content.decode()
    # a bad value comes back beside its field, nothing changed
    bad = client.post(
        f"/online/tracker/{tracked.pk}/online/", {"online_metric": "ctr", "online_delta": "lots"}
    )
    assert bad.status_code == 400 and "A valid number is required" in bad.content.decode()
    missing = client.post(f"/online/tracker/{tracked.pk}/online/", {"online_delta": "0.1"})
    assert missing.status_code == 400 and "name the online metric" in missing.content.decode()
    tracked.refresh_from_db()
    assert tracked.online_delta is None
    # a value of an online metric, then the treatment's interleaving preference instead
    done = client.post(
        f"/online/tracker/{tracked.pk}/online/", {"online_metric": "ctr", "online_delta": "0.012"}
    )
    assert done.status_code == 302 and done["Location"] == "/online/tracker/?collection=news"
    tracked.refresh_from_db()
    assert (tracked.online_metric, tracked.online_delta) == ("ctr", 0.012)
    assert client.get(f"/online/tracker/{tracked.pk}/online/").content.decode().count('value="0.012"') == 1
    experiment = experiments.create_experiment(
        name="ab", collection=world["collection"], run_a="beta", run_b="alpha", length=3
    )
    serving.clear_caches()
    for i in range(6):
        shown = serving.serve(experiment=experiment, qid="q1", user=f"u{i}")
        impressions.log_impression(experiment=experiment, qid="q1", user=f"u{i}", docids=shown.docids,
                                   teams=shown.teams, clicks=[1, 2])  # fmt: skip
    result = experiments.compute_result(experiment=experiment, resamples=50)
    assert client.post(f"/online/tracker/{tracked.pk}/online/", {"interleaving": "ab"}).status_code == 302
    tracked.refresh_from_db()
    assert tracked.interleaving_id == result.pk and tracked.online_delta == result.delta_ab
    assert tracked.online_metric == tracking.INTERLEAVING_METRIC
    # who may not: another manager (404), a rater (403), anonymous (to the login page)
    for user, code in ((world["other"], 404), (rater, 403)):
        assert logged_in(user).get(f"/online/tracker/{tracked.pk}/online/").status_code == code
        answer = logged_in(user).post(
            f"/online/tracker/{tracked.pk}/online/", {"online_metric": "x", "online_delta": "9"}
        )
        assert answer.status_code == code
    assert Client().get(f"/online/tracker/{tracked.pk}/online/").status_code == 302
    assert TrackedExperiment.objects.get().online_delta == result.delta_ab


@pytest.mark.parametrize(
    "metric", ["runid", "relstring", "relstring.5", "num_q", "gm_map", "gm_bpref", "num_rel_ret"]
)
def test_it_refuses_an_offline_metric_that_is_not_a_mean_over_topics(world, manager, metric):
    """The offline delta is a difference of means over topics: runid and relstring (no number per topic)
    answered 500 (a KeyError), and gm_map, num_q or num_rel_ret were stored under their name as the
    arithmetic mean of per-topic values that trec_eval aggregates otherwise (a geometric mean, a count, a
    sum). Refused on the API, the page and the command alike, naming the field, nothing stored."""
    from online.experiment_models import TrackedExperiment
    from tests.conftest import client_for

    body = {"collection": "news", "name": "x", "release": world["release"].pk, "baseline": "alpha",
            "treatment": "beta", "metric": metric}  # fmt: skip
    answer = client_for(manager).post("/api/tracker/", body, format="json")
    assert answer.status_code == 400, answer.content
    assert "is not a mean over topics" in answer.json()["metric"][0]
    page = logged_in(manager).post("/online/tracker/new/", body)
    assert page.status_code == 400 and "is not a mean over topics" in page.content.decode()
    command = ["track_experiment", "x", "--collection", "news", "--release", str(world["release"].pk)]
    with pytest.raises(CommandError, match="metric: .* is not a mean over topics"):
        call_command(
            *command, "--metric", metric, "--baseline", "alpha", "--treatment", "beta", stdout=io.StringIO()
        )
    assert not TrackedExperiment.objects.exists()


def test_the_offline_delta_of_a_mean_measure_is_still_taken(world, manager):
    from online import tracking

    tracked = tracking.track_experiment(
        collection=world["collection"], name="x", release=world["release"], metric="map",
        baseline="alpha", treatment="beta",
    )  # fmt: skip
    assert tracked.metric == "map" and tracked.offline_topics == 2


def test_a_click_label_release_is_downloaded_from_the_labels_page(manager, tmp_path):
    """The labels page listed a release's files by name only: what was released could not be had from the
    pages (nor the API, which answers the manifest): the journey ended there."""
    from django.conf import settings
    from django.contrib.auth.models import Group

    from pooling.permissions import MANAGERS_GROUP
    from tests.factories import make_user

    pool = judged_pool(grades={"d001": 3, "d003": 1}, managers=[manager])
    pages = [
        {"session": f"s{i}", "qid": "q1", "docids": ["d001", "d003"], "clicks": [1, 2]} for i in range(30)
    ]
    log = pool_log(tmp_path, pool, pages)
    estimate = services.estimate_propensity(log=log, method="given", params={"theta": [1, 0.5]})
    label_set = services.derive_click_labels(
        log=log, estimator="ips", propensity_estimate=estimate, thresholds="0.3:1,0.8:3"
    )
    client = logged_in(manager)
    client.post(f"/online/labels/{label_set.pk}/release/")
    release = ClickRelease.objects.get(label_set=label_set)
    page = client.get(f"/online/labels/{label_set.pk}/").content.decode()
    folder = settings.MEDIA_ROOT / release.directory
    for name in ("click-qrels.txt", "manifest.json"):
        url = f"/online/labels/{label_set.pk}/releases/{release.pk}/{name}"
        assert f'href="{url}"' in page
        answer = client.get(url)
        assert answer.status_code == 200 and answer["Content-Disposition"] == f'attachment; filename="{name}"'
        assert b"".join(answer.streaming_content) == (folder / name).read_bytes()
    assert client.get(f"/online/labels/{label_set.pk}/releases/{release.pk}/qrels.txt").status_code == 404
    assert client.get(f"/online/labels/{label_set.pk}/releases/{release.pk}/..%2Fx").status_code == 404
    other = make_user("other-manager")
    other.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    url = f"/online/labels/{label_set.pk}/releases/{release.pk}/click-qrels.txt"
    assert logged_in(other).get(url).status_code == 404
    assert logged_in(make_user("someone")).get(url).status_code == 403
    assert Client().get(url).status_code == 302


@pytest.mark.parametrize(
    ("form", "fields", "field", "message"),
    [
        ("propensities", {"method": "given", "theta": "1, half"}, "theta", "give the propensities as"),
        ("propensities", {"method": "given", "theta": "1 1.5"}, "theta", "outside (0, 1]"),
        ("propensities", {"method": "magic"}, "method", "method must be one of"),
        ("labels", {"estimator": "ips", "tau": "x"}, "tau", "tau: a number of at least 1"),
        ("labels", {"estimator": "coec", "replicates": "2.5"}, "replicates", "replicates: a whole number"),
        ("labels", {"estimator": "ips"}, "propensity", "needs a propensity estimate"),
        ("labels", {"estimator": "coec", "thresholds": "0.5:9"}, "thresholds", ""),
    ],
)
def test_the_log_pages_forms_show_a_refusal_beside_its_field_with_the_form_as_sent(
    manager, log, form, fields, field, message
):
    """The log page's two forms answered a refusal with a message at the top of the page, the form emptied:
    the page again now (400), the refusal under the field it names and what was typed kept."""
    answer = logged_in(manager).post(f"/online/logs/{log.pk}/{form}/", fields)
    assert answer.status_code == 400
    page = answer.content.decode()
    after = page.split(f'name="{field}"')[1]
    errors = after.split("</label>")[1].split("<label>")[0]  # between this field and the next one
    assert 'class="errorlist"' in errors and message in errors, errors
    for name, value in fields.items():
        if name not in ("method", "estimator"):  # the selects keep theirs by `selected`
            assert f'value="{value}"' in page.split(f'name="{name}"')[1][:60]
    assert not Job.objects.exists()


def test_the_interleaving_chart_draws_no_bar_for_a_query_without_a_click(manager):
    """'The N with the most clicked impressions' drew every query when fewer than 20 had a click, those
    without one as a row of zero bars: no click says nothing either way."""
    from online import experiments
    from online.experiment_models import InterleavingResult
    from tests.factories import make_collection, make_run

    collection = make_collection(name="news", topics=("q1", "q2", "q3"), managers=[manager])
    for name in ("alpha", "beta"):
        make_run(collection=collection, name=name, lists={"q1": ["d001"], "q2": ["d002"], "q3": ["d003"]})
    experiment = experiments.create_experiment(name="ab", collection=collection, run_a="alpha", run_b="beta")
    counts = {"none": 0, "delta_ab": 0.0, "p_value": 1.0}
    InterleavingResult.objects.create(
        experiment=experiment, wins_a=3, wins_b=1, ties=1, no_clicks=9, users=5, delta_ab=0.4, p_value=0.6,
        per_query={"q1": {**counts, "A": 2, "B": 1, "ties": 0}, "q2": {**counts, "A": 1, "B": 0, "ties": 1},
                   "q3": {**counts, "A": 0, "B": 0, "ties": 0, "none": 9}},
        source="test",
    )  # fmt: skip
    page = logged_in(manager).get("/online/interleaving/ab/").content.decode()
    assert "q1 · " in page and "q2 · " in page and "q3 · " not in page  # the bars' own titles
    assert "the 2 with the most clicked impressions" in page

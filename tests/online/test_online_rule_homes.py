"""One home for each rule of the online app: the page, the API and the command give the same answer for
the same question, because they ask the same function. Each test sets up an edge case where two copies of
a rule once disagreed (a query no topic matches, a power plan at the edge of what can be planned, a name
the model cannot store, a balanced experiment's click log, a log of many loggers)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from online import experiments, relevance, serving
from online.clicklogs import import_click_log
from online.experiment_models import InterleavingExperiment, InterleavingResult, TrackedExperiment
from online.models import QueryMapping
from online.preference import plan_power
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run

PAGES = [
    {"session": "s1", "qid": "q1", "docids": ["d001", "d002", "d003"], "clicks": [1]},
    {"session": "s2", "qid": "nope", "docids": ["d001", "d002", "d003"], "clicks": [2]},  # no topic
    {"session": "s3", "qid": "q1", "docids": ["d001", "zzz"], "clicks": []},  # no click, an unknown object
]


def _counts_file(tmp_path, pages) -> str:
    """The same pages as pre-aggregated counts (qid docid position impressions clicks)."""
    cells: dict[tuple[str, str, int], list[int]] = {}
    for page in pages:
        for position, docid in enumerate(page["docids"], 1):
            cell = cells.setdefault((page["qid"], docid, position), [0, 0])
            cell[0] += 1
            cell[1] += position in page["clicks"]
    path = tmp_path / "counts.txt"
    path.write_text("".join(f"{q} {d} {k} {n} {c}\n" for (q, d, k), (n, c) in cells.items()))
    return str(path)


@pytest.mark.django_db
def test_an_impression_is_a_document_shown_in_every_format(tmp_path) -> None:
    """The same pages imported as impressions JSONL and as counts give the same impressions everywhere the
    log shows them (its page, `GET /api/click-logs/<id>/` and `/queries/`, the import job's counts): a
    page of 3 results is 3 impressions, for an unmapped query as for a mapped one (JSONL once counted the
    unmapped query's pages, 1, where counts gave 3)."""
    collection = make_collection()
    path = tmp_path / "pages.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAGES))
    pages = import_click_log(collection=collection, name="pages", format="jsonl", paths=[str(path)])
    counts = import_click_log(collection=collection, name="counts", format="counts",
                              paths=[_counts_file(tmp_path, PAGES)])  # fmt: skip
    for log in (pages, counts):
        assert log.counts["impressions"] == 4  # the known documents of q1's pages: d001 twice, d002, d003
        assert (log.counts["unmapped_queries"], log.counts["unmapped_impressions"]) == (1, 3)
        mapped = dict(QueryMapping.objects.filter(log=log).values_list("query", "impressions"))
        assert mapped == {"q1": 5, "nope": 3}, log.format
        assert any("1 queries map to no topic, 3 impressions" in w for w in log.warnings)


POWER_CASES = [
    {"delta": 0.001, "tie_share": 0.995},  # the API once refused a tie share above 0.99
    {"delta": 0.05, "alpha": 0.6, "power": 0.5},  # …an alpha above 0.5
    {"delta": 0.3, "power": 0.01},  # …a power below 0.05
    {"delta": 0.49995},  # …a delta beyond ±0.4999
]


@pytest.mark.django_db
@pytest.mark.parametrize("params", POWER_CASES)
def test_the_power_api_plans_what_the_planner_plans(manager, params) -> None:
    """`GET /api/interleaving/power/` answers what `preference.plan_power` (the page's and the command's
    planner) answers, at the edges where the API's serializer once had bounds of its own."""
    plan = plan_power(params["delta"], **{k: v for k, v in params.items() if k != "delta"})
    answer = client_for(manager).get("/api/interleaving/power/", params)
    assert answer.status_code == 200, answer.content
    assert (answer.json()["impressions"], answer.json()["decisive"]) == (plan.impressions, plan.decisive)
    out = io.StringIO()
    call_command(
        "plan_interleaving", *[f"--{k.replace('_', '-')}={v}" for k, v in params.items()], stdout=out
    )
    assert out.getvalue().startswith(f"{plan.impressions:,} impressions")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "field"),
    [({"delta": 0.1, "tie_share": 1.0}, "tie_share"), ({"delta": 0.1, "alpha": 1.0}, "alpha"),
     ({"delta": 0.05, "click_rate": 5e-324}, "click_rate"), ({"delta": 0.0}, "delta")],
)  # fmt: skip
def test_the_power_planner_refuses_once_for_page_api_and_command(manager, params, field) -> None:
    """What cannot be planned is refused by the planner, naming the field, on the API (400), the page (the
    message, not a 500: a click rate of a few ulps once overflowed there) and the command."""
    answer = client_for(manager).get("/api/interleaving/power/", params)
    assert answer.status_code == 400 and field in answer.json(), answer.content
    message = answer.json()[field][0]
    collection = make_collection(name="news", managers=[manager])
    runs = [make_run(collection=collection, name=n, lists={"q1": ["d001", "d002"]}) for n in ("a", "b")]
    make_pool(collection=collection, runs=runs, managers=[manager])
    experiments.create_experiment(name="ab", collection=collection, run_a="a", run_b="b")
    page = Client()
    page.force_login(manager)
    if set(params) <= {"delta", "tie_share", "click_rate"}:  # the page's planner takes these three
        shown = page.get("/online/interleaving/ab/", {k: repr(v) for k, v in params.items()})
        assert shown.status_code == 200 and message in shown.content.decode()
    argv = [f"--{k.replace('_', '-')}={v!r}" for k, v in params.items()]
    with pytest.raises(CommandError, match=message.split(":")[0]):
        call_command("plan_interleaving", *argv, stdout=io.StringIO())


def test_an_interleaving_name_the_model_cannot_hold_is_refused_by_the_command_as_by_the_api(manager, db):
    """The name's rules are the model field's (a slug of at most 100 characters), for the API's form and
    the command alike: a 101-character slug is refused naming the field, not a database error."""
    collection = make_collection(name="news", managers=[manager])
    for name in ("alpha", "beta"):
        make_run(collection=collection, name=name, lists={"q1": ["d001"]})
    long = "x" * 101
    body = {"name": long, "collection": "news", "run_a": "alpha", "run_b": "beta"}
    api = client_for(manager).post("/api/interleaving/", body, format="json")
    assert api.status_code == 400 and "name" in api.json()
    with pytest.raises(CommandError, match="name: Ensure this value has at most 100 characters"):
        call_command("create_interleaving", long, "--collection", "news", "--a", "alpha", "--b", "beta",
                     stdout=io.StringIO())  # fmt: skip
    assert not InterleavingExperiment.objects.exists()


@pytest.mark.parametrize(
    ("name", "stored"), [("", None), ("   ", None), ("x" * 201, None), (" change-1 ", "change-1")]
)
def test_a_tracked_experiments_name_follows_one_rule(world, name, stored) -> None:
    """`manage.py track_experiment` takes the names the API takes: trimmed, not blank, at most 200
    characters (the command once stored a blank name and failed in the database on a long one), and a
    trimmed name is the one `import_online_deltas` finds."""
    argv = ["track_experiment", name, "--collection", "news", "--release", str(world["release"].pk),
            "--baseline", "alpha", "--treatment", "beta"]  # fmt: skip
    if stored is None:
        with pytest.raises(CommandError, match="name: "):
            call_command(*argv, stdout=io.StringIO())
        assert not TrackedExperiment.objects.exists()
    else:
        call_command(*argv, stdout=io.StringIO())
        assert TrackedExperiment.objects.get().name == stored


@pytest.mark.django_db
def test_a_balanced_experiments_click_log_is_refused_not_credited_by_teams(manager, tmp_path) -> None:
    """A balanced experiment's impressions are credited by the runs' ranks (`credit_balanced`): with
    A = B, a click is a tie. Crediting a click log's pages by their teams would call the same click a win
    for B; the click log is refused instead (API 400 naming it), and no result is stored."""
    collection = make_collection(name="news", managers=[manager])
    for name in ("alpha", "beta"):
        make_run(collection=collection, name=name, lists={"q1": ["d001", "d002"]})
    experiment = experiments.create_experiment(
        name="bal", collection=collection, run_a="alpha", run_b="beta", method="balanced", length=2
    )
    shown = serving.serve(experiment=experiment, qid="q1", user="u1")
    assert shown.credit([1]) == "tie"  # the logged impression's outcome
    path = tmp_path / "bal.jsonl"
    docids, teams = list(shown.docids), list(shown.teams)
    page = {"session": "s1", "user": "u1", "qid": "q1", "docids": docids, "teams": teams, "clicks": [1]}
    path.write_text(json.dumps(page) + "\n")
    log = import_click_log(collection=collection, name="bal-log", format="jsonl", paths=[str(path)])
    answer = client_for(manager).post("/api/interleaving/bal/result/", {"click_log": log.pk}, format="json")
    assert answer.status_code == 400 and "balanced" in answer.json()["click_log"][0], answer.content
    assert not InterleavingResult.objects.exists()


def test_the_bootstrap_keeps_every_logger_apart_as_the_import_does() -> None:
    """The bootstrap's cell keys hold as many loggers as the import does (`clicklogs.MAX_LOGGERS`): the
    logger of index 1024 once ran into the position (a fixed θ then scored its clicks one position deeper).
    With θ fixed, the logger's index changes nothing."""
    theta = [1.0, 0.5, 0.25]

    def intervals(logger: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        def chunks():
            yield {
                "topic": np.zeros(40, dtype=np.int32),
                "logger": np.full(40, logger, dtype=np.int16),
                "session": np.arange(40, dtype=np.uint32),
                "length": np.full(40, 3, dtype=np.int32),
                "doc": np.tile(np.array([0, 1, 2], dtype=np.int32), 40),
                "click": np.tile(np.array([True, False, True]), 40) & (np.arange(120) % 7 > 0),
            }

        pairs, low, high, _ = relevance.bootstrap(
            chunks, n_docs=3, n_loggers=logger + 1, theta_of=lambda c: theta, estimator="ips", replicates=20
        )
        return pairs, low, high

    first, last = intervals(0), intervals(1024)
    for a, b in zip(first, last, strict=True):
        np.testing.assert_array_equal(a, b)

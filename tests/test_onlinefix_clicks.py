"""A click log's interleaved pages credited to one experiment are its own (another experiment's teams are
left out); the impressions and the clicks of unknown objects are counted and said; EM says when it stops
without converging."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.test import Client

from online import experiments, propensity
from online.clicklogs import import_click_log
from tests.conftest import client_for
from tests.online import conftest as online_fixtures
from tests.online.test_propensity import three_loggers

# the online tests' fixtures: their world (a judged pool of runs alpha, beta, gamma and its release)
world = online_fixtures.world
fresh_interleaving_caches = online_fixtures.fresh_interleaving_caches
pytestmark = pytest.mark.usefixtures("fast_passwords")


def jsonl(tmp_path, name: str, pages: list[dict]) -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(p) + "\n" for p in pages))
    return str(path)


def test_it_credits_an_experiment_only_its_own_pages_of_a_shared_log(world, manager, tmp_path):
    experiments.create_experiment(name="ab", collection=world["collection"], run_a="alpha", run_b="beta")
    ours = [  # A wins, B wins, a tie, no click
        {"user": "u1", "qid": "q1", "docids": ["d001", "d003"], "teams": ["A", "B"], "clicks": [1]},
        {"user": "u2", "qid": "q1", "docids": ["d001", "d003"], "teams": ["A", "B"], "clicks": [2]},
        {"user": "u3", "qid": "q1", "docids": ["d001", "d003"], "teams": ["A", "B"], "clicks": [1, 2]},
        {"user": "u4", "qid": "q2", "docids": ["d010", "d011"], "teams": ["A", "B"], "clicks": []},
    ]
    theirs = [  # another experiment's pages, teams X and Y: a "tie" and a page without a click to A or B
        {"user": "u5", "qid": "q1", "docids": ["d002", "d004"], "teams": ["X", "Y"], "clicks": [1]},
        {"user": "u6", "qid": "q2", "docids": ["d010", "d011"], "teams": ["Y", "X"], "clicks": []},
    ]
    pages = [{**p, "session": f"s{i}"} for i, p in enumerate(ours + theirs)]
    log = import_click_log(collection=world["collection"], name="shared", format="jsonl",
                           paths=[jsonl(tmp_path, "shared.jsonl", pages)])  # fmt: skip
    response = client_for(manager).post("/api/interleaving/ab/result/", {"click_log": log.pk}, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["wins_a"], data["wins_b"], data["ties"], data["no_clicks"]) == (1, 1, 1, 1)
    assert data["impressions"] == 4 and data["users"] == 4


def test_it_counts_and_says_the_impressions_and_clicks_of_unknown_objects(world, manager, tmp_path):
    pages = [
        {"session": "s1", "qid": "q1", "docids": ["d001", "zzz", "yyy"], "clicks": [2]},
        {"session": "s2", "qid": "q1", "docids": ["zzz", "d001"], "clicks": [1, 2]},
        {"session": "s3", "qid": "q1", "docids": ["d001", "zzz"], "clicks": []},
    ]
    log = import_click_log(collection=world["collection"], name="unknown", format="jsonl",
                           paths=[jsonl(tmp_path, "unknown.jsonl", pages)])  # fmt: skip
    counts = log.counts
    assert (counts["unknown_impressions"], counts["unknown_clicks"], counts["unknown_objects"]) == (4, 2, 2)
    assert counts["clicks"] == 1  # the known document's click: the unknown ones are left out of the counts
    assert any(w.startswith("4 impressions (2 clicks) of 2 unknown objects") for w in log.warnings)
    page = Client()
    page.force_login(manager)
    html = page.get(f"/online/logs/{log.pk}/").content.decode()
    assert "<th>Impressions (clicks) of unknown objects</th>" in html
    assert '<td class="num unknown">4 (2) of 2</td>' in html


def test_it_counts_the_unknown_objects_of_a_counts_file(world, tmp_path):
    path = tmp_path / "counts.tsv"
    path.write_text("q1 d001 1 100 40\nq1 zzz 2 50 10\nq1 zzz 3 20 5\nq2 yyy 1 7 0\n")
    log = import_click_log(collection=world["collection"], name="agg", format="counts", paths=[str(path)])
    counts = log.counts
    assert (counts["unknown_impressions"], counts["unknown_clicks"], counts["unknown_objects"]) == (77, 15, 2)
    assert any(w.startswith("77 impressions (15 clicks) of 2 unknown objects") for w in log.warnings)


def test_em_warns_when_it_stops_at_its_cap_without_converging() -> None:
    counts = three_loggers()
    capped = propensity.em(counts, iterations=5)
    assert capped.diagnostics["iterations"] == 5 and capped.diagnostics["converged"] is False
    (warning,) = capped.warnings
    assert warning.startswith("EM stopped at its cap of 5 iterations without converging: θ still moved by")
    converged = propensity.em(counts)
    assert converged.diagnostics["converged"] is True and not converged.warnings
    assert converged.diagnostics["last_shift"] < 1e-7
    assert np.isfinite(converged.theta).all()


@pytest.mark.django_db
def test_the_propensity_page_shows_the_warning(world, manager, tmp_path):
    from online import services

    pages = [{"session": f"s{i}", "qid": "q1", "ranker": r, "docids": docs, "clicks": [1 + i % 2]}
             for i, (r, docs) in enumerate([("a", ["d001", "d002", "d003"]), ("b", ["d003", "d001", "d002"]),
                                            ("c", ["d002", "d003", "d001"])] * 5)]  # fmt: skip
    log = import_click_log(collection=world["collection"], name="em", format="jsonl",
                           paths=[jsonl(tmp_path, "em.jsonl", pages)])  # fmt: skip
    estimate = services.estimate_propensity(log=log, method="em", params={"iterations": 2})
    assert any("without converging" in w for w in estimate.warnings)
    page = Client()
    page.force_login(manager)
    html = page.get(f"/online/propensities/{estimate.pk}/").content.decode()
    assert "EM stopped at its cap of 2 iterations without converging" in html

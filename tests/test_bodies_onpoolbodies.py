"""The pooling and online answers declared once as dataclasses: each endpoint, called as a user allowed to,
answers exactly the fields of its body's dataclass (its serializer, hence the schema, reads them from it),
nested bodies included; the order of the keys is the dataclass's."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judgements import releases
from online import experiments, impressions, services, serving, tracking
from pooling import ownership, stats
from pooling.models import RankedList, RankedRow
from tests.conftest import client_for
from tests.factories import make_user
from tests.online.helpers import judged_pool, pool_log
from tests.online.test_click_labels import THETA5, pages_for

pytestmark = pytest.mark.django_db


def names(body: type) -> list[str]:
    return [f.name for f in fields(body)]


@pytest.fixture
def pool(manager):
    return judged_pool(grades={"d001": 3, "d003": 2, "d010": 1}, managers=[manager])


def test_the_pool_statistics_answer_is_its_dataclass(manager, pool):
    answer = client_for(manager).get(f"/api/pools/{pool.name}/statistics/").json()
    assert list(answer) == names(stats.PoolStatistics)
    assert answer["topics"] and all(list(t) == names(stats.TopicCount) for t in answer["topics"])
    assert answer["runs"] and all(list(r) == names(stats.RunContribution) for r in answer["runs"])


def test_a_runs_ranked_list_answer_is_its_dataclass(manager, pool):
    run = pool.runs.order_by("name").first()
    answer = client_for(manager).get(f"/api/runs/{run.pk}/topics/q1/").json()
    assert list(answer) == names(RankedList)
    assert answer["results"] and all(list(row) == names(RankedRow) for row in answer["results"])


def test_the_managers_answer_is_its_dataclass(manager, pool):
    assert list(client_for(manager).get(f"/api/pools/{pool.name}/managers/").json()) == names(
        ownership.Managers
    )


def test_the_search_path_and_a_logged_impression_answer_their_dataclasses(manager, pool):
    frontend = make_user("frontend")
    experiments.create_experiment(
        name="ab", collection=pool.collection, run_a="alpha", run_b="beta", clients=[frontend]
    )
    serving.clear_caches()
    client = client_for(frontend)
    shown: dict[str, Any] = client.get("/api/interleaving/ab/ranking/", {"qid": "q1", "user": "u1"}).json()
    assert list(shown) == names(serving.InterleavedList)
    body = {"qid": "q1", "user": "u1", "docids": shown["docids"], "teams": shown["teams"], "clicks": [1]}
    logged = client.post("/api/interleaving/ab/impressions/", body, format="json")
    assert logged.status_code == 201, logged.content
    assert list(logged.json()) == names(impressions.ImpressionLogged)


def test_an_import_of_online_deltas_answers_its_dataclass(manager, pool):
    release = releases.create_release(pool=pool)
    tracking.track_experiment(
        collection=pool.collection, name="beta over alpha", release=release, metric="P_5",
        baseline="alpha", treatment="beta", online_metric="ctr",
    )  # fmt: skip
    upload = SimpleUploadedFile("d.tsv", b"beta over alpha\tctr\t0.1\n")
    answer = client_for(manager).post(
        "/api/tracker/import/", {"collection": pool.collection.name, "file": upload}, format="multipart"
    )
    assert answer.status_code == 200, answer.content
    assert list(answer.json()) == names(tracking.DeltasImported)


def test_a_click_label_release_answers_its_dataclass(manager, pool, tmp_path):
    docs = {"q1": ["d001", "d003", "d002", "d004"], "q2": ["d010", "d011", "d013"]}
    log = pool_log(tmp_path, pool, pages_for(docs, {"q1": [1, 2], "q2": [1]}, repeat=20))
    estimate = services.estimate_propensity(log=log, method="given", params={"theta": THETA5})
    label_set = services.derive_click_labels(
        log=log, estimator="ips", propensity_estimate=estimate, thresholds="0.2:1,0.6:2,0.9:3"
    )
    answer = client_for(manager).post(f"/api/click-labels/{label_set.pk}/release/")
    assert answer.status_code == 201, answer.content
    assert list(answer.json()) == names(services.ClickReleaseBody)

"""The pool-bias table makes up no rank and no verdict where there is no score: with nothing judged (or no
judged topic the runs share), a run's ranks, τ and `within_noise` are null in the service's answer, the
API body (as its schema allows) and the page, as its `full` and `change` are."""

from __future__ import annotations

import pytest
from django.test import Client

from evaluation import services
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge
from tests.test_openapi_truth import check

VERDICT_FIELDS = ("full", "left_out", "change", "change_p", "within_noise", "rank_full", "rank_left_out",
                  "kendall_tau")  # fmt: skip


def page(manager, name: str) -> str:
    browser = Client()
    browser.force_login(manager)
    response = browser.get(f"/evaluation/{name}/pool-bias/")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db
def test_it_ranks_and_judges_no_run_when_nothing_is_judged(manager):
    pool = make_pool(raters=[make_user("alice")], name="untouched")
    rows = services.pool_bias(pool=pool)["runs"]
    body = client_for(manager).get("/api/evaluation/untouched/pool-bias/").json()
    assert body["judged_topics"] == 0
    for answer in (rows, body["runs"]):
        assert [row["run"] for row in answer] == ["alpha", "beta"]
        assert all(row[field] is None for row in answer for field in VERDICT_FIELDS), answer
    assert "Nothing is judged yet." in page(manager, "untouched")
    # the nulls are ones the schema allows (drf-spectacular reads `report_bodies.PoolBiasRun`)
    api, path = client_for(manager), "/api/evaluation/{name}/pool-bias/"
    assert check(api, "get", path.format(name="untouched"), path) == []


@pytest.mark.django_db
def test_it_ranks_and_judges_no_run_when_the_runs_share_no_judged_topic(manager):
    alice = make_user("alice")
    collection = make_collection()
    runs = [
        make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002"]}),
        make_run(collection=collection, name="beta", lists={"q2": ["d010", "d011"]}),
    ]
    pool = make_pool(collection=collection, runs=runs, raters=[alice], name="apart")
    judge(pool, alice, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q2", "d010"): 1, ("q2", "d011"): 0})
    data = services.pool_bias(pool=pool)
    assert data["judged_topics"] == 2 and data["compared_topics"] == 0
    body = client_for(manager).get("/api/evaluation/apart/pool-bias/").json()
    for answer in (data["runs"], body["runs"]):
        assert all(row[field] is None for row in answer for field in VERDICT_FIELDS), answer
    table = page(manager, "apart").split("<table")[1]
    assert "within the noise" not in table and "beyond the noise" not in table
    assert '<td class="noise">–</td><td class="num">–</td><td class="num">–</td>' in table


@pytest.mark.django_db
def test_a_run_with_no_score_left_out_has_no_verdict_and_no_rank_left_out(manager):
    alice = make_user("alice")
    pool = make_pool(raters=[alice], name="one-topic")
    judge(pool, alice, {("q1", "d005"): 3})  # beta alone found it: without beta nothing is judged
    table = {row["run"]: row for row in services.pool_bias(pool=pool)["runs"]}
    beta, alpha = table["beta"], table["alpha"]
    assert beta["left_out"] is None and beta["change"] is None
    assert beta["within_noise"] is None and beta["rank_left_out"] is None and beta["kendall_tau"] is None
    assert beta["rank_full"] == 1 and alpha["rank_full"] == 2  # both have a full score
    assert alpha["change"] == pytest.approx(0.0) and alpha["within_noise"] is True
    body = {
        row["run"]: row
        for row in client_for(manager).get("/api/evaluation/one-topic/pool-bias/").json()["runs"]
    }
    assert body["beta"]["within_noise"] is None and body["beta"]["rank_left_out"] is None

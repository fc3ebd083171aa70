"""The OpenAPI schema tells the truth about the reports (agreement, rater quality and the four evaluation
reports): each answers a JSON body that validates against the schema it declares, on a pool with figures to
report and on one with nothing judged, where the undefined figures are the nulls the schema allows. The
checker is `tests.test_openapi_truth.check`."""

from __future__ import annotations

from typing import Any

import pytest

from judgements import adjudication
from pooling.models import Pool, PoolItem, Topic
from tests.conftest import client_for
from tests.factories import make_pool
from tests.judgements.judge_factories import copy_judge, make_judged_pool
from tests.test_openapi_truth import check

pytestmark = pytest.mark.django_db


@pytest.fixture
def reports_world(manager, rater, second_rater, tmp_path) -> Pool:
    """`judged` (40 items, 30 judged by both raters, who mostly agree; three runs; topic q1 in a segment),
    a gold item, and an admitted model judge `copier` whose labels fill the unjudged items."""
    from evaluation.judge_gate import measure_gate
    from judgements.judges import run_judge

    pool = make_judged_pool(raters=[rater, second_rater], managers=[manager], unjudged_every=4)
    Pool.objects.filter(pk=pool.pk).update(name="judged")
    pool.refresh_from_db()
    Topic.objects.filter(collection=pool.collection, qid="q1").update(segments=["news"])
    judge = copy_judge(pool, tmp_path)
    run_judge(judge=judge)
    assert measure_gate(judge=judge)["admitted"]
    gold = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d003")
    adjudication.set_gold(item=gold, grade=2, by=manager)
    return pool


#: The reports of a pool `{name}`: the path the schema declares each under, and a query.
REPORTS = [
    ("/api/agreement/{name}/", ""),
    ("/api/agreement/{name}/", "weights=linear"),
    ("/api/rater-quality/{name}/", ""),
    ("/api/evaluation/{name}/report/", "{judge}"),
    ("/api/evaluation/{name}/pool-bias/", ""),
    ("/api/evaluation/{name}/two-stage/", "candidate=alpha&reranked=beta&k=10"),
    ("/api/evaluation/{name}/noise-floor/", "topic_samples=10&label_samples=5&splits=2"),
]


def check_reports(api: Any, name: str, judge: str = "") -> tuple[list[str], dict[str, Any]]:
    """Every report of the pool `name` (`REPORTS`; the evaluation report with the query `judge`) checked
    against its schema: the problems found, and the last body of each path."""
    problems, bodies = [], {}
    for path, query in REPORTS:
        url = f"{path.format(name=name)}?{query.format(judge=judge)}".removesuffix("?")
        problems += check(api, "get", url, path)
        bodies[path] = api.get(url).json()
    return problems, bodies


def test_it_answers_the_reports_as_their_schema_declares(manager, reports_world):
    """Agreement, rater quality and the four evaluation reports of a pool two raters judged (gold, a
    segment, a model judge's labels in the report): every key described, every figure of its type."""
    problems, bodies = check_reports(client_for(manager), "judged", judge="judge=copier")
    assert problems == []
    # the bodies checked are the full ones, not the empty answers of a pool with nothing to say
    assert bodies["/api/agreement/{name}/"]["n_pairs"] == 30 and bodies["/api/agreement/{name}/"]["pairs"]
    quality = bodies["/api/rater-quality/{name}/"]["raters"]
    assert len(quality) == 2 and quality[0]["gold"]["n"] == 1
    report = bodies["/api/evaluation/{name}/report/"]
    assert report["judge"]["name"] == "copier" and report["segments"]["alpha"]["news"]
    assert report["significance"] and bodies["/api/evaluation/{name}/pool-bias/"]["runs"]
    assert bodies["/api/evaluation/{name}/two-stage/"]["topics"]
    noise = bodies["/api/evaluation/{name}/noise-floor/"]
    assert noise["runs"][0]["raters"] and noise["stability"]["raters"] and noise["pairs"]["P_10"]


def test_it_answers_the_reports_of_a_pool_with_nothing_judged_as_their_schema_declares(manager, rater):
    """The undefined figures (no pair of grades, no judged topic) are nulls the schema allows."""
    make_pool(name="bare", raters=[rater])
    problems, bodies = check_reports(client_for(manager), "bare")
    assert problems == []
    assert bodies["/api/agreement/{name}/"]["cohen"]["unweighted"]["kappa"] is None
    assert bodies["/api/evaluation/{name}/two-stage/"]["mean_recall"] is None

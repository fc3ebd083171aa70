"""A cached evaluation page is never older than what it scores: after a run is added to the pool, a run's
rows are replaced, or an import moves a topic to another segment, the report and the pool-bias table (page
and API, both read through `queries.cached_for_pool`) answer what the services compute now, not what they
computed before the change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache

from evaluation import services
from judgements import adjudication
from judgements.queries import data_stamp
from pooling import imports, pool_build
from pooling.models import Pool, Run
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db

LISTS = {
    "alpha": {"q1": ["d001", "d002", "d003"], "q2": ["d010", "d011", "d012"]},
    "beta": {"q1": ["d004", "d001", "d005"], "q2": ["d013", "d010", "d014"]},
}
GRADES: dict[tuple[str, str], int | None] = {
    ("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 1,
    ("q2", "d010"): 0, ("q2", "d011"): 2, ("q2", "d012"): 0,
}  # fmt: skip


@pytest.fixture
def pool(manager: Any) -> Pool:
    """A pool of alpha alone, judged; beta is a run of the collection that is not in it (yet)."""
    cache.clear()
    collection = make_collection(topics=("q1", "q2"), managers=[manager])
    alpha = make_run(collection=collection, name="alpha", lists=LISTS["alpha"])
    make_run(collection=collection, name="beta", lists=LISTS["beta"])
    rita = make_user("rita")
    made = make_pool(collection=collection, runs=[alpha], raters=[rita], name="fresh", managers=[manager])
    judge(made, rita, GRADES)
    return made


def report(manager: Any, pool: Pool) -> dict[str, Any]:
    answer = client_for(manager).get(f"/api/evaluation/{pool.name}/report/")
    assert answer.status_code == 200, answer.content
    return answer.json()


def bias(manager: Any, pool: Pool) -> dict[str, Any]:
    answer = client_for(manager).get(f"/api/evaluation/{pool.name}/pool-bias/")
    assert answer.status_code == 200, answer.content
    return answer.json()


def contributing(body: dict[str, Any]) -> dict[str, bool]:
    return {run["run"]: run["contributing"] for run in body["runs"]}


def test_a_run_added_to_the_pool_is_contributing_at_once(pool: Pool, manager: Any) -> None:
    assert contributing(report(manager, pool)) == {"alpha": True, "beta": False}
    assert [run["run"] for run in bias(manager, pool)["runs"]] == ["alpha"]
    pool_build.add_runs(pool=pool, runs=[Run.objects.get(collection=pool.collection, name="beta")])
    assert contributing(report(manager, pool)) == {"alpha": True, "beta": True}
    now = services.pool_bias(pool=Pool.objects.get(pk=pool.pk))
    served = sorted(run["run"] for run in bias(manager, pool)["runs"])
    assert served == sorted(run["run"] for run in now["runs"]) == ["alpha", "beta"]


def test_a_run_whose_rows_are_replaced_is_scored_on_its_new_rows(
    pool: Pool, manager: Any, tmp_path: Path
) -> None:
    def alpha_ndcg() -> float:
        (alpha,) = [run for run in report(manager, pool)["runs"] if run["run"] == "alpha"]
        return alpha["nonrelevant"]["ndcg_cut_10"]

    before = alpha_ndcg()
    reversed_lists = tmp_path / "alpha.run"
    reversed_lists.write_text(
        "".join(
            f"{qid} Q0 {docid} {rank} {10 - rank} alpha\n"
            for qid, docids in LISTS["alpha"].items()
            for rank, docid in enumerate(reversed(docids), 1)
        )
    )
    imports.import_run(collection=pool.collection, path=reversed_lists, name="alpha", replace=True)
    after = alpha_ndcg()
    assert after != before
    (expected,) = [run for run in services.pool_report(pool=pool)["runs"] if run["run"] == "alpha"]
    assert after == pytest.approx(expected["nonrelevant"]["ndcg_cut_10"])


def test_a_topic_moved_to_another_segment_by_an_import_moves_in_the_report(
    pool: Pool, manager: Any, tmp_path: Path
) -> None:
    assert sorted(report(manager, pool)["segments"]["alpha"]) == ["head", "tail"]
    topics = tmp_path / "topics.jsonl"
    topics.write_text(
        '{"qid": "q1", "query": "query q1", "segments": ["news"]}\n'
        '{"qid": "q2", "query": "query q2", "segments": ["news"]}\n'
    )
    imports.import_topics(collection=pool.collection, path=topics)
    assert sorted(report(manager, pool)["segments"]["alpha"]) == ["news"]


def test_a_gold_label_set_or_changed_moves_the_rater_quality_at_once(pool: Pool, manager: Any) -> None:
    def quality() -> dict[str, Any]:
        answer = client_for(manager).get(f"/api/rater-quality/{pool.name}/")
        assert answer.status_code == 200, answer.content
        return answer.json()

    before = quality()
    item = pool.items.get(topic__qid="q1", document__docid="d001")
    for grade in (2, 0):  # rita said 2: right, then wrong against the gold
        adjudication.set_gold(item=item, grade=grade, by=manager)
        served = quality()
        cache.clear()
        assert served == quality() != before


def test_the_stamp_moves_with_each_of_them(pool: Pool, tmp_path: Path) -> None:
    """The rule itself, without a page: each change moves `data_stamp`, and reading moves nothing."""
    stamps = [data_stamp(pool), data_stamp(pool)]
    assert stamps[0] == stamps[1]
    pool_build.add_runs(pool=pool, runs=[Run.objects.get(collection=pool.collection, name="beta")])
    stamps.append(data_stamp(pool))
    run_file = tmp_path / "beta.run"
    run_file.write_text("q1 Q0 d001 1 3 beta\nq2 Q0 d010 1 3 beta\n")
    imports.import_run(collection=pool.collection, path=run_file, name="beta", replace=True)
    stamps.append(data_stamp(pool))
    topics = tmp_path / "topics.jsonl"
    topics.write_text('{"qid": "q1", "query": "query q1", "segments": ["news"]}\n')
    imports.import_topics(collection=pool.collection, path=topics)
    stamps.append(data_stamp(pool))
    assert len(set(stamps[1:])) == 4, stamps

"""One rule, whoever asks: the report (page and API), the noise floor, the `evaluate` command and a
release's files agree on the edge cases of a campaign — an item people left unrateable that a model
judge labelled, grades above the pool's relevance level, a topic of the pool that nothing was pooled for."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command

from evaluation import metrics, services
from evaluation.judge_gate import measure_gate
from judgements import releases
from judgements.judges import run_judge
from judgements.models import Judgement
from pooling.models import Pool, PoolItem
from pooling.trec_io import read_qrels
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.judge_factories import copy_judge, make_judged_pool
from tests.judgements.test_releases import judge


def _unrateable_for_people(pool: Pool, raters: list[Any], count: int) -> list[tuple[str, str]]:
    """`count` of the items nobody judged made unrateable by every rater: judged by people, no grade."""
    items = list(PoolItem.objects.filter(pool=pool, num_judgements=0).order_by("pk")[:count])
    for rater in raters:
        for item in items:
            Judgement.objects.create(
                item=item, rater=rater, rubric=pool.judging.rubric, grade=None, unrateable=True
            )
    PoolItem.objects.filter(pk__in=[item.pk for item in items]).update(num_judgements=len(raters))
    return [(item.topic.qid, item.document.docid) for item in items]


def test_a_judge_fills_the_same_items_in_a_release_and_in_the_report(
    db: None, rater: Any, second_rater: Any, manager: Any, tmp_path: Path
) -> None:
    """The items a model judge's labels fill are the items people left pending, for a release and for the
    report alike: an item every rater called unrateable was judged by people (it has no grade), so it
    stays -1 in both, and the report scores exactly what the judge-filled release holds."""
    pool = make_judged_pool(raters=[rater, second_rater], managers=[manager], unjudged_every=4)
    unrateable = _unrateable_for_people(pool, [rater, second_rater], 3)
    copier = copy_judge(pool, tmp_path)
    run_judge(judge=copier)
    measure_gate(judge=copier)

    release = releases.create_release(pool=pool, judge="copier")
    qrels_path = Path(settings.MEDIA_ROOT) / release.directory / "qrels.txt"
    lines = {
        tuple(line.split()[::2][:2]): int(line.split()[3]) for line in qrels_path.read_text().splitlines()
    }
    assert all(lines[item] == -1 for item in unrateable)
    assert release.manifest["counts"]["sources"] == {"human": 30, "model:copier": 10 - 3}
    assert release.manifest["counts"]["unrateable"] == 3

    report = client_for(manager).get(f"/api/evaluation/{pool.name}/report/?judge=copier").json()
    assert report["judge"]["labels"] == release.manifest["counts"]["sources"]["model:copier"]
    from_files = read_qrels(qrels_path)
    for row in report["runs"]:
        run = services.run_as_dict(run=pool.collection.runs.get(name=row["run"]))
        scored = metrics.evaluate(
            from_files, run, ["ndcg_cut_10", "P_10"], relevance_level=pool.relevance_level
        ).means
        assert row["nonrelevant"]["ndcg_cut_10"] == pytest.approx(scored["ndcg_cut_10"], abs=1e-6)
        assert row["nonrelevant"]["P_10"] == pytest.approx(scored["P_10"], abs=1e-6)


@pytest.fixture
def level_two(db: None, manager: Any) -> Pool:
    """A pool whose relevance level is 2, with grades 1 (not relevant there) and 2 and 3 (relevant), one
    document judged -1 (unrateable) and one pending."""
    rita = make_user("rita")
    pool = make_pool(raters=[rita], relevance_level=2, name="level-two")
    judge(pool, rita, {("q1", "d001"): 1, ("q1", "d002"): 3, ("q1", "d003"): 1, ("q1", "d004"): None,
                       ("q2", "d010"): 2, ("q2", "d011"): 1, ("q2", "d012"): 0})  # fmt: skip
    return pool


def _cli_means(pool: Pool, run_path: Path, *flags: str) -> dict[str, float]:
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", f"pool:{pool.name}", str(run_path), *flags, stdout=out, stderr=err)
    return {
        measure.strip(): float(value)
        for measure, qid, value in (line.split("\t") for line in out.getvalue().splitlines())
        if qid == "all" and measure.strip() != "runid"
    }


def test_evaluate_on_a_pool_takes_the_pools_relevance_level_as_the_report_does(
    level_two: Pool, manager: Any, tmp_path: Path
) -> None:
    """`evaluate pool:NAME` scores at the pool's relevance level, as the report, the release's manifest
    and the offline tracker do (a grade 1 is not relevant in a pool whose level is 2); `-l` still chooses
    another level, and a qrels file keeps trec_eval's default of 1."""
    run_path = tmp_path / "alpha.run"
    run = services.run_as_dict(run=level_two.collection.runs.get(name="alpha"))
    run_path.write_text(
        "".join(
            f"{q} Q0 {d} {n} {s} alpha\n" for q, docs in run.items() for n, (d, s) in enumerate(docs.items())
        )
    )
    report = client_for(manager).get(f"/api/evaluation/{level_two.name}/report/").json()
    (alpha,) = [row for row in report["runs"] if row["run"] == "alpha"]
    shown = _cli_means(level_two, run_path, "-m", "P.10", "-m", "map", "-m", "recip_rank")
    assert report["relevance_level"] == 2 == level_two.relevance_level
    assert shown["P_10"] == pytest.approx(alpha["nonrelevant"]["P_10"], abs=5e-5)
    assert shown["recip_rank"] == pytest.approx(alpha["nonrelevant"]["recip_rank"], abs=5e-5)
    assert shown["map"] == pytest.approx(alpha["nonrelevant"]["map"], abs=5e-5)
    assert shown["recip_rank"] == pytest.approx(0.5 * (1 / 2 + 1 / 1))  # q1: d002 at 2; q2: d010 at 1
    at_one = _cli_means(level_two, run_path, "-m", "recip_rank", "-l", "1")
    assert at_one["recip_rank"] == pytest.approx(1.0)
    qrels_path = tmp_path / "qrels.txt"
    qrels_path.write_text("q1 0 d002 1\nq1 0 d001 2\n")
    out = io.StringIO()
    call_command(
        "evaluate", str(qrels_path), str(run_path), "-m", "recip_rank", stdout=out, stderr=io.StringIO()
    )
    assert out.getvalue().splitlines()[-1].split("\t")[-1] == "1.0000"  # d001 at rank 1, relevant at 1


def test_a_topic_nothing_was_pooled_for_is_not_judged_in_every_report(
    db: None, manager: Any, tmp_path: Path
) -> None:
    """A topic of the pool no run retrieved anything for (q3) has no item, and one whose every item people
    called unrateable (q4) has no grade: nobody judged either. The report, the pool-bias table, the
    two-stage diagnosis and the noise floor all list both among the topics not judged, their counts of
    topics add up, and `evaluate pool:NAME` leaves the same topics out; a release's files hold the topics
    with an item (q4 apart, in qrels.unjudged.txt)."""
    collection = make_collection(topics=("q1", "q2", "q3", "q4"))
    lists = {"q1": ["d001", "d002"], "q2": ["d010", "d011"], "q4": ["d015"]}
    runs = [
        make_run(collection=collection, name="alpha", lists=lists),
        make_run(collection=collection, name="beta", lists={q: list(reversed(d)) for q, d in lists.items()}),
    ]
    rita = make_user("rita")
    pool = make_pool(collection=collection, runs=runs, raters=[rita], name="three")
    judge(pool, rita, {("q1", "d001"): 1, ("q1", "d002"): 0, ("q2", "d010"): 2, ("q2", "d011"): 0,
                       ("q4", "d015"): None})  # fmt: skip
    api = client_for(manager)
    report = api.get(f"/api/evaluation/{pool.name}/report/").json()
    bias = api.get(f"/api/evaluation/{pool.name}/pool-bias/").json()
    stages = api.get(f"/api/evaluation/{pool.name}/two-stage/?candidate=alpha&reranked=beta").json()
    floor = api.get(f"/api/evaluation/{pool.name}/noise-floor/?label_samples=0&splits=0").json()
    for answer in (report, bias, stages, floor):
        assert answer["not_judged_topics"] == ["q3", "q4"], answer
    assert report["topics"] == floor["topics"] == bias["topics"] == 4
    assert report["judged_topics"] + len(report["not_judged_topics"]) == report["topics"]
    assert floor["judged_topics"] + len(floor["not_judged_topics"]) == floor["topics"]
    manifest = releases.create_release(pool=pool).manifest
    assert (manifest["topics"]["judged"], manifest["topics"]["not_judged"]) == (report["judged_topics"], 1)
    run_path = tmp_path / "alpha.run"
    run_path.write_text("q1 Q0 d001 1 2 a\nq2 Q0 d010 1 2 a\nq4 Q0 d015 1 2 a\n")
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", f"pool:{pool.name}", str(run_path), "-m", "num_q", stdout=out, stderr=err)
    assert "num_q                 \tall\t2\n" in out.getvalue() and "q4" in err.getvalue()


def test_every_evaluation_page_reads_the_labels_under_the_policy_the_api_does(db: None, manager: Any) -> None:
    """`?policy=` names the labels of the two-stage page as of its API (and of the pool bias, the report
    and the noise floor): under `rater:alice` alice's grades, not the majority's. Here the majority breaks
    every tie between alice's 2 and bob's 0 to the lower grade, so it has no relevant document at all."""
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(raters=[alice, bob], judgements_per_item=2, name="split")
    grades: dict[tuple[str, str], int | None] = {
        ("q1", "d001"): 2, ("q1", "d002"): 0, ("q2", "d010"): 2, ("q2", "d011"): 0,
    }  # fmt: skip
    judge(pool, alice, grades)
    judge(pool, bob, dict.fromkeys(grades, 0))
    query = "candidate=alpha&reranked=beta&policy=rater:alice"
    api = client_for(manager).get(f"/api/evaluation/{pool.name}/two-stage/?{query}").json()
    assert api["no_relevant_topics"] == [] and sum(api["verdicts"].values()) == 2
    from tests.evaluation.test_report_numbers import page

    shown = page(manager, f"/evaluation/{pool.name}/two-stage/?{query}")
    assert f'<strong class="verdict">{api["verdict"]}</strong>' in shown
    assert '<input type="hidden" name="policy" value="rater:alice">' in shown
    majority = client_for(manager).get(
        f"/api/evaluation/{pool.name}/two-stage/?candidate=alpha&reranked=beta"
    )
    assert majority.json()["no_relevant_topics"] == ["q1", "q2"]
    bias = client_for(manager).get(f"/api/evaluation/{pool.name}/pool-bias/?policy=%20rater:alice%20")
    assert bias.status_code == 200 and bias.json()["policy"] == "rater:alice"
    assert (
        client_for(manager).get(f"/api/evaluation/{pool.name}/pool-bias/?policy=loudest").status_code == 400
    )
    # the report's links keep a policy other than the default (and add nothing for the default)
    report = page(manager, f"/evaluation/{pool.name}/?policy=rater:alice")
    assert f'href="/evaluation/{pool.name}/two-stage/?policy=rater%3Aalice"' in report
    assert f'href="/evaluation/{pool.name}/pool-bias/?policy=rater%3Aalice"' in report
    plain = page(manager, f"/evaluation/{pool.name}/")
    assert f'href="/evaluation/{pool.name}/two-stage/"' in plain

"""A run with no results for a judged topic (SPEC §8, Averaging): its means are over the judged topics it
has (trec_eval's default), with the lacking ones named, or over every judged topic with those counting 0
(trec_eval -c); never "not judged", never dropped in silence. Wherever two runs are compared (the noise
floor's verdict, its command-line form with -c, the two-stage diagnosis), they are compared over the same
topics. The numbers are pytrec_eval's."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval
from django.core.management import call_command
from django.test import Client

from evaluation import noise_floor, services
from judgements.releases import current_qrels
from pooling.models import Pool
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

# Segments (make_collection): t1 tail, t2 head, t3 tail, t4 head. A lacks t2, the only judged topic of
# "head" (t4 nobody judges); C ranks t2's one relevant document fifth.
LISTS = {
    "A": {"t1": ["d001", "d002", "d003", "d004"], "t3": ["d008", "d009", "d010", "d011"], "t4": ["d014"]},
    "B": {
        "t1": ["d002", "d001", "d004", "d003"],
        "t2": ["d005", "d006", "d007"],
        "t3": ["d009", "d008", "d011", "d010"],
        "t4": ["d015", "d014"],
    },
    "C": {
        "t1": ["d003", "d001", "d002"],
        "t2": ["d006", "d007", "d013", "d012", "d005"],
        "t3": ["d010", "d009", "d008"],
        "t4": ["d014"],
    },
}
GRADES: dict[tuple[str, str], int | None] = {
    ("t1", "d001"): 2,
    ("t1", "d002"): 0,
    ("t1", "d003"): 1,
    ("t2", "d005"): 2,
    ("t2", "d006"): 0,
    ("t3", "d008"): 0,
    ("t3", "d009"): 1,
    ("t3", "d010"): 2,
}
JUDGED = ("t1", "t2", "t3")


@pytest.fixture
def pool(manager: Any) -> Pool:
    collection = make_collection(topics=("t1", "t2", "t3", "t4"), managers=[manager])
    runs = [make_run(collection=collection, name=name, lists=lists) for name, lists in LISTS.items()]
    alice = make_user("alice")
    made = make_pool(collection=collection, runs=runs, name="mini", raters=[alice], managers=[manager])
    judge(made, alice, GRADES)
    return made


def as_run(lists: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    return {
        qid: {docid: 100.0 - rank for rank, docid in enumerate(docids, 1)} for qid, docids in lists.items()
    }


def reference(pool: Pool, run: str, measure: str = "ndcg_cut_10") -> dict[str, float]:
    """pytrec_eval's per-topic values of the run over the judged topics it has."""
    qrels = {q: docs for q, docs in current_qrels(pool=pool).items() if q in JUDGED}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {measure.replace("_cut_", "_cut.")})
    return {q: v[measure] for q, v in evaluator.evaluate(as_run(LISTS[run])).items()}


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


@pytest.mark.django_db
def test_the_report_names_the_judged_topics_a_run_lacks_and_says_what_its_means_are_over(pool, manager):
    answer = client_for(manager).get(f"/api/evaluation/{pool.name}/report/")
    assert answer.status_code == 200, answer.content
    data = answer.json()
    rows = {row["run"]: row for row in data["runs"]}
    a = rows["A"]
    assert (a["topics"], a["missing_topics"]) == (2, ["t2"])
    assert len(a["warnings"]) == 1 and "t2" in a["warnings"][0] and "over the 2" in a["warnings"][0]
    assert (rows["B"]["topics"], rows["B"]["missing_topics"], rows["B"]["warnings"]) == (3, [], [])
    # the common-topics mean is pytrec_eval's over the run's topics (t2 is not a 0 in it)
    ours = reference(pool, "A")
    assert sorted(ours) == ["t1", "t3"]
    assert a["nonrelevant"]["ndcg_cut_10"] == pytest.approx(mean(list(ours.values())), abs=1e-6)
    # per segment: "head" is judged (t2), A has no results there; B's head mean is its t2
    assert data["segments_missing"]["A"] == {"head": ["t2"]} and "head" not in data["segments"]["A"]
    assert data["segments_missing"]["B"] == {}
    assert data["segments"]["B"]["head"]["num_q"] == 1
    # the test pairs A and B over the topics both have
    test = next(t for t in data["significance"] if (t["a"], t["b"]) == ("A", "B"))
    b = reference(pool, "B")
    assert test["n"] == 2
    assert test["mean_difference"] == pytest.approx(mean([ours[q] - b[q] for q in ours]), abs=1e-6)

    page = logged_in(manager).get(f"/evaluation/{pool.name}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert a["warnings"][0] in html.replace("&#x27;", "'")
    segment_rows = re.search(r'<table class="segments">(.*?)</table>', html, re.S)
    assert segment_rows is not None
    row_a = re.search(r"<tr><td>A</td>(.*?)</tr>", segment_rows.group(1), re.S)
    assert row_a is not None
    assert "no results for t2" in row_a.group(1) and "not judged" not in row_a.group(1)


def test_the_noise_floor_verdict_is_the_paired_difference_over_the_topics_both_runs_have():
    qrels = {
        "t1": {"d001": 2, "d002": 0, "d003": 1},
        "t2": {"d005": 2, "d006": 0},
        "t3": {"d008": 0, "d009": 1, "d010": 2},
    }
    runs = {name: as_run(LISTS[name]) for name in ("A", "B")}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"})
    a, b = ({q: v["ndcg_cut_10"] for q, v in evaluator.evaluate(runs[n]).items()} for n in ("A", "B"))
    paired = mean([a[q] - b[q] for q in a])
    unpaired = mean(list(a.values())) - mean(list(b.values()))
    assert abs(paired - unpaired) > 0.01  # the two readings differ here

    data = noise_floor.report(
        noise_floor.Campaign.of(runs, qrels, {}, measures=["ndcg_cut_10"]),
        n_topic_samples=50,
        n_label_samples=0,
        n_splits=0,
    )
    (pair,) = data["pairs"]["ndcg_cut_10"]
    assert pair["topics"] == 2 and pair["delta"] == pytest.approx(paired, abs=1e-6)
    assert f"= {paired:.3f}" in pair["verdict"]
    # each run's own mean is still over its own topics
    means = {row["run"]: row["means"]["ndcg_cut_10"] for row in data["runs"]}
    assert means == pytest.approx({"A": mean(list(a.values())), "B": mean(list(b.values()))}, abs=1e-6)

    complete = noise_floor.report(
        noise_floor.Campaign.of(runs, qrels, {}, measures=["ndcg_cut_10"], average="all"),
        n_topic_samples=50,
        n_label_samples=0,
        n_splits=0,
    )
    (pair,) = complete["pairs"]["ndcg_cut_10"]
    with_zero = {**a, "t2": 0.0}
    assert pair["topics"] == 3
    assert pair["delta"] == pytest.approx(mean(list(with_zero.values())) - mean(list(b.values())), abs=1e-6)


@pytest.mark.django_db
def test_the_command_with_c_gives_the_verdict_of_the_c_means(pool, tmp_path: Path):
    paths = []
    for name in ("A", "B"):
        path = tmp_path / f"{name}.run"
        path.write_text(
            "".join(
                f"{qid} Q0 {docid} {rank} {100 - rank} {name}\n"
                for qid, docids in LISTS[name].items()
                for rank, docid in enumerate(docids, 1)
            )
        )
        paths.append(str(path))
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "evaluate",
        "-c",
        "--noise-floor",
        f"pool:{pool.name}",
        *paths,
        "-m",
        "ndcg_cut.10",
        stdout=out,
        stderr=err,
    )
    printed = [float(line.split("\t")[2]) for line in out.getvalue().splitlines() if "\tall\t" in line]
    a, b = reference(pool, "A"), reference(pool, "B")
    c_mean_a = sum(a.values()) / len(JUDGED)  # t2 counts 0 under -c
    assert printed == pytest.approx([c_mean_a, mean(list(b.values()))], abs=5e-5)
    verdict = re.search(r"# noise floor: A\.run vs B\.run: Δ nDCG@10 = (-?\d+\.\d+)", err.getvalue())
    assert verdict is not None, err.getvalue()
    assert float(verdict.group(1)) == pytest.approx(printed[0] - printed[1], abs=1e-3)


@pytest.mark.django_db
def test_two_stage_diagnoses_a_topic_a_run_has_no_results_for(pool, manager):
    # A retrieved nothing for t2 (relevant d005): recall 0, and C's nDCG there is low: a retrieval problem
    data = services.two_stage(pool=pool, candidate="A", reranked="C", k=100)
    topics = {t["qid"]: t for t in data["topics"]}
    assert sorted(topics) == list(JUDGED) and data["candidate_missing"] == ["t2"]
    c = reference(pool, "C")
    assert (topics["t2"]["recall"], topics["t2"]["verdict"]) == (0.0, "retrieval problem")
    assert topics["t2"]["ndcg_10"] == pytest.approx(c["t2"], abs=1e-6)
    # the reranked run ranked nothing for t2 where the candidate found its relevant document: nDCG 0
    data = services.two_stage(pool=pool, candidate="B", reranked="A", k=100)
    topics = {t["qid"]: t for t in data["topics"]}
    assert data["reranked_missing"] == ["t2"]
    assert (topics["t2"]["ndcg_10"], topics["t2"]["recall"], topics["t2"]["verdict"]) == (
        0.0,
        1.0,
        "ranking problem",
    )
    assert data["mean_ndcg_10"] == pytest.approx(sum(reference(pool, "A").values()) / 3, abs=1e-6)
    answer = client_for(manager).get(f"/api/evaluation/{pool.name}/two-stage/?candidate=A&reranked=C")
    assert answer.status_code == 200 and answer.json()["candidate_missing"] == ["t2"]
    page = logged_in(manager).get(f"/evaluation/{pool.name}/two-stage/?candidate=A&reranked=C")
    assert page.status_code == 200 and "retrieved nothing for t2" in page.content.decode()


@pytest.mark.django_db
def test_pool_bias_ranks_the_runs_over_the_topics_they_all_have(pool, manager):
    data = services.pool_bias(pool=pool)
    assert data["compared_topics"] == 2  # t1, t3: A has no t2
    rows = {row["run"]: row for row in data["runs"]}
    assert rows["A"]["missing_topics"] == ["t2"] and rows["B"]["missing_topics"] == []
    for name in ("A", "B", "C"):
        ours = reference(pool, name)
        assert rows[name]["full"] == pytest.approx(mean([ours["t1"], ours["t3"]]), abs=1e-6)
    answer = client_for(manager).get(f"/api/evaluation/{pool.name}/pool-bias/")
    assert answer.status_code == 200 and answer.json()["compared_topics"] == 2

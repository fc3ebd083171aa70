"""Releases: aggregation into qrels that keep unjudged documents explicit, readable by every tool."""

from __future__ import annotations

import hashlib
import io
import json
import os
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval
from django.conf import settings
from django.core.management import CommandError, call_command

from judgements import adjudication, errors, labels, releases
from judgements.models import Judgement, Release
from pooling.models import PoolItem
from tests.factories import make_pool, make_user


def judge(pool, rater, grades: dict[tuple[str, str], int | None]) -> None:
    """Give `rater` a judgement on each (qid, docid) → grade (None = unrateable), through the services."""
    for (qid, docid), grade in grades.items():
        item = PoolItem.objects.get(pool=pool, topic__qid=qid, document__docid=docid)
        Judgement.objects.create(item=item, rater=rater, rubric=pool.judging.rubric, grade=grade,
                                 unrateable=grade is None)  # fmt: skip
        PoolItem.objects.filter(pk=item.pk).update(num_judgements=item.num_judgements + 1)


def release_files(release: Release) -> dict[str, bytes]:
    root = Path(settings.MEDIA_ROOT) / release.directory
    return {name: (root / name).read_bytes() for name in ("qrels.txt", "judgements.jsonl", "manifest.json")}


@pytest.fixture
def judged_pool(db):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(judgements_per_item=2, raters=[alice, bob])
    # q1 items: d001 d002 d003 d004 d005 d006; q2: d010 d011 d012 d013
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q1", "d005"): None,
                        ("q2", "d010"): 2, ("q2", "d011"): 0})  # fmt: skip
    judge(pool, bob, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 3, ("q1", "d005"): None,
                      ("q2", "d010"): 2})  # fmt: skip
    return pool, alice, bob


def test_it_writes_judged_items_and_marks_pending_and_unrateable_with_minus_one(judged_pool):
    pool, _, _ = judged_pool
    release = releases.create_release(pool=pool, policy="majority")
    qrels = release_files(release)["qrels.txt"].decode().splitlines()
    assert qrels == [
        "q1 0 d001 2",  # 3 vs 2: a tie goes to the lower grade
        "q1 0 d002 0",
        "q1 0 d003 1",
        "q1 0 d004 -1",  # pending: nobody judged it
        "q1 0 d005 -1",  # unrateable
        "q1 0 d006 -1",
        "q2 0 d010 2",
        "q2 0 d011 -1",  # one judgement of the two needed: pending
        "q2 0 d012 -1",
        "q2 0 d013 -1",
    ]
    assert release.counts["judged"] == 4
    assert release.counts["unrateable"] == 1
    assert release.counts["pending"] == 5
    assert release.counts["ties"] == 2


def test_it_omits_unjudged_items_when_asked(judged_pool):
    pool, _, _ = judged_pool
    release = releases.create_release(pool=pool, policy="majority", unjudged="omit")
    lines = release_files(release)["qrels.txt"].decode().splitlines()
    assert all(not line.endswith(" -1") for line in lines)
    assert len(lines) == 4


def test_it_applies_each_policy_and_lets_adjudication_override(judged_pool):
    pool, alice, _ = judged_pool
    grades = lambda rel: {  # noqa: E731
        line.split()[2]: int(line.split()[3])
        for line in release_files(rel)["qrels.txt"].decode().splitlines()
    }
    assert grades(releases.create_release(pool=pool, policy="mean"))["d003"] == 2  # (1 + 3) / 2
    assert grades(releases.create_release(pool=pool, policy="median"))["d001"] == 2
    rater_alice = grades(releases.create_release(pool=pool, policy="rater:alice"))
    assert rater_alice["d001"] == 3 and rater_alice["d011"] == 0
    item = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d003")
    adjudication.adjudicate(item=item, adjudicator=alice, grade=3, note="clearly answers it")
    assert grades(releases.create_release(pool=pool, policy="majority"))["d003"] == 3
    with pytest.raises(errors.JudgingError):
        releases.create_release(pool=pool, policy="loudest")
    with pytest.raises(errors.JudgingError):
        releases.create_release(pool=pool, policy="rater:nobody")


def test_it_makes_byte_identical_releases_of_unchanged_data_with_true_hashes(judged_pool):
    pool, _, _ = judged_pool
    first = release_files(releases.create_release(pool=pool))
    second_release = releases.create_release(pool=pool)
    second = release_files(second_release)
    assert first == second
    manifest = json.loads(second["manifest.json"])
    for name in ("qrels.txt", "judgements.jsonl"):
        assert manifest["files"][name]["sha256"] == hashlib.sha256(second[name]).hexdigest()
    assert second_release.files["manifest.json"] == hashlib.sha256(second["manifest.json"]).hexdigest()
    assert manifest["counts"]["pending"] == 5
    assert manifest["rubric"]["version"] == 1
    assert set(manifest["agreement"]["cohen_kappa"]) == {"unweighted", "linear", "quadratic"}


def test_it_keeps_a_release_immutable_when_judgements_change(judged_pool):
    pool, alice, _ = judged_pool
    old = releases.create_release(pool=pool)
    before = release_files(old)
    judgement = Judgement.objects.get(rater=alice, item__document__docid="d001")
    labels.revise_judgement(judgement=judgement, by=alice, grade=0)
    new = releases.create_release(pool=pool)
    assert release_files(old) == before
    assert release_files(new)["qrels.txt"] != before["qrels.txt"]
    root = Path(settings.MEDIA_ROOT) / old.directory
    for name in ("qrels.txt", "judgements.jsonl", "manifest.json"):
        assert (root / name).stat().st_mode & 0o222 == 0  # read-only on disk


def test_it_pseudonymises_raters_in_judgements_jsonl(judged_pool):
    pool, alice, bob = judged_pool
    text = release_files(releases.create_release(pool=pool))["judgements.jsonl"].decode()
    assert "alice" not in text and "bob" not in text
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 11
    assert {row["state"] for row in rows} == {"graded", "unrateable"}
    assert len({row["rater"] for row in rows}) == 2


def test_it_counts_unpooled_documents_of_every_run(judged_pool):
    pool, _, _ = judged_pool
    release = releases.create_release(pool=pool)
    runs = release.manifest["runs"]
    assert runs["alpha"] == {"retrieved": 7, "unpooled": 0}
    assert runs["beta"]["unpooled"] == 0
    pool.depth = 1  # a shallower pool leaves documents of both runs unpooled
    pool.save()
    PoolItem.objects.filter(pool=pool, num_judgements=0).delete()
    runs = releases.create_release(pool=pool).manifest["runs"]
    assert runs["alpha"]["unpooled"] > 0


def test_a_release_loads_in_pytrec_eval_and_ir_measures_and_supports_condensed_mode(judged_pool, tmp_path):
    pool, _, _ = judged_pool
    release = releases.create_release(pool=pool)
    path = Path(settings.MEDIA_ROOT) / release.directory / "qrels.txt"
    with open(path) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    run = {"q1": {"d004": 9.0, "d001": 8.0, "d003": 7.0, "d002": 6.0}, "q2": {"d011": 5.0, "d010": 4.0}}
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"P_2", "ndcg", "recip_rank"}).evaluate(run)
    # d004 is -1 (pending): trec_eval counts it as non-relevant at rank 1
    assert scores["q1"]["recip_rank"] == pytest.approx(0.5)
    assert scores["q2"]["recip_rank"] == pytest.approx(0.5)
    # condensed (trec_eval -J): drop unjudged documents, i.e. those with a negative label, and re-rank
    judged_only = {q: {d: s for d, s in docs.items() if qrels[q].get(d, -1) >= 0} for q, docs in run.items()}
    condensed = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(judged_only)
    assert condensed["q1"]["recip_rank"] == pytest.approx(1.0)
    assert condensed["q2"]["recip_rank"] == pytest.approx(1.0)
    # our engine with the condensed policy agrees
    from evaluation import metrics

    ours = metrics.evaluate(qrels, run, ["recip_rank"], unjudged="condensed")
    assert ours.topic_values("recip_rank") == pytest.approx({"q1": 1.0, "q2": 1.0})
    measured = ir_measures.calc_aggregate(
        [ir_measures.nDCG @ 10, ir_measures.RR], list(ir_measures.read_trec_qrels(str(path))),
        [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()],
    )  # fmt: skip
    assert measured[ir_measures.RR] == pytest.approx(0.5)


def test_the_command_writes_the_files_and_refuses_bad_input(judged_pool, tmp_path):
    pool, _, _ = judged_pool
    out = io.StringIO()
    call_command("release_qrels", pool.name, "--policy", "median", "-o", str(tmp_path / "rel"), stdout=out)
    assert "judged" in out.getvalue()
    assert sorted(p.name for p in (tmp_path / "rel").iterdir()) == [
        "judgements.jsonl",
        "manifest.json",
        "qrels.txt",
        "qrels.unjudged.txt",
    ]
    with pytest.raises(CommandError):
        call_command("release_qrels", "no-such-pool")
    with pytest.raises(CommandError):
        call_command("release_qrels", pool.name, "--policy", "rater:")
    assert Release.objects.count() == 1


def test_a_bad_output_directory_stops_the_command_before_a_release_is_made(judged_pool, tmp_path):
    # A release is published once made: each of these once left a release behind and a traceback.
    pool, _, _ = judged_pool
    a_file = tmp_path / "taken.txt"
    a_file.write_text("x")
    read_only = tmp_path / "read-only"
    read_only.mkdir(mode=0o555)
    cases = [
        (a_file, f"-o {a_file}: not a directory"),
        (a_file / "below", f"-o {a_file / 'below'}: cannot make the directory ({a_file} is not a directory)"),
    ]
    if os.geteuid() != 0:  # root writes anywhere
        cases.append((read_only, f"-o {read_only}: not writable"))
    for target, message in cases:
        with pytest.raises(CommandError) as info:
            call_command("release_qrels", pool.name, "-o", str(target))
        assert str(info.value) == message
    assert not Release.objects.exists()


def test_a_failed_copy_says_the_release_was_made(judged_pool, tmp_path, monkeypatch):
    pool, _, _ = judged_pool

    def full_disk(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("shutil.copyfile", full_disk)
    with pytest.raises(CommandError) as info:
        call_command("release_qrels", pool.name, "-o", str(tmp_path / "rel"))
    release = Release.objects.get()
    assert str(info.value).startswith(f"release {release.number} of {pool.name} is made (in ")
    assert "No space left on device" in str(info.value)


def test_the_agreement_command_prints_kappa_as_text_and_json(judged_pool):
    pool, _, _ = judged_pool
    out = io.StringIO()
    call_command("agreement", pool.name, "--format", "json", "--weights", "linear", stdout=out)
    data = json.loads(out.getvalue())
    kappa_keys = [key for key in data if "kappa" in key]
    assert kappa_keys
    from sklearn.metrics import cohen_kappa_score

    # the 4 items both raters graded: alice 3,0,1,2 vs bob 2,0,3,2
    expected = cohen_kappa_score([3, 0, 1, 2], [2, 0, 3, 2], labels=[0, 1, 2, 3], weights="linear")
    assert data["cohen_kappa"] == pytest.approx(expected)
    text = io.StringIO()
    call_command("agreement", pool.name, stdout=text)
    assert "cohen_kappa" in text.getvalue() and "Raters agree" in text.getvalue()
    fleiss = data["fleiss"]  # the text says over what Fleiss was computed, as the JSON does
    line = next(line for line in text.getvalue().splitlines() if line.startswith("fleiss_kappa"))
    assert f"over {fleiss['n_items']} items rated {fleiss['ratings_per_item']} times" in line


def test_a_segment_pool_counts_the_documents_the_runs_retrieved_for_its_topics_only(db):
    from judgements.queries import unpooled_by_run
    from pooling.models import Topic

    whole = make_pool()
    Topic.objects.filter(collection=whole.collection, qid="q1").update(segments=["navigational"])
    navigational = make_pool(collection=whole.collection, runs=list(whole.runs.all()), segment="navigational")
    assert unpooled_by_run(pool=whole)["alpha"] == {"retrieved": 7, "unpooled": 0}
    assert unpooled_by_run(pool=navigational) == {
        "alpha": {"retrieved": 4, "unpooled": 0},  # q1's four documents, not q2's three
        "beta": {"retrieved": 4, "unpooled": 0},
    }
    Topic.objects.filter(collection=whole.collection).update(segments=[])
    assert unpooled_by_run(pool=navigational) == {}  # no topic left in the segment: nothing retrieved for it

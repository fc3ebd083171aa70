"""Releases in every state of a campaign are read unchanged by pytrec_eval and ir_measures, with the
platform's own numbers: topics nobody judged go to qrels.unjudged.txt, never to qrels.txt.

On a topic whose every qrels line is -1 trec_eval aborts and pytrec_eval scores 0 on every measure or
crashes (a segmentation fault with some measures; it hung in an older version), so the readers run in a
subprocess with a timeout: a regression fails the test instead of crashing or hanging the suite.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from evaluation import metrics
from judgements import release_manifest, releases
from judgements.models import Judgement
from pooling.models import PoolItem
from pooling.trec_io import read_qrels
from tests.factories import make_pool, make_user

# The default pool's items: q1 d001-d006, q2 d010-d013. The run ranks some of each, and one unpooled doc.
RUN = {
    "q1": {"d004": 9.0, "d001": 8.0, "d003": 7.0, "d002": 6.0, "d999": 5.0},
    "q2": {"d011": 5.0, "d010": 4.0, "d013": 3.0},
}
MEASURES = ["map", "ndcg", "P_5", "recip_rank", "bpref"]
READER = """
import json, sys
import ir_measures, pytrec_eval
qrels_path, run = sys.argv[1], json.loads(sys.argv[2])
with open(qrels_path) as handle:
    qrels = pytrec_eval.parse_qrel(handle)
per_topic = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "P_5", "recip_rank", "bpref"}).evaluate(run)
scored = [ir_measures.ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items()]
measures = [ir_measures.AP, ir_measures.nDCG, ir_measures.P @ 5, ir_measures.RR]
ir = {}
for metric in ir_measures.iter_calc(measures, list(ir_measures.read_trec_qrels(qrels_path)), scored):
    ir.setdefault(metric.query_id, {})[str(metric.measure)] = metric.value
print(json.dumps({"pytrec_eval": per_topic, "ir_measures": ir}))
"""


def judge(pool, rater, grades: dict[tuple[str, str], int | None]) -> None:
    for (qid, docid), grade in grades.items():
        item = PoolItem.objects.get(pool=pool, topic__qid=qid, document__docid=docid)
        Judgement.objects.create(item=item, rater=rater, rubric=pool.judging.rubric, grade=grade,
                                 unrateable=grade is None)  # fmt: skip
        PoolItem.objects.filter(pk=item.pk).update(num_judgements=item.num_judgements + 1)


Q1 = {("q1", d): g for d, g in (("d001", 2), ("d002", 0), ("d003", 1), ("d004", 0), ("d005", 3), ("d006", 1))}
Q2 = {("q2", d): g for d, g in (("d010", 1), ("d011", 0), ("d012", 2), ("d013", 0))}
STATES = {
    "nothing judged": ({}, (), ("q1", "q2")),
    "first topic pending": (Q2, ("q2",), ("q1",)),
    "last topic pending": (Q1, ("q1",), ("q2",)),
    "only unrateable": (dict.fromkeys({**Q1, **Q2}), (), ("q1", "q2")),
    "half judged topics": ({**dict(list(Q1.items())[:2]), **dict(list(Q2.items())[2:])}, ("q1", "q2"), ()),
}


def read_with_the_standard_tools(qrels_path: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", READER, str(qrels_path), json.dumps(RUN)],
        capture_output=True,
        text=True,
        timeout=60,  # pytrec_eval may crash or hang on a topic whose every line is -1
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize("state", list(STATES))
def test_every_tool_reads_a_release_in_any_state_with_the_platforms_numbers(db, state):
    grades, judged_topics, not_judged = STATES[state]
    rater = make_user("rita")
    pool = make_pool(raters=[rater])
    judge(pool, rater, grades)
    release = releases.create_release(pool=pool)
    root = Path(settings.MEDIA_ROOT) / release.directory
    main = (root / "qrels.txt").read_text().splitlines()
    apart = (root / "qrels.unjudged.txt").read_text().splitlines()
    # Every pool item is written once; a topic is in exactly one file, by whether anything in it is judged.
    assert len(main) + len(apart) == 10
    assert {line.split()[0] for line in main} == set(judged_topics)
    assert {line.split()[0] for line in apart} == set(not_judged)
    assert all(line.endswith(" -1") for line in apart)
    assert release.manifest["topics"]["judged"] == len(judged_topics)
    assert release.manifest["topics"]["not_judged"] == len(not_judged)
    assert release.manifest["topics"]["not_judged_file"] == "qrels.unjudged.txt"
    assert set(release.files) == {"qrels.txt", "qrels.unjudged.txt", "judgements.jsonl", "manifest.json"}

    tools = read_with_the_standard_tools(root / "qrels.txt")
    # The platform on the pool's live labels (all topics, -1 included) gives the same topics and numbers.
    live = metrics.evaluate(releases.current_qrels(pool=pool), RUN, MEASURES, skip_unjudged_topics=True)
    # (An empty qrels.txt — nothing judged yet — is refused by the platform's reader as "file is empty".)
    ours = metrics.evaluate(read_qrels(root / "qrels.txt"), RUN, MEASURES) if main else live
    assert live.topics == ours.topics == tuple(judged_topics)
    assert set(live.unjudged_topics) == set(not_judged)
    assert set(tools["pytrec_eval"]) == set(judged_topics)
    names = {"map": "AP", "ndcg": "nDCG", "P_5": "P@5", "recip_rank": "RR"}
    for qid in judged_topics:
        for m in MEASURES:
            assert live.per_topic[qid][m] == pytest.approx(tools["pytrec_eval"][qid][m]), (qid, m)
            assert ours.per_topic[qid][m] == pytest.approx(tools["pytrec_eval"][qid][m]), (qid, m)
        for m, name in names.items():
            assert live.per_topic[qid][m] == pytest.approx(tools["ir_measures"][qid][name]), (qid, m)


def test_an_omit_release_has_no_unjudged_file_and_says_so(db):
    rater = make_user("rita")
    pool = make_pool(raters=[rater])
    judge(pool, rater, Q2)
    release = releases.create_release(pool=pool, unjudged="omit")
    root = Path(settings.MEDIA_ROOT) / release.directory
    assert not (root / "qrels.unjudged.txt").exists()
    assert release.manifest["topics"] == {
        "judged": 1,
        "not_judged": 1,
        "not_judged_file": None,
        "layout": release_manifest.QRELS_LAYOUT_OMIT,
    }
    assert read_with_the_standard_tools(root / "qrels.txt")["pytrec_eval"].keys() == {"q2"}


def test_evaluate_on_a_half_judged_pool_leaves_the_topic_nobody_judged_out_of_the_mean(db, tmp_path):
    rater = make_user("rita")
    pool = make_pool(raters=[rater])
    judge(pool, rater, Q2)  # q1: every item pending
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} 0 {s} r\n" for q, docs in RUN.items() for d, s in docs.items()))
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "evaluate", f"pool:{pool.name}", str(run), "-m", "map", "-m", "num_q", stdout=out, stderr=err
    )
    q2_only = metrics.evaluate({"q2": {d: g for (_, d), g in Q2.items()}}, RUN, ["map"])
    assert out.getvalue() == (
        f"num_q                 \tall\t1\nmap                   \tall\t{q2_only.means['map']:6.4f}\n"
    )
    assert "1 of 2 qrels topics have no judged document" in err.getvalue() and "q1" in err.getvalue()
    # -c counts a topic the run lacks as 0, not a topic nobody judged: q1 stays out.
    out = io.StringIO()
    call_command(
        "evaluate", f"pool:{pool.name}", str(run), "-c", "-m", "num_q", stdout=out, stderr=io.StringIO()
    )
    assert out.getvalue() == "num_q                 \tall\t1\n"

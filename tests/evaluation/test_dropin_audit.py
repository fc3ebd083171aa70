"""Audit of ``evaluate`` as a trec_eval drop-in: cases found by comparing it with pytrec_eval."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import pytrec_eval

from evaluation import cli

QRELS = "1 0 a -1\n1 0 b -1\n2 0 c 1\n2 0 d 0\n"
RUN = "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n3 Q0 c 1 1.0 r\n"


def run_cli(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    cli.execute(vars(cli.build_parser().parse_args(list(args))), out, err)
    return out.getvalue(), err.getvalue()


def test_it_names_the_topics_nobody_judged_when_they_were_all_the_run_shared(tmp_path: Path) -> None:
    """The run's only qrels topic (1) has nothing judged: the refusal says so, not only trec_eval's
    "no topics with both results and relevance information", which would read as a wrong file."""
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text(QRELS)
    run.write_text(RUN)
    # pytrec_eval scores topic 1 (0 on every measure): the topic is shared, only nobody judged it.
    judged = {"1": {"a": -1, "b": -1}, "2": {"c": 1, "d": 0}}
    scored = pytrec_eval.RelevanceEvaluator(judged, {"P"}).evaluate({"1": {"a": 2.0, "b": 1.0}})
    assert set(scored) == {"1"}
    with pytest.raises(cli.EvaluateError) as caught:
        run_cli(str(qrels), str(run), "--trec-eval", "9")
    message = str(caught.value)
    assert "no topics with both results and relevance information" in message
    assert "nobody judged them: 1" in message

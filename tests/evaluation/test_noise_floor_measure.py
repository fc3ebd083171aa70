"""`evaluate --noise-floor` gives its verdict on the first measure the user asked for, in the order of the
-m options on the command line (not trec_eval's output order), and on nDCG@10 when only nicknames such as
official (the default) were given."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from evaluation import cli, metrics


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{t} 0 d{d} {(t + d) % 3}\n" for t in range(6) for d in range(4)))
    paths = [str(qrels)]
    for name, order in (("a.run", [0, 1, 2, 3]), ("b.run", [3, 1, 2, 0])):
        path = tmp_path / name
        path.write_text(
            "".join(f"q{t} Q0 d{d} {r} {10 - r} x\n" for t in range(6) for r, d in enumerate(order))
        )
        paths.append(str(path))
    return paths


@pytest.mark.parametrize(
    ("flags", "label"),
    [
        ([], "nDCG@10"),
        (["-m", "official"], "nDCG@10"),
        (["-m", "all_trec"], "nDCG@10"),
        (["-m", "ndcg_cut.10", "-m", "P.10"], "nDCG@10"),
        (["-m", "P.10", "-m", "ndcg_cut.10"], "P@10"),
        (["-m", "recip_rank", "-m", "map"], "MRR"),
        (["-m", "official", "-m", "recip_rank"], "MRR"),  # a nickname names no measure of its own
        (["-m", "num_ret", "-m", "P_10", "-m", "P_5"], "P@10"),  # a count scores no ranking
    ],
)
def test_the_verdict_is_on_the_first_measure_asked_for(
    files: list[str], flags: list[str], label: str
) -> None:
    err = io.StringIO()
    options = vars(cli.build_parser().parse_args([*files, *flags, "--noise-floor"]))
    cli.execute(options, io.StringIO(), err)
    verdicts = re.findall(r"^# noise floor: a\.run vs b\.run: Δ (\S+) = ", err.getvalue(), re.M)
    assert verdicts == [label], err.getvalue()


def test_measures_as_asked_keeps_the_command_lines_order_and_the_plans_parameters() -> None:
    assert [m.name for m in metrics.measures_as_asked(["ndcg_cut.10", "P.10"])] == ["ndcg_cut_10", "P_10"]
    assert [m.name for m in metrics.measures_as_asked(["official"])] == []
    # the first parameters given for a family win (trec_eval): P.20 computes nothing of its own
    assert [m.name for m in metrics.measures_as_asked(["P.5", "P.20", "map"])] == ["P_5", "map"]
    assert [m.name for m in metrics.measures_as_asked(["P_10", "P_5"])] == ["P_10", "P_5"]

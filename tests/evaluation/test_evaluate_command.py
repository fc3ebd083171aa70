"""manage.py evaluate: trec_eval's output on small files, several runs, options, and clean errors.

No test touches the database: the command reads files only.
"""

from __future__ import annotations

import gzip
from io import StringIO
from pathlib import Path
from typing import cast

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.management.commands.evaluate import resolve_qrels
from pooling.trec_io import QrelsTable

QRELS = """q1 0 d1 2
q1 0 d2 1
q1 0 d3 0
q1 0 d4 -1
q1 0 d5 3
q1 0 d6 1
q2 0 a 1
q2 0 b 0
q3 0 x 1
"""
RUN = """q1 Q0 d3 1 5.0 tv1
q1 Q0 d1 2 5.0 tv1
q1 Q0 d9 3 4 tv1
q1 Q0 d4 4 3 tv1
q1 Q0 d2 5 2 tv1
q1 Q0 d5 6 1 tv1
q2 Q0 b 1 2 tv1
q2 Q0 a 2 1 tv1
q4 Q0 z 1 1 tv1
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "qrels.txt").write_text(QRELS)
    (tmp_path / "run.txt").write_text(RUN)
    (tmp_path / "other.txt").write_text("q1 Q0 d5 1 9 b\nq1 Q0 d1 2 8 b\nq2 Q0 a 1 1 b\nq3 Q0 x 1 1 b\n")
    return {name: str(tmp_path / f"{name}.txt") for name in ("qrels", "run", "other")}


def run_command(*args: str) -> tuple[list[str], str]:
    out, err = StringIO(), StringIO()
    call_command("evaluate", *args, stdout=out, stderr=err)
    return out.getvalue().splitlines(), err.getvalue()


def values(lines: list[str]) -> dict[tuple[str, ...], str]:
    """{(measure, qid): value} from trec_eval's lines (the measure name is padded to 22 characters)."""
    rows = [line.split("\t") for line in lines]
    return {(row[0].rstrip(), row[1]): row[2] for row in rows}


def test_it_prints_trec_eval_lines_and_the_settings_on_stderr(files: dict[str, str]) -> None:
    lines, err = run_command(
        files["qrels"], files["run"], "--trec-eval", "9", "-m", "map", "-m", "ndcg", "-m", "num_ret"
    )
    assert lines == [
        "num_ret               \tall\t8",
        "map                   \tall\t0.4250",
        "ndcg                  \tall\t0.5771",
    ]
    assert err.startswith("# gain=linear unjudged=nonrelevant relevance_level=1 average=common depth=all")
    assert "q3" in err and "q4" in err  # the topic the run lacks, the run topic without qrels


def test_it_prints_per_topic_values_with_q(files: dict[str, str]) -> None:
    lines, _ = run_command(
        files["qrels"], files["run"], "--trec-eval", "9", "-q", "-m", "P.1,5", "-m", "recip_rank"
    )
    assert [line.replace(" ", "") for line in lines] == [
        "recip_rank\tq1\t0.5000",
        "P_1\tq1\t0.0000",
        "P_5\tq1\t0.4000",
        "recip_rank\tq2\t0.5000",
        "P_1\tq2\t0.0000",
        "P_5\tq2\t0.2000",
        "recip_rank\tall\t0.5000",
        "P_1\tall\t0.0000",
        "P_5\tall\t0.3000",
    ]


def test_it_stops_like_trec_eval_10_on_a_qrels_topic_the_run_lacks(files: dict[str, str]) -> None:
    with pytest.raises(CommandError, match=r"no results for qrels topic\(s\) q3; trec_eval 10 stops here"):
        run_command(files["qrels"], files["run"], "-m", "map")
    # trec_eval 9.0.8 averages over the run's topics instead; -c counts q3 as 0 under both.
    assert values(run_command(files["qrels"], files["run"], "--trec-eval", "9", "-m", "map")[0]) == {
        ("map", "all"): "0.4250"
    }
    assert values(run_command(files["qrels"], files["run"], "-c", "-m", "map")[0]) == {
        ("map", "all"): "0.2833"
    }


def test_it_takes_the_first_parameters_given_for_a_family_as_trec_eval_does(files: dict[str, str]) -> None:
    lines, _ = run_command(files["qrels"], files["run"], "-c", "-m", "P.5", "-m", "P.20", "-m", "P")
    assert values(lines) == {("P_5", "all"): "0.2000"}
    with pytest.raises(CommandError, match="duplicate cutoffs"):
        run_command(files["qrels"], files["run"], "-c", "-m", "P.5,5")


def test_it_counts_num_rel_under_c_as_the_chosen_trec_eval_does(files: dict[str, str]) -> None:
    # -l2: R at level 2 is 2 (q1: d1, d5), 0 and 0. trec_eval 9.0.8 re-counts every line with rel > 0: 6.
    ten = values(run_command(files["qrels"], files["run"], "-c", "-l2", "-m", "num_rel")[0])
    nine = values(
        run_command(files["qrels"], files["run"], "-c", "-l2", "--trec-eval", "9", "-m", "num_rel")[0]
    )
    assert ten == {("num_rel", "all"): "2"}
    assert nine == {("num_rel", "all"): "6"}


def test_it_prints_the_missing_topic_under_c_only_as_trec_eval_10_does(files: dict[str, str]) -> None:
    ten = values(run_command(files["qrels"], files["run"], "-c", "-q", "-m", "map")[0])
    nine = values(run_command(files["qrels"], files["run"], "-c", "-q", "--trec-eval", "9", "-m", "map")[0])
    assert ten[("map", "q3")] == "0.0000" and ("map", "q3") not in nine
    assert ten[("map", "all")] == nine[("map", "all")] == "0.2833"


def test_it_averages_over_all_qrels_topics_with_c(files: dict[str, str]) -> None:
    lines, _ = run_command(files["qrels"], files["run"], "-c", "-q", "-m", "map", "-m", "recip_rank")
    got = values(lines)
    assert got[("map", "all")] == "0.2833"
    assert got[("recip_rank", "all")] == "0.3333"
    assert got[("map", "q3")] == "0.0000"


def test_it_condenses_with_j_and_prints_exp_gain(files: dict[str, str]) -> None:
    lines, err = run_command(
        files["qrels"],
        files["run"],
        "-c",
        "-J",
        "-q",
        "-m",
        "map",
        "-m",
        "ndcg_cut.3",
        "-m",
        "P.5",
        "--gain",
        "exp",
    )
    got = values(lines)
    assert err.startswith("# gain=exp unjudged=condensed")
    assert (got[("map", "q1")], got[("P_5", "q1")]) == ("0.4792", "0.6000")


def test_it_applies_relevance_level_and_depth(files: dict[str, str]) -> None:
    lines, err = run_command(
        files["qrels"], files["run"], "-c", "-l2", "-M", "3", "-q", "-m", "num_rel", "-m", "num_ret"
    )
    got = values(lines)
    assert got[("num_rel", "q1")] == "2"  # d1 (2) and d5 (3)
    assert got[("num_ret", "q1")] == "3"
    assert "relevance_level=2" in err and "depth=3" in err


def test_it_prints_the_official_measures_by_default_and_all_trec_on_request(files: dict[str, str]) -> None:
    official = [key[0] for key in values(run_command(files["qrels"], files["run"], "-c")[0])]
    cutoffs = [f"P_{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)]
    iprec = [f"iprec_at_recall_{p / 10:3.2f}" for p in range(11)]
    head = [
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "map",
        "gm_map",
        "Rprec",
        "bpref",
        "recip_rank",
    ]
    assert official == head + iprec + cutoffs  # trec_eval's official list, in its order
    every = [key[0] for key in values(run_command(files["qrels"], files["run"], "-c", "-m", "all_trec")[0])]
    assert len(every) == 99  # the trec_eval 10.0-rc2 binary's all_trec 'all' lines (relstring is per topic)
    assert (
        every.index("recall_1000") < every.index("infAP") < every.index("gm_bpref") < every.index("11pt_avg")
    )
    assert every[-5:] == ["rbp", "rbp_resid", "unj_5", "unj_10", "unj_20"] and "dcg" not in every
    judged = values(run_command(files["qrels"], files["run"], "-c", "-m", "judged.10")[0])
    assert judged == {("judged_10", "all"): "0.2000"}  # (4 + 2 + 0) judged of 10, 3 topics


def test_it_prints_each_run_as_trec_eval_would_one_after_the_other(files: dict[str, str]) -> None:
    lines, _ = run_command(files["qrels"], files["run"], files["other"], "-c", "-m", "runid", "-m", "map")
    # other: q1 (d5, d1 relevant at ranks 1-2 of R=4) 0.5, q2 1.0, q3 1.0.
    assert [line.replace(" ", "") for line in lines] == [
        "runid\tall\ttv1",
        "map\tall\t0.2833",
        "runid\tall\tb",
        "map\tall\t0.8333",
    ]


def test_it_writes_one_file_per_run_with_o(files: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lines, _ = run_command(files["qrels"], files["run"], files["other"], "-c", "-m", "map", "-o", str(out))
    assert lines == []
    assert (out / "run.txt.eval").read_text() == "map                   \tall\t0.2833\n"
    assert (out / "other.txt.eval").read_text() == "map                   \tall\t0.8333\n"


def test_it_makes_the_directory_of_o_with_its_parents(files: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper"
    lines, _ = run_command(files["qrels"], files["run"], files["other"], "-c", "-m", "map", "-o", str(out))
    assert lines == []
    assert (out / "run.txt.eval").read_text() == "map                   \tall\t0.2833\n"
    assert (out / "other.txt.eval").read_text() == "map                   \tall\t0.8333\n"


def test_it_refuses_an_o_that_is_a_file_or_below_one(files: dict[str, str], tmp_path: Path) -> None:
    taken = tmp_path / "taken.txt"
    taken.write_text("x")
    with pytest.raises(CommandError) as caught:
        run_command(files["qrels"], files["run"], "-o", str(taken))
    assert str(caught.value) == f"-o {taken}: not a directory"
    assert taken.read_text() == "x"
    with pytest.raises(CommandError) as caught:
        run_command(files["qrels"], files["run"], "-o", str(taken / "below"))
    assert (
        str(caught.value) == f"-o {taken / 'below'}: cannot make the directory ({taken} is not a directory)"
    )


def test_a_failed_command_leaves_no_o_directory_behind(files: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "new" / "deeper"
    with pytest.raises(CommandError, match="unknown measure"):
        run_command(files["qrels"], files["run"], "-m", "mapp", "-o", str(out))
    with pytest.raises(CommandError, match="file not found"):
        run_command(files["qrels"], str(tmp_path / "absent.txt"), "-o", str(out))
    assert not (tmp_path / "new").exists()


def test_it_reads_gzipped_files(files: dict[str, str], tmp_path: Path) -> None:
    with gzip.open(tmp_path / "run.txt.gz", "wt") as f:
        f.write(RUN)
    lines, _ = run_command(files["qrels"], str(tmp_path / "run.txt.gz"), "-c", "-m", "map")
    assert lines[-1] == "map                   \tall\t0.2833"


def test_it_reports_a_bad_run_line_without_a_traceback(files: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0 d1 1 1.0 r\nq1 Q0 d2 2 high r\n")
    with pytest.raises(CommandError) as caught:
        run_command(files["qrels"], str(bad))
    assert str(caught.value) == f"{bad}:2: score 'high' is not a number"


def test_it_reports_bad_qrels_and_missing_files(files: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "qrels_bad.txt"
    bad.write_text("q1 0 d1 1\nq1 0 d2 x\n")
    with pytest.raises(CommandError, match=r"qrels_bad.txt:2: relevance 'x' is not an integer"):
        run_command(str(bad), files["run"])
    with pytest.raises(CommandError, match=": file not found$"):
        run_command(files["qrels"], str(tmp_path / "absent.txt"))


def test_it_rejects_unknown_measures(files: dict[str, str]) -> None:
    with pytest.raises(CommandError, match="unknown measure 'mapp'; supported: runid, num_q, num_ret"):
        run_command(files["qrels"], files["run"], "-m", "mapp")


def test_it_rejects_a_measure_with_the_wrong_number_of_parameters_before_scoring(
    files: dict[str, str],
) -> None:
    # utility takes four coefficients: two once came out as a ValueError traceback from the scoring.
    with pytest.raises(
        CommandError, match=r"^measure utility takes 4 parameters \(utility.1,-1,0,0\), not '1,2'$"
    ):
        run_command(files["qrels"], files["run"], "-m", "utility.1,2")


def test_it_fails_when_no_topic_is_shared(files: dict[str, str], tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.txt"
    other.write_text("q9 Q0 d1 1 1.0 r\n")
    with pytest.raises(CommandError, match="no topics with both results and relevance information"):
        run_command(files["qrels"], str(other))


def test_it_resolves_a_qrels_file_without_the_database(files: dict[str, str]) -> None:
    assert cast(QrelsTable, resolve_qrels(files["qrels"])).topic_ids == ["q1", "q2", "q3"]  # a file: a table


@pytest.mark.parametrize("gzipped", [False, True])
def test_its_runid_line_names_the_last_lines_tag_as_trec_eval_does_gzipped_or_not(
    files: dict[str, str], tmp_path: Path, gzipped: bool
) -> None:
    """trec_eval keeps the run_id of the last line it parses (get_trec_results.c); a file whose tags differ
    shows which, gzipped or not (a gzipped run printed its first line's tag)."""
    text = "q1 Q0 d5 1 9 first\nq2 Q0 a 1 1 middle\nq3 Q0 x 1 1 last\n# a comment\n"
    path = tmp_path / ("tags.txt.gz" if gzipped else "tags.txt")
    path.write_bytes(gzip.compress(text.encode()) if gzipped else text.encode())
    lines, _ = run_command(files["qrels"], str(path), "-c", "-m", "runid")
    assert [line.replace(" ", "") for line in lines] == ["runid\tall\tlast"]


def test_a_topic_the_run_lacks_scores_as_trec_eval_10s_stand_in_ranking_with_c_and_j(tmp_path: Path) -> None:
    """trec_eval 10 scores a qrels topic the run lacks (-c) on a stand-in ranking of one document that is in
    no qrels (trec_eval.c's bogus ranking): precision 0 after it, so iprec_at_recall_0.00 and 11pt_avg are
    0; -J drops that unjudged document, the list is empty and both are 0/0, printed -nan (the mean too)."""
    (tmp_path / "qrels").write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n")
    (tmp_path / "run").write_text("q1 Q0 d1 1 2 r\nq1 Q0 d9 2 1 r\n")
    args = (str(tmp_path / "qrels"), str(tmp_path / "run"), "-q", "-m", "iprec_at_recall.0", "-m", "11pt_avg")
    plain = values(run_command(*args, "-c")[0])
    judged_only = values(run_command(*args, "-c", "-J")[0])
    for measure in ("iprec_at_recall_0.00", "11pt_avg"):
        assert (plain[(measure, "q1")], plain[(measure, "q2")], plain[(measure, "all")]) == (
            "1.0000",
            "0.0000",
            "0.5000",
        )
        assert judged_only[(measure, "q1")] == "1.0000"
        assert judged_only[(measure, "q2")].strip() == judged_only[(measure, "all")].strip() == "-nan"

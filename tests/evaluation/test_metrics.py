"""evaluation.metrics and pooling.trec_io: test vectors from trec_eval 10, the readers, segments and tests."""

from __future__ import annotations

import gzip
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytrec_eval
from scipy import stats

from evaluation import metrics
from pooling.formats import FormatError
from pooling.trec_io import QrelsTable, RunTable, hash_bytes, read_qrels, read_run

BAD = Path(__file__).resolve().parent.parent / "data" / "bad"

TV1_QRELS = {
    "q1": {"d1": 2, "d2": 1, "d3": 0, "d4": -1, "d5": 3, "d6": 1},
    "q2": {"a": 1, "b": 0},
    "q3": {"x": 1},
}
TV1_RUN = {
    "q1": {"d3": 5.0, "d1": 5.0, "d9": 4.0, "d4": 3.0, "d2": 2.0, "d5": 1.0},
    "q2": {"b": 2.0, "a": 1.0},
    "q4": {"z": 1.0},
}
TV2_QRELS = {"t": {"A": 3, "B": 2, "C": 0, "D": 1, "E": 2}}
TV2_RUN = {"t": {"C": 0.9, "F": 0.85, "A": 0.8, "D": 0.7, "B": 0.6}}


def evaluate(
    qrels: QrelsTable | Mapping[str, Mapping[str, int]],
    run: RunTable | Mapping[str, Mapping[str, float]],
    measures: list[str],
    **kwargs: Any,
) -> metrics.Result:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", metrics.MissingTopicsWarning)
        return metrics.evaluate(qrels, run, measures, **kwargs)


def rounded(values: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in values.items()}


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- test vectors (values from trec_eval 10) ----------------------------------------------------------------


def test_it_reproduces_tv1_per_topic() -> None:
    result = evaluate(
        TV1_QRELS,
        TV1_RUN,
        ["recip_rank", "P.1,5", "map", "ndcg", "ndcg_cut.3,5", "bpref", "infAP"],
    )
    assert rounded(result.per_topic["q1"]) == {
        "recip_rank": 0.5,
        "P_1": 0.0,
        "P_5": 0.4,
        "map": 0.35,
        "ndcg": 0.5233,
        "ndcg_cut_3": 0.2650,
        "ndcg_cut_5": 0.3175,
        "bpref": 0.0,
        "infAP": 0.4028,
    }
    assert rounded(result.per_topic["q2"])["map"] == 0.5
    assert rounded(result.per_topic["q2"])["ndcg"] == 0.6309


def test_it_averages_tv1_over_common_topics_and_warns_of_the_missing_one() -> None:
    with pytest.warns(metrics.MissingTopicsWarning, match="q3"):
        result = metrics.evaluate(TV1_QRELS, TV1_RUN, ["map", "ndcg"])
    assert result.topics == ("q1", "q2")
    assert rounded(result.means) == {"map": 0.4250, "ndcg": 0.5771}
    assert result.missing_topics == ("q3",)
    assert result.ignored_topics == ("q4",)
    assert "q3" in result.warnings[0]


def test_it_averages_tv1_over_all_qrels_topics_with_c() -> None:
    result = evaluate(TV1_QRELS, TV1_RUN, ["map", "ndcg", "recip_rank", "num_rel", "num_ret"], average="all")
    assert result.topics == ("q1", "q2", "q3")
    means = rounded(result.means)
    assert (means["map"], means["ndcg"], means["recip_rank"]) == (0.2833, 0.3847, 0.3333)
    # trec_eval -c scores the missing topic 0, but num_rel still counts its relevant document.
    assert result.per_topic["q3"] == {
        "map": 0.0,
        "ndcg": 0.0,
        "recip_rank": 0.0,
        "num_rel": 1.0,
        "num_ret": 0.0,
    }
    assert means["num_rel"] == 6 and means["num_ret"] == 8


def test_it_reproduces_tv1_condensed() -> None:
    result = evaluate(TV1_QRELS, TV1_RUN, ["map", "P_5", "ndcg", "ndcg_cut_3"], unjudged="condensed")
    assert rounded(result.per_topic["q1"]) == {
        "map": 0.4792,
        "P_5": 0.6,
        "ndcg": 0.5881,
        "ndcg_cut_3": 0.3700,
    }


def test_it_reproduces_tv2() -> None:
    measures = [
        "ndcg_cut_3",
        "ndcg",
        "map",
        "recip_rank",
        "P_3",
        "P_10",
        "recall_3",
        "recall_5",
        "Rprec",
        "bpref",
    ]
    assert rounded(evaluate(TV2_QRELS, TV2_RUN, measures).means) == {
        "ndcg_cut_3": 0.2851,
        "ndcg": 0.4751,
        "map": 0.3583,
        "recip_rank": 0.3333,
        "P_3": 0.3333,
        "P_10": 0.3,
        "recall_3": 0.25,
        "recall_5": 0.75,
        "Rprec": 0.5,
        "bpref": 0.0,
    }


def test_it_reproduces_tv2_exp_gain_and_condensed() -> None:
    assert round(evaluate(TV2_QRELS, TV2_RUN, ["ndcg"], gain="exp").means["ndcg"], 4) == 0.4704
    condensed = evaluate(TV2_QRELS, TV2_RUN, ["ndcg_cut_3", "ndcg"], unjudged="condensed")
    assert rounded(condensed.means) == {"ndcg_cut_3": 0.4547, "ndcg": 0.5717}


def test_it_reproduces_the_seed_example() -> None:
    qrels = {"s": {"a": 2, "b": 3, "c": 0, "d": 1, "e": 2}}
    run = {"s": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}}
    assert round(evaluate(qrels, run, ["ndcg_cut_5"], gain="exp").means["ndcg_cut_5"], 4) == 0.8322
    assert round(evaluate(qrels, run, ["ndcg_cut_5"]).means["ndcg_cut_5"], 4) == 0.8954


def test_it_averages_reciprocal_ranks_into_mrr() -> None:
    # First relevant document at ranks 1, 3, 2 and none: MRR = (1 + 1/3 + 1/2 + 0) / 4.
    qrels = {"1": {"r": 1}, "2": {"r": 1}, "3": {"r": 1}, "4": {"r": 1}}
    run = {
        "1": {"r": 3.0, "x": 2.0},
        "2": {"x": 3.0, "y": 2.0, "r": 1.0},
        "3": {"x": 3.0, "r": 2.0},
        "4": {"x": 3.0, "y": 2.0},
    }
    assert round(evaluate(qrels, run, ["recip_rank"]).means["recip_rank"], 4) == 0.4583


# --- semantics ----------------------------------------------------------------------------------------------


def test_it_breaks_ties_by_docid_descending_in_byte_order() -> None:
    qrels = {"q": {"é": 1}}
    # 'é' is 0xC3 0xA9 in UTF-8: above 'z' in byte order, so it ranks first among the tied documents.
    ranked = metrics.rank_lists(qrels, {"q": {"a": 1.0, "z": 1.0, "é": 1.0, "b": 2.0}})
    assert ranked.relevant.rank.tolist() == [2]
    assert evaluate(qrels, {"q": {"a": 1.0, "z": 1.0, "é": 1.0}}, ["recip_rank"]).means["recip_rank"] == 1.0


def test_it_compares_scores_as_doubles_like_trec_eval_10() -> None:
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "z": 1.0 + 2**-40}}  # equal as float32, different as doubles
    assert evaluate(qrels, run, ["recip_rank"]).means["recip_rank"] == 0.5


def test_it_orders_unsorted_and_shuffled_runs_like_sorted_ones() -> None:
    rng = np.random.default_rng(3)
    docs = [f"d{i}" for i in range(200)]
    run = {q: {d: float(rng.integers(0, 20)) for d in docs} for q in ("1", "2", "3")}
    qrels = {q: {d: int(rng.integers(-1, 4)) for d in rng.choice(docs, 50, replace=False)} for q in run}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut.10", "P.5"}).evaluate(run)
    rows = [(q, d, s) for q, ds in run.items() for d, s in ds.items()]
    for seed in range(3):
        order = np.random.default_rng(seed).permutation(len(rows))
        table = RunTable(
            topic_ids=["1", "2", "3"],
            topic=np.array([int(rows[i][0]) - 1 for i in order]),
            docid=np.array([rows[i][1].encode() for i in order]),
            score=np.array([rows[i][2] for i in order]),
        )
        result = evaluate(qrels, table, ["map", "ndcg_cut_10", "P_5"])
        for q in run:
            for m in ("map", "ndcg_cut_10", "P_5"):
                assert result.per_topic[q][m] == pytest.approx(expected[q][m], abs=1e-9)


def test_it_counts_negative_labels_as_not_judged_in_judged_at_k() -> None:
    qrels = {"q": {"a": 2, "b": 0, "c": -1}}
    run = {"q": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}}
    result = evaluate(qrels, run, ["judged.2,4,10"])
    assert result.per_topic["q"] == {"judged_2": 1.0, "judged_4": 0.5, "judged_10": 0.2}
    condensed = evaluate(qrels, run, ["judged_4", "num_ret"], unjudged="condensed")
    assert condensed.per_topic["q"] == {"num_ret": 2.0, "judged_4": 0.5}


def test_it_scores_a_topic_whose_labels_are_all_negative_as_zero() -> None:
    # Nothing is judged: R = 0 and the ideal DCG is 0, so every measure is 0 (trec_eval's nDCG reads out of
    # bounds here). The retrieved documents still count in num_ret.
    result = evaluate({"q": {"a": -1, "b": -1}}, {"q": {"a": 2.0, "b": 1.0}}, ["all_trec"])
    values = result.per_topic["q"]
    assert values.pop("num_ret") == 2.0
    assert values.pop("num_q") == 1.0  # one topic, counted by the all line
    assert values.pop("utility") == -2.0  # utility's -1 per retrieved document that is not relevant
    # Both retrieved documents are unjudged: unj_k = 2/k and rbp_resid = 0.9^2 + 0.1 (1 + 0.9), as the
    # trec_eval 10.0-rc2 binary prints them.
    assert [values.pop(m) for m in ("unj_5", "unj_10", "unj_20", "rbp_resid")] == pytest.approx(
        [0.4, 0.2, 0.1, 1]
    )
    assert set(values.values()) == {0.0}


def test_it_limits_the_depth_before_condensing() -> None:
    qrels = {"q": {"a": 1, "c": 1, "e": 1}}
    run = {"q": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}}
    result = evaluate(qrels, run, ["num_ret", "num_rel_ret", "map"], depth=3, unjudged="condensed")
    assert result.per_topic["q"]["num_ret"] == 2  # a, c: b dropped, d and e beyond the depth
    assert result.per_topic["q"]["map"] == pytest.approx((1 + 1) / 3)


def test_it_treats_a_relevance_level_as_the_threshold_for_relevant() -> None:
    result = evaluate(TV2_QRELS, TV2_RUN, ["num_rel", "num_rel_ret", "P_5"], relevance_level=2)
    assert result.per_topic["t"] == {"num_rel": 3.0, "num_rel_ret": 2.0, "P_5": 0.4}
    with pytest.raises(ValueError, match="relevance_level"):
        evaluate(TV2_QRELS, TV2_RUN, ["map"], relevance_level=-1)


def test_it_falls_back_to_an_exact_join_when_qrels_keys_collide() -> None:
    qrels = QrelsTable.from_dict(TV1_QRELS)
    qrels._key = np.zeros(len(qrels), dtype=np.uint64)  # every key equal: the hash table cannot be used
    assert rounded(evaluate(qrels, TV1_RUN, ["map", "ndcg"]).means) == {"map": 0.4250, "ndcg": 0.5771}


def test_it_rejects_unknown_measures_and_options() -> None:
    with pytest.raises(ValueError, match="unknown measure"):
        metrics.parse_measures(["mapp"])
    with pytest.raises(ValueError, match="gain"):
        evaluate(TV2_QRELS, TV2_RUN, ["ndcg"], gain="log")
    with pytest.raises(ValueError, match="unjudged"):
        evaluate(TV2_QRELS, TV2_RUN, ["ndcg"], unjudged="skip")


def test_it_reads_trec_eval_and_pytrec_eval_measure_names() -> None:
    assert metrics.parse_measures(["ndcg_cut.10", "P.5,10", "map", "recall_100", "P_20"]) == [
        "map",
        "P_5",
        "P_10",
        "P_20",
        "recall_100",
        "ndcg_cut_10",
    ]
    assert metrics.parse_measures(["P"]) == [f"P_{k}" for k in metrics.DEFAULT_CUTOFFS]
    assert "infAP" in metrics.parse_measures(["all_trec"])


def test_it_documents_every_metric_definition() -> None:
    for fn in (
        metrics.P_k,
        metrics.recall_k,
        metrics.recip_rank,
        metrics.map,
        metrics.Rprec,
        metrics.ndcg,
        metrics.ndcg_cut_k,
        metrics.bpref,
        metrics.infAP,
        metrics.judged_k,
        metrics.num_ret,
        metrics.num_rel,
        metrics.num_rel_ret,
    ):
        assert fn.__doc__ and len(fn.__doc__) > 40, fn.__name__


# --- segments and significance ---------------------------------------------------------------------------


def test_it_computes_means_per_segment() -> None:
    qrels = {"1": {"a": 1}, "2": {"a": 1}, "3": {"a": 1}}
    run = {"1": {"a": 1.0}, "2": {"b": 1.0, "a": 0.5}, "3": {"b": 1.0}}
    result = evaluate(qrels, run, ["recip_rank", "num_rel_ret"])
    segments = result.segment_means({"1": ["head", "nav"], "2": ["head"], "3": ["tail"], "9": ["head"]})
    assert segments == {
        "head": {"num_q": 2.0, "recip_rank": 0.75, "num_rel_ret": 2.0},
        "nav": {"num_q": 1.0, "recip_rank": 1.0, "num_rel_ret": 1.0},
        "tail": {"num_q": 1.0, "recip_rank": 0.0, "num_rel_ret": 0.0},
    }


def test_it_runs_a_paired_t_test_as_scipy() -> None:
    x = {str(i): v for i, v in enumerate([0.1, 0.4, 0.35, 0.8, 0.5, 0.9])}
    y = {str(i): v for i, v in enumerate([0.2, 0.3, 0.30, 0.6, 0.45, 0.7])}
    y["extra"] = 1.0  # only common topics are paired
    test = metrics.paired_t_test(x, y)
    want = stats.ttest_rel(list(x.values()), [y[k] for k in x])
    assert test.n == 6
    assert test.statistic == pytest.approx(want.statistic)
    assert test.p_value == pytest.approx(want.pvalue)
    assert test.mean_difference == pytest.approx(np.mean([x[k] - y[k] for k in x]))


def test_it_runs_a_seeded_paired_randomisation_test() -> None:
    rng = np.random.default_rng(0)
    base = rng.random(40)
    x = {str(i): float(v) for i, v in enumerate(base)}
    better = {str(i): float(v + 0.2) for i, v in enumerate(base)}
    noisy = {str(i): float(v + rng.normal(0, 0.05)) for i, v in enumerate(base)}
    clear = metrics.paired_randomisation_test(better, x, n_permutations=2000, seed=1)
    assert clear.p_value == pytest.approx(1 / 2001)
    first = metrics.paired_randomisation_test(noisy, x, n_permutations=2000, seed=7)
    again = metrics.paired_randomisation_test(noisy, x, n_permutations=2000, seed=7)
    assert first == again
    assert 0.05 < first.p_value <= 1.0
    # Exact sign-flip distribution on 3 topics: |mean| >= observed for 2 of the 8 sign patterns.
    tiny = metrics.paired_randomisation_test(
        {"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 0.0, "b": 0.0, "c": 0.0}, n_permutations=20000, seed=3
    )
    assert tiny.p_value == pytest.approx(2 / 8, abs=0.02)


def test_it_pairs_results_by_measure() -> None:
    a = evaluate(TV1_QRELS, TV1_RUN, ["map"])
    b = evaluate(TV1_QRELS, {"q1": {"d5": 1.0}, "q2": {"a": 1.0}}, ["map"])
    test = metrics.paired_t_test(b, a, measure="map")
    assert test.n == 2 and test.mean_x == pytest.approx((0.25 + 1.0) / 2)


# --- trec_io ---------------------------------------------------------------------------------------------


def test_it_reads_runs_with_any_whitespace_comments_extra_fields_and_gzip(tmp_path: Path) -> None:
    text = "# a comment\n\n301 Q0 d1 1 2.5 runA extra fields\n301\tQ0  d2 2 -1e-3 runA\r\n302 Q0 d1 1 7 runA"
    plain = read_run(write(tmp_path / "run.txt", text))
    with gzip.open(tmp_path / "run.txt.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    packed = read_run(tmp_path / "run.txt.gz")
    for table in (plain, packed):
        assert table.name == "runA"
        assert table.to_dict() == {"301": {"d1": 2.5, "d2": -0.001}, "302": {"d1": 7.0}}


def test_it_reads_a_regular_run_through_the_fast_path(tmp_path: Path) -> None:
    lines = [f"{q} Q0 doc{d} {d} {1.0 / (d + 1)} tag\n" for q in (3, 1, 2) for d in range(50)]
    table = read_run(write(tmp_path / "run.txt", "".join(lines)))
    assert len(table) == 150 and table.topic_ids == ["1", "2", "3"]
    assert table.to_dict()["3"]["doc7"] == 1.0 / 8


def test_it_reads_qrels_with_negative_labels(tmp_path: Path) -> None:
    table = read_qrels(write(tmp_path / "qrels.txt", "301 0 d1 3\n301 0 d2 -1\n302 Q0 d1 +0 \n"))
    assert table.to_dict() == {"301": {"d1": 3, "d2": -1}, "302": {"d1": 0}}


@pytest.mark.parametrize(
    ("name", "reader", "message"),
    [
        ("run_short_line.txt", read_run, ":3: expected 6 fields 'qid Q0 docid rank score tag', found 5"),
        ("run_nan_score.txt", read_run, ":2: score 'nan' is not a finite number"),
        ("run_inf_score.txt", read_run, ":3: score '-inf' is not a finite number"),
        ("run_non_numeric_score.txt", read_run, ":2: score 'high' is not a number"),
        (
            "run_duplicate_doc.txt",
            read_run,
            ":3: duplicate docid 'd01' for qid '301' (first at line 1)",
        ),
        ("run_duplicate_doc_noncontiguous.txt", read_run, ":3: duplicate docid 'd01' for qid '301'"),
        ("run_invalid_utf8.txt", read_run, ":2: invalid UTF-8 (byte 0xff at byte column 9)"),
        ("run_truncated.txt.gz", read_run, "truncated gzip file (the compressed data ends early)"),
        ("run_corrupt_gzip.txt.gz", read_run, ":3: corrupt gzip file: CRC check failed"),
        ("run_empty.txt", read_run, ": file is empty"),
        ("run_only_comments.txt", read_run, ": no run rows found"),
        ("qrels_non_integer.txt", read_qrels, ":2: relevance '1.5' is not an integer"),
        ("qrels_short_line.txt", read_qrels, ":3: expected 4 fields 'qid iter docid rel', found 3"),
        ("qrels_long_line.txt", read_qrels, ":2: expected 4 fields 'qid iter docid rel', found 5"),
        ("qrels_duplicate_pair.txt", read_qrels, ":3: duplicate judgement for qid '301', docid 'd01'"),
    ],
)
def test_it_reports_bad_files_as_file_line_message(name: str, reader: object, message: str) -> None:
    with pytest.raises(FormatError) as caught:
        reader(BAD / name)  # type: ignore[operator]  # the readers, each callable
    assert str(caught.value.errors[0]).startswith(str(BAD / name))
    assert message in str(caught.value.errors[0])


def test_it_lists_every_bad_line(tmp_path: Path) -> None:
    text = "1 Q0 a 1 1.0 r\n1 Q0 b 2 x r\n1 Q0 c\n1 Q0 d 4 inf r\n"
    with pytest.raises(FormatError) as caught:
        read_run(write(tmp_path / "run.txt", text))
    assert [str(e).split(":", 2)[1] for e in caught.value.errors] == ["2", "3", "4"]


def test_it_reports_a_missing_file(tmp_path: Path) -> None:
    # One message for every reader (formats' topics and documents say the same).
    with pytest.raises(FormatError, match=": file not found$"):
        read_run(tmp_path / "absent.txt")


def test_it_hashes_byte_strings_independently_of_the_array_width() -> None:
    narrow = np.array([b"abc", b"d1"], dtype="S3")
    wide = np.array([b"abc", b"d1"], dtype="S24")
    assert np.array_equal(hash_bytes(narrow), hash_bytes(wide))
    assert len(set(hash_bytes(np.array([f"D{i:08d}".encode() for i in range(10000)])).tolist())) == 10000


def test_it_evaluates_tables_read_from_files_like_dicts(tmp_path: Path) -> None:
    qrels_text = "".join(f"{q} 0 {d} {g}\n" for q, docs in TV1_QRELS.items() for d, g in docs.items())
    run_text = "".join(f"{q} Q0 {d} 0 {s} r\n" for q, docs in TV1_RUN.items() for d, s in docs.items())
    qrels = read_qrels(write(tmp_path / "qrels.txt", qrels_text))
    run = read_run(write(tmp_path / "run.txt", run_text))
    from_files = evaluate(qrels, run, ["all_trec"])
    from_dicts = evaluate(TV1_QRELS, TV1_RUN, ["all_trec"])
    assert from_files.per_topic == from_dicts.per_topic
    assert math.isclose(from_files.means["map"], 0.425)


def python_parse_run(text: str) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        fields = line.split()
        if fields and not fields[0].startswith("#"):
            run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
    return run


@pytest.mark.parametrize("workers", [1, 2])
def test_it_reads_across_blocks_chunks_and_threads_like_a_line_by_line_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    import pooling.trec_io as trec_io

    monkeypatch.setattr(trec_io.blocks, "_BLOCK_BYTES", 512)
    monkeypatch.setattr(trec_io.blocks, "_CHUNK_BYTES", 64)
    monkeypatch.setattr(trec_io.chunks, "_workers", lambda: workers)
    rng = np.random.default_rng(5)
    lines = []
    for i in range(600):
        q = f"q{i // 50}"
        score = f"{rng.random() * 100:.{int(rng.integers(0, 7))}f}"
        sep = " " if i % 7 else " \t "
        docid = f"doc{i}" + ("x" * 700 if i == 300 else "")  # one line longer than a block
        lines.append(
            sep.join(
                [q, "Q0", docid, str(i), score, "tag", "extra"]
                if i % 5 == 0
                else [q, "Q0", docid, str(i), score, "tag"]
            )
        )
        if i % 97 == 0:
            lines.append("# comment")
    text = "\n".join(lines)  # no final newline
    path = write(tmp_path / "run.txt", text)
    table = read_run(path)
    assert table.to_dict() == python_parse_run(text)
    with gzip.open(tmp_path / "run.txt.gz", "wt") as f:
        f.write(text)
    assert read_run(tmp_path / "run.txt.gz").to_dict() == python_parse_run(text)


def test_it_reports_line_numbers_of_duplicates_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pooling.trec_io as trec_io

    monkeypatch.setattr(trec_io.blocks, "_CHUNK_BYTES", 64)
    lines = [f"1 Q0 d{i} {i} {i}.5 t" for i in range(100)] + ["# note", "", "1 Q0 d7 0 1.0 t"]
    with pytest.raises(FormatError) as caught:
        read_run(write(tmp_path / "run.txt", "\n".join(lines) + "\n"))
    assert [str(e) for e in caught.value.errors] == [
        f"{tmp_path / 'run.txt'}:103: duplicate docid 'd7' for qid '1' (first at line 8)"
    ]


def test_it_parses_fixed_format_scores_exactly_like_strtod() -> None:
    from pooling.trec_io.values import _fast_scores

    rng = np.random.default_rng(11)
    for fmt in ("{:.6f}", "-{:.4f}", "{:.0f}", "{:.12f}", "{:.3f}"):
        for scale in (1.0, 99.0, 12345.0):
            raw = np.array([fmt.format(v).encode() for v in rng.random(2000) * scale])
            lengths = np.char.str_len(raw)
            fast = _fast_scores(raw, lengths)
            if fast is not None:
                assert np.array_equal(fast, raw.astype(np.float64))
                assert np.array_equal(np.signbit(fast), np.signbit(raw.astype(np.float64)))
    raw = np.array([b"1e5", b"2e5"])
    assert _fast_scores(raw, np.char.str_len(raw)) is None


def test_it_joins_tables_read_from_files_with_dicts(tmp_path: Path) -> None:
    run_text = "".join(f"{q} Q0 {d} 0 {s} r\n" for q, docs in TV1_RUN.items() for d, s in docs.items())
    run = read_run(write(tmp_path / "run.txt", run_text))
    assert rounded(evaluate(TV1_QRELS, run, ["map", "ndcg"]).means) == {"map": 0.4250, "ndcg": 0.5771}


def test_it_computes_rbp_rbp_resid_unj_and_relstring_as_trec_eval_defines_them() -> None:
    # TV1 q1 in trec_eval order: d3 (0), d1 (2), d9 (not in the qrels), d4 (-1), d2 (1), d5 (3).
    result = evaluate(TV1_QRELS, TV1_RUN, ["rbp.p=0.5", "rbp_resid", "unj.2,5,10", "relstring.4"])
    q1 = result.per_topic["q1"]
    # rbp: the gains are scaled by the topic's highest grade (3) into [0, 1].
    assert q1["rbp_p=0.5"] == pytest.approx(0.5 * (2 / 3 * 0.5 + 1 / 3 * 0.5**4 + 1.0 * 0.5**5))
    assert q1["rbp_resid"] == pytest.approx(0.9**6 + 0.1 * (0.9**2 + 0.9**3))  # d9 and d4 unjudged
    assert (q1["unj_2"], q1["unj_5"], q1["unj_10"]) == (0.0, 0.4, 0.2)
    assert result.per_topic["q2"]["rbp_resid"] == 0.0  # nothing unjudged
    assert result.texts["relstring_4"][result.topics.index("q1")] == "02-."
    assert "relstring_4" not in result.means  # per topic only, as trec_eval prints it


def test_it_computes_dcg_and_ideal_dcg_with_and_without_a_gain_map() -> None:
    # Run: c (0), a (2), x (not judged). Ideal: d (3), a (2), b (1).
    qrels, run = {"t": {"a": 2, "b": 1, "c": 0, "d": 3}}, {"t": {"c": 3.0, "a": 2.0, "x": 1.0}}
    plain = evaluate(qrels, run, ["dcg", "ideal_dcg", "ndcg"]).means
    assert plain["dcg"] == pytest.approx(2 / math.log2(3))
    assert plain["ideal_dcg"] == pytest.approx(3 + 2 / math.log2(3) + 1 / 2)
    assert plain["ndcg"] == pytest.approx(plain["dcg"] / plain["ideal_dcg"])
    mapped = evaluate(qrels, run, ["dcg.2=5", "ideal_dcg.2=5"]).means
    assert mapped["dcg_2=5"] == pytest.approx(5 / math.log2(3))
    assert mapped["ideal_dcg_2=5"] == pytest.approx(5 + 3 / math.log2(3) + 1 / 2)  # a (5), d (3), b (1)


def test_it_applies_gain_maps_with_fractions_zero_and_negative_gains_to_g_ndcg_rel_and_rndcg() -> None:
    # Grades a=2, b=1, c=0, d=3; map 2 -> 5.5, 0 -> 1, 1 -> -2 (d keeps 3). Run: c (1), a (5.5), x (not
    # judged, 0), b (-2). Ideal gains: 5.5, 3, 1, -2. Worked through trec_eval's m_G.c, m_ndcg_rel.c and
    # m_Rndcg.c loops by hand.
    qrels = {"t": {"a": 2, "b": 1, "c": 0, "d": 3}}
    run = {"t": {"c": 4.0, "a": 3.0, "x": 2.0, "b": 1.0}}
    spec = "2=5.5,0=1,1=-2"
    means = evaluate(qrels, run, [f"G.{spec}", f"ndcg_rel.{spec}", f"Rndcg.{spec}"]).means
    log2 = math.log2
    # G: cost = 5.5, 8.5, 9.5, 10.5 (max(ideal, 1) summed); gained = 1, 6.5, 6.5, 4.5; / (5.5 + 3 + 1).
    assert means[f"G_{spec}"] == pytest.approx((1 / log2(6.5) + 5.5 / log2(4) - 2 / log2(8)) / 9.5)
    # ndcg_rel: nDCG at c and a (gain > 0), then the third positive judged document (d) counts the whole
    # list's nDCG (b's -2 included in the DCG); divided by the 3 documents with a positive gain.
    at_a = (1 + 5.5 / log2(3)) / (5.5 + 3 / log2(3))
    whole = (1 + 5.5 / log2(3) - 2 / log2(5)) / (6 + 3 / log2(3))
    assert means[f"ndcg_rel_{spec}"] == pytest.approx((1 / 5.5 + at_a + whole) / 3)
    # Rndcg: the ideal gain changes after positions 1, 2 and 3 (5.5 -> 3 -> 1 -> -2).
    at_3 = (1 + 5.5 / log2(3)) / (6 + 3 / log2(3))
    assert means[f"Rndcg_{spec}"] == pytest.approx((1 / 5.5 + at_a + at_3) / 3)
    # Without a map the gains are the grades: the map {2: 2} changes nothing.
    plain = evaluate(qrels, run, ["G", "ndcg_rel", "Rndcg"]).means
    same = evaluate(qrels, run, ["G.2=2", "ndcg_rel.2=2", "Rndcg.2=2"]).means
    for family in ("G", "ndcg_rel", "Rndcg"):
        assert same[f"{family}_2=2"] == pytest.approx(plain[family])
        assert plain[family] != pytest.approx(means[f"{family}_{spec}"])


def test_rndcg_is_nan_where_trec_eval_divides_zero_by_zero() -> None:
    # R = 1 (a), but the map leaves no judged document a positive gain: trec_eval's sum / count is 0 / 0.
    result = evaluate(
        {"t": {"a": 1, "b": 0}}, {"t": {"a": 2.0, "b": 1.0}}, ["Rndcg.1=-1", "G.1=-1", "ndcg_rel.1=-1"]
    )
    assert math.isnan(result.per_topic["t"]["Rndcg_1=-1"])
    assert result.per_topic["t"]["G_1=-1"] == 0.0  # no positive ideal gain: G stays 0
    assert result.per_topic["t"]["ndcg_rel_1=-1"] == 0.0

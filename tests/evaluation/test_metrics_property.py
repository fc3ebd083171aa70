"""Property tests: evaluation.metrics equals pytrec_eval (trec_eval's own C code) on random runs and qrels.

The inputs have tied scores, negative labels, topics missing on either side, relevant documents the run
never retrieved and non-ASCII docids (byte order matters for ties).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation import metrics

TOPICS = ["301", "302", "303", "304", "305"]
DOCS = ["a", "b", "c", "d", "e", "f", "Z", "z", "é", "d10", "d2", "ü"]
# pytrec_eval-terrier embeds a trec_eval that keeps scores as float32 (trec_eval 10 and we use doubles), so
# the random scores are float32-exact: both readings then rank alike. test_metrics.py covers doubles.
SCORES = [-1.0, 0.0, 0.5, 1.0, 2.0, 3.25]
MEASURES = [
    "P_1",
    "P_3",
    "P_5",
    "recall_3",
    "recall_10",
    "recip_rank",
    "map",
    "Rprec",
    "bpref",
    "infAP",
    "ndcg",
    "ndcg_cut_3",
    "ndcg_cut_10",
    "num_ret",
    "num_rel",
    "num_rel_ret",
]
NDCG_MEASURES = ["ndcg", "ndcg_cut_3", "ndcg_cut_10"]
pytestmark = pytest.mark.filterwarnings("ignore::evaluation.metrics.MissingTopicsWarning")
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Every qrels topic judges at least one document (grade >= 0): trec_eval's nDCG reads out of bounds on a
# topic whose labels are all negative, and pytrec_eval then hangs or crashes. test_metrics.py covers that
# case (every measure is 0 there).
qrels_strategy = st.dictionaries(
    st.sampled_from(TOPICS),
    st.dictionaries(
        st.sampled_from(DOCS), st.integers(min_value=-1, max_value=3), min_size=1, max_size=8
    ).filter(lambda docs: any(grade >= 0 for grade in docs.values())),
    min_size=1,
    max_size=4,
)
run_strategy = st.dictionaries(
    st.sampled_from(TOPICS),
    st.dictionaries(
        st.sampled_from(DOCS),
        st.one_of(st.sampled_from(SCORES), st.floats(-5, 5, allow_nan=False, allow_infinity=False, width=32)),
        min_size=1,
        max_size=12,
    ),
    min_size=1,
    max_size=5,
)


def reference(qrels: dict, run: dict, measures: list[str], level: int, **kwargs: Any) -> dict:
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level, **kwargs).evaluate(run)


def trec_order(docs: dict[str, float]) -> list[str]:
    """trec_eval's order, computed independently: score descending, then docid descending in byte order."""
    return [d for d, _ in sorted(docs.items(), key=lambda kv: (kv[1], kv[0].encode("utf-8")), reverse=True)]


def assert_matches(result: metrics.Result, expected: dict, measures: list[str]) -> None:
    assert set(result.topics) == set(expected), (result.topics, sorted(expected))
    ours = result.per_topic
    for qid, values in expected.items():
        for m in measures:
            assert ours[qid][m] == pytest.approx(values[m], abs=1e-6, nan_ok=True), (
                qid,
                m,
                ours[qid][m],
                values[m],
            )


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, level=st.sampled_from([1, 2, 3]))
def test_it_equals_pytrec_eval_per_topic_and_mean(qrels: dict, run: dict, level: int) -> None:
    expected = reference(qrels, run, MEASURES, level)
    result = metrics.evaluate(qrels, run, MEASURES, relevance_level=level)
    assert_matches(result, expected, MEASURES)
    if expected:
        for m in MEASURES:
            agg = pytrec_eval.compute_aggregated_measure(m, [v[m] for v in expected.values()])
            assert result.means[m] == pytest.approx(agg, abs=1e-6)


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, level=st.sampled_from([1, 2]))
def test_it_equals_pytrec_eval_condensed_on_a_run_without_unjudged_documents(
    qrels: dict, run: dict, level: int
) -> None:
    judged_only = {
        q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0} for q, docs in run.items()
    }
    expected = reference(qrels, judged_only, MEASURES, level)
    result = metrics.evaluate(qrels, run, MEASURES, relevance_level=level, unjudged="condensed")
    assert_matches(result, expected, MEASURES)
    # pytrec_eval's own -J switch agrees as well.
    assert_matches(result, reference(qrels, run, MEASURES, level, judged_docs_only_flag=True), MEASURES)


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, level=st.sampled_from([1, 2]))
def test_it_averages_over_all_qrels_topics_counting_missing_ones_as_zero(
    qrels: dict, run: dict, level: int
) -> None:
    expected = reference(qrels, run, MEASURES, level)
    result = metrics.evaluate(qrels, run, MEASURES, relevance_level=level, average="all")
    assert list(result.topics) == sorted(qrels, key=str.encode)
    for m in MEASURES:
        if m == "num_rel":
            want = sum(1 for docs in qrels.values() for g in docs.values() if g >= level)
        elif m.startswith("num_"):
            want = sum(v[m] for v in expected.values())
        else:
            want = sum(v[m] for v in expected.values()) / len(qrels)
        assert result.means[m] == pytest.approx(want, abs=1e-6), m
    for qid in set(qrels) - set(expected):
        assert all(result.per_topic[qid][m] == 0 for m in MEASURES if m != "num_rel")


def direct_ndcg(qrels: dict[str, int], docs: dict[str, float], k: int | None, gain: str) -> float:
    """nDCG from its definition: DCG = Σ gain(grade_i) / log2(i + 1), ideal from every judged grade."""

    def g(grade: int) -> float:
        if grade <= 0:
            return 0.0
        return float(grade) if gain == "linear" else 2.0**grade - 1.0

    ranking = trec_order(docs)[:k]
    dcg = sum(g(qrels.get(d, -1)) / math.log2(i + 2) for i, d in enumerate(ranking))
    ideal_grades = sorted((x for x in qrels.values() if x >= 0), reverse=True)[:k]
    ideal = sum(g(x) / math.log2(i + 2) for i, x in enumerate(ideal_grades))
    return dcg / ideal if ideal > 0 else 0.0


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, gain=st.sampled_from(["linear", "exp"]))
def test_it_computes_ndcg_with_linear_and_exponential_gain_as_defined(
    qrels: dict, run: dict, gain: metrics.Gain
) -> None:
    # pytrec_eval has no gain switch (and hangs on some qrels whose grades are mapped to 2^g - 1), so the
    # reference is the definition itself; linear gain is also checked against pytrec_eval above.
    result = metrics.evaluate(qrels, run, NDCG_MEASURES, gain=gain)
    for qid in result.topics:
        for m, k in (("ndcg", None), ("ndcg_cut_3", 3), ("ndcg_cut_10", 10)):
            want = direct_ndcg(qrels[qid], run[qid], k, gain)
            assert result.per_topic[qid][m] == pytest.approx(want, abs=1e-9), (qid, m)


@PROPERTY_SETTINGS
@given(
    qrels=qrels_strategy,
    run=run_strategy,
    depth=st.integers(min_value=1, max_value=6),
    condensed=st.booleans(),
)
def test_it_cuts_each_list_at_the_depth_before_condensing(
    qrels: dict, run: dict, depth: int, condensed: bool
) -> None:
    truncated = {q: {d: docs[d] for d in trec_order(docs)[:depth]} for q, docs in run.items()}
    if condensed:
        truncated = {
            q: {d: s for d, s in docs.items() if qrels.get(q, {}).get(d, -1) >= 0}
            for q, docs in truncated.items()
        }
    expected = reference(qrels, truncated, MEASURES, 1)
    unjudged: metrics.Unjudged = "condensed" if condensed else "nonrelevant"
    result = metrics.evaluate(qrels, run, MEASURES, depth=depth, unjudged=unjudged)
    assert_matches(result, expected, MEASURES)


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, k=st.sampled_from([1, 2, 3, 5, 10]))
def test_it_counts_judged_at_k_as_documents_with_a_grade_of_zero_or_more(
    qrels: dict, run: dict, k: int
) -> None:
    result = metrics.evaluate(qrels, run, [f"judged_{k}"])
    for qid in result.topics:
        top = trec_order(run[qid])[:k]
        want = sum(1 for d in top if qrels[qid].get(d, -1) >= 0) / k
        assert result.per_topic[qid][f"judged_{k}"] == pytest.approx(want)


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, seed=st.integers(0, 2**16))
def test_it_does_not_depend_on_the_order_of_the_run_rows(qrels: dict, run: dict, seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    shuffled: dict[str, dict[str, float]] = {}
    for i in rng.permutation(len(items)).tolist():
        q, d, s = items[i]
        shuffled.setdefault(q, {})[d] = s
    a = metrics.evaluate(qrels, run, MEASURES)
    b = metrics.evaluate(qrels, shuffled, MEASURES)
    for m in MEASURES:
        assert np.allclose(a.values[m], b.values[m], atol=1e-12) or (
            math.isnan(a.means[m]) and math.isnan(b.means[m])
        )


NEW_MEASURES = [
    *(f"iprec_at_recall_{p:3.2f}" for p in metrics.IPREC_FRACTIONS),
    "11pt_avg",
    *(f"Rprec_mult_{p:3.2f}" for p in metrics.RPREC_MULT_FRACTIONS),
    "map_cut_1",
    "map_cut_3",
    "map_cut_10",
    "success_1",
    "success_5",
    "relative_P_3",
    "relative_P_10",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "utility",
    "binG",
    "G",
    "ndcg_rel",
    "Rndcg",
]
PYTREC_FAMILIES = {
    "iprec_at_recall",
    "11pt_avg",
    "Rprec_mult",
    "map_cut.1,3,10",
    "success.1,5",
    "relative_P.3,10",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "utility",
    "binG",
    "G",
    "ndcg_rel",
    "Rndcg",
    "gm_map",
    "gm_bpref",
    "map",
    "bpref",
}


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, level=st.sampled_from([1, 2]), condensed=st.booleans())
def test_it_equals_pytrec_eval_on_the_other_trec_eval_measures(
    qrels: dict, run: dict, level: int, condensed: bool
) -> None:
    # pytrec_eval-terrier embeds trec_eval 9.0.8: its recall counts are floor(p·R + 0.9).
    expected = reference(qrels, run, list(PYTREC_FAMILIES), level, judged_docs_only_flag=condensed)
    unjudged: metrics.Unjudged = "condensed" if condensed else "nonrelevant"
    result = metrics.evaluate(
        qrels,
        run,
        [*NEW_MEASURES, "gm_map", "gm_bpref"],
        relevance_level=level,
        unjudged=unjudged,
        trec_eval="9",
    )
    assert_matches(result, expected, NEW_MEASURES)
    if expected:
        for m, base in (("gm_map", "map"), ("gm_bpref", "bpref")):
            # pytrec_eval's per-topic gm value is log(max(value, 1e-5)); the all line is exp of their mean.
            for qid in expected:
                assert expected[qid][m] == pytest.approx(math.log(max(expected[qid][base], 1e-5)), abs=1e-9)
            want = pytrec_eval.compute_aggregated_measure(m, [v[m] for v in expected.values()])
            assert result.means[m] == pytest.approx(want, rel=1e-9)


def test_it_rounds_the_recall_count_as_trec_eval_does_in_both_versions() -> None:
    # R = 4, relevant at ranks 1 and 4. p = 0.3: (long) (1.2 + 0.9) = 2 relevant documents, in trec_eval
    # 9.0.8 and in the 10.0-rc2 binary alike (m_iprec_at_recall.c, m_11pt_avg.c); lround(1.2) = 1 is not it.
    qrels = {"t": {"a": 1, "b": 0, "c": 1, "d": 2, "e": 1}}
    run = {"t": {"a": 5.0, "x": 4.0, "b": 3.0, "c": 2.0}}
    for version in ("10", "9"):
        result = metrics.evaluate(qrels, run, ["iprec_at_recall.0.3", "11pt_avg"], trec_eval=version)
        assert result.means["iprec_at_recall_0.30"] == 0.5
        # 11 points: counts floor(p*4 + 0.9) are 0,1,1,2,2,2,3,3,4,4,4 -> 1,1,1,.5,.5,.5,0,0,0,0,0
        assert result.means["11pt_avg"] == pytest.approx(4.5 / 11)  # pytrec_eval's 0.4091


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy)
def test_it_applies_trec_eval_gain_maps_to_ndcg(qrels: dict, run: dict) -> None:
    # -m ndcg.1=3,2=9,3=4: with whole, non-negative gains this is nDCG on qrels whose grades are the gains
    # (trec_eval's default gain is the grade), which pytrec_eval computes; pytrec_eval cannot parse maps.
    gains = {1: 3, 2: 9, 3: 4}
    remapped = {q: {d: gains.get(g, g) for d, g in docs.items()} for q, docs in qrels.items()}
    expected = reference(remapped, run, ["ndcg"], 1)
    result = metrics.evaluate(qrels, run, ["ndcg.1=3,2=9,3=4"])
    assert result.measures == ("ndcg_1=3,2=9,3=4",)
    for qid, values in expected.items():
        assert result.per_topic[qid]["ndcg_1=3,2=9,3=4"] == pytest.approx(values["ndcg"], abs=1e-9)


@PROPERTY_SETTINGS
@given(qrels=qrels_strategy, run=run_strategy, condensed=st.booleans())
def test_it_applies_trec_eval_gain_maps_to_g_ndcg_rel_and_rndcg(
    qrels: dict, run: dict, condensed: bool
) -> None:
    # As for ndcg: whole, non-negative gains (positive grades stay positive, so R is unchanged) make
    # G.1=3,2=9,3=4 the G of qrels whose grades are the gains, which pytrec_eval computes.
    gains = {1: 3, 2: 9, 3: 4}
    remapped = {q: {d: gains.get(g, g) for d, g in docs.items()} for q, docs in qrels.items()}
    families = ["G", "ndcg_rel", "Rndcg"]
    expected = reference(remapped, run, families, 1, judged_docs_only_flag=condensed)
    unjudged: metrics.Unjudged = "condensed" if condensed else "nonrelevant"
    result = metrics.evaluate(qrels, run, [f"{f}.1=3,2=9,3=4" for f in families], unjudged=unjudged)
    for qid, values in expected.items():
        for family in families:
            got = result.per_topic[qid][f"{family}_1=3,2=9,3=4"]
            assert got == pytest.approx(values[family], abs=1e-9), (qid, family)


def test_a_gain_map_may_give_fractions_and_zero_or_negative_gains() -> None:
    # Grades a=2, b=1, c=0; gains 2 -> 0.5, 0 -> 1, 1 -> -1 (b). Run: b, c, a.
    # DCG = -1/log2(2) + 1/log2(3) + 0.5/log2(4); ideal (positive gains only, descending): c (1), a (0.5).
    result = metrics.evaluate({"t": {"a": 2, "b": 1, "c": 0}}, {"t": {"b": 3.0, "c": 2.0, "a": 1.0}},
                              ["ndcg.2=0.5,0=1,1=-1"])  # fmt: skip
    dcg = -1.0 + 1.0 / math.log2(3) + 0.5 / 2.0
    ideal = 1.0 + 0.5 / math.log2(3)
    assert result.means["ndcg_2=0.5,0=1,1=-1"] == pytest.approx(dcg / ideal)
    with pytest.raises(ValueError, match="grade=gain"):
        metrics.parse_measures(["ndcg.1:3"])

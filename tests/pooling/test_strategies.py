"""Tests of the pure pooling algorithms (no database)."""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Mapping

import numpy as np
import pytest
import scipy.spatial.distance
import scipy.stats

# `cal` imports scikit-learn where it first fits (half a second): imported here, so that no example's time,
# which hypothesis holds to its deadline, includes the import.
import sklearn.feature_extraction.text  # noqa: F401
import sklearn.linear_model  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from pooling.strategies import (
    STRATEGIES,
    Chooser,
    MaxMeanChooser,
    MoveToFrontChooser,
    ThompsonChooser,
    allocate_budget,
    depth_k_pool,
    depth_k_pool_by_topic,
    depth_order,
    kendall_tau,
    leave_one_out_qrels,
    make_chooser,
    overlap_jaccard,
    pool_contributions,
    rankings_by_topic,
    simulate,
    topic_seed,
    topk_sets,
    trec_order,
    unique_contributions,
)

# --------------------------------------------------------------------------------------------------------
# helpers and generators

DOCIDS = [f"d{i}" for i in range(10)] + ["D1", "é", "e", "Z", "\uff61", "\U00010000", "a b"]
SCORES = [-1.0, 0.0, 0.5, 1.0, 2.25]  # a few values, so ties are common

rows_strategy = st.lists(
    st.tuples(st.sampled_from(["q1", "q2", "q3"]), st.sampled_from(DOCIDS), st.sampled_from(SCORES)),
    max_size=25,
    unique_by=lambda row: (row[0], row[1]),
)
runs_strategy = st.dictionaries(st.sampled_from(["r1", "r2", "r3", "r4"]), rows_strategy, max_size=4)
ranked_strategy = st.dictionaries(
    st.sampled_from(["A", "B", "C", "D", "E"]),
    st.lists(st.sampled_from(DOCIDS), unique=True, max_size=12),
    max_size=5,
)
grades_strategy = st.dictionaries(st.sampled_from(DOCIDS), st.sampled_from([None, -1, 0, 1, 2, 3]))


def brute_trec_order(rows: list[tuple[str, float]]) -> list[str]:
    """Independent trec_eval order: strcmp on UTF-8 bytes, written as a comparator."""

    def compare(x: tuple[str, float], y: tuple[str, float]) -> int:
        if x[1] != y[1]:
            return -1 if x[1] > y[1] else 1
        bx, by = x[0].encode("utf-8"), y[0].encode("utf-8")
        return -1 if bx > by else (1 if bx < by else 0)

    return [docid for docid, _ in sorted(rows, key=functools.cmp_to_key(compare))]


def drain(chooser: Chooser, grades: Mapping[str, int | None], limit: int | None = None) -> list[str]:
    order: list[str] = []
    while limit is None or len(order) < limit:
        docid = chooser.next_document()
        if docid is None:
            break
        assert chooser.next_document() == docid  # idempotent until recorded
        chooser.record(docid, grades.get(docid, 0))
        order.append(docid)
    return order


def roundtrip(chooser: Chooser, ranked: Mapping[str, list[str]]) -> Chooser:
    return Chooser.from_state(ranked, json.loads(json.dumps(chooser.state())))


# --------------------------------------------------------------------------------------------------------
# trec order


def test_it_orders_by_score_desc_then_docid_desc() -> None:
    rows = [("b", 1.0), ("a", 1.0), ("c", 2.0), ("d", -0.5), ("B", 1.0)]
    assert trec_order(rows) == ["c", "b", "a", "B", "d"]


def test_it_breaks_ties_in_utf8_byte_order_not_utf16() -> None:
    # U+FF61 < U+10000 in UTF-8 bytes (EF.. < F0..), although UTF-16 would put the surrogate pair first.
    assert trec_order([("\uff61", 1.0), ("\U00010000", 1.0), ("z", 1.0)]) == ["\U00010000", "\uff61", "z"]


@pytest.mark.parametrize("score", [math.nan, math.inf, -math.inf])
def test_it_rejects_non_finite_scores(score: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        trec_order([("a", 1.0), ("b", score)])


def test_it_rejects_duplicate_docids() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        trec_order([("a", 1.0), ("a", 2.0)])


@given(st.lists(st.tuples(st.text(max_size=4), st.sampled_from(SCORES)), unique_by=lambda r: r[0]))
def test_it_matches_a_bytewise_comparator(rows: list[tuple[str, float]]) -> None:
    assert trec_order(rows) == brute_trec_order(rows)


def test_it_groups_rows_by_topic_and_leaves_missing_topics_out() -> None:
    runs = {
        "r2": [("q1", "x", 1.0), ("q1", "y", 1.0)],
        "r1": [("q2", "x", 0.5), ("q1", "z", 3.0)],
    }
    assert rankings_by_topic(runs) == {"q1": {"r1": ["z"], "r2": ["y", "x"]}, "q2": {"r1": ["x"]}}


# --------------------------------------------------------------------------------------------------------
# depth-k pool


@given(runs_strategy, st.integers(min_value=0, max_value=8))
@settings(max_examples=150)
def test_it_pools_the_union_of_each_runs_top_k(runs: dict[str, list[tuple[str, str, float]]], k: int) -> None:
    ranked_by_topic = rankings_by_topic(runs)
    pools = depth_k_pool_by_topic(ranked_by_topic, k)

    expected: dict[str, dict[str, set[tuple[str, int]]]] = {}
    for run, rows in runs.items():
        for qid in {row[0] for row in rows}:
            ordered = brute_trec_order([(docid, score) for q, docid, score in rows if q == qid])
            for rank, docid in enumerate(ordered[:k], start=1):
                expected.setdefault(qid, {}).setdefault(docid, set()).add((run, rank))

    for qid in ranked_by_topic:
        assert {docid: set(prov) for docid, prov in pools[qid].items()} == expected.get(qid, {})
        for docid, provenance in pools[qid].items():
            assert len(provenance) == len(set(provenance))
            assert [run for run, _ in provenance] == sorted(run for run, _ in provenance)
            for run, rank in provenance:
                assert 1 <= rank <= k
                assert ranked_by_topic[qid][run][rank - 1] == docid
    assert set(pools) == set(ranked_by_topic)


def test_it_keeps_every_run_and_rank_in_the_provenance() -> None:
    ranked = {"A": ["x", "y", "z"], "B": ["y", "x"], "C": ["w"]}
    assert depth_k_pool(ranked, 2) == {
        "x": [("A", 1), ("B", 2)],
        "y": [("A", 2), ("B", 1)],
        "w": [("C", 1)],
    }
    assert depth_k_pool(ranked, 0) == {}


def test_it_rejects_a_negative_depth_and_duplicate_docs_in_a_run() -> None:
    with pytest.raises(ValueError):
        depth_k_pool({"A": ["x"]}, -1)
    with pytest.raises(ValueError, match="twice"):
        depth_k_pool({"A": ["x", "x"]}, 5)


def test_it_orders_depth_baseline_rank_by_rank() -> None:
    ranked = {"B": ["x", "b2", "b3"], "A": ["a1", "x", "a3", "a4"]}
    assert depth_order(ranked, 3) == ["a1", "x", "b2", "a3", "b3"]
    assert depth_order(ranked, None) == ["a1", "x", "b2", "a3", "b3", "a4"]


@given(ranked_strategy, st.integers(min_value=0, max_value=13))
def test_it_orders_depth_baseline_over_exactly_the_pool(ranked: dict[str, list[str]], k: int) -> None:
    order = depth_order(ranked, k)
    assert len(order) == len(set(order))
    assert set(order) == set(depth_k_pool(ranked, k))
    best_rank = {docid: min(rank for _, rank in prov) for docid, prov in depth_k_pool(ranked, k).items()}
    assert [best_rank[d] for d in order] == sorted(best_rank[d] for d in order)


# --------------------------------------------------------------------------------------------------------
# choosers: shared properties


@pytest.mark.parametrize("strategy", STRATEGIES)
@given(ranked=ranked_strategy, grades=grades_strategy, depth=st.one_of(st.none(), st.integers(0, 13)))
@settings(max_examples=60)
def test_it_judges_every_candidate_once_within_depth_then_stops(
    strategy: str, ranked: dict[str, list[str]], grades: dict[str, int | None], depth: int | None
) -> None:
    chooser = make_chooser(strategy, ranked, depth=depth, seed=7)
    order = drain(chooser, grades)
    within = {docid for docs in ranked.values() for docid in (docs if depth is None else docs[:depth])}
    assert len(order) == len(set(order))
    assert set(order) == within
    assert chooser.next_document() is None
    assert chooser.judged == tuple(order)


@pytest.mark.parametrize("strategy", STRATEGIES)
@given(ranked=ranked_strategy, grades=grades_strategy, seed=st.integers(0, 2**32))
@settings(max_examples=40)
def test_it_resumes_from_state_exactly_as_if_uninterrupted(
    strategy: str, ranked: dict[str, list[str]], grades: dict[str, int | None], seed: int
) -> None:
    straight = drain(make_chooser(strategy, ranked, depth=4, seed=seed), grades)

    chooser = make_chooser(strategy, ranked, depth=4, seed=seed)
    resumed: list[str] = []
    while True:
        chooser = roundtrip(chooser, ranked)
        docid = chooser.next_document()
        if docid is None:
            break
        chooser = roundtrip(chooser, ranked)  # with a pending document
        assert chooser.next_document() == docid
        chooser.record(docid, grades.get(docid, 0))
        resumed.append(docid)
    assert resumed == straight


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_it_gives_the_same_order_for_the_same_seed(strategy: str) -> None:
    ranked = {f"r{i}": [f"d{(i * 7 + j * 3) % 40}" for j in range(15)] for i in range(6)}
    ranked = {run: list(dict.fromkeys(docs)) for run, docs in ranked.items()}
    grades = {f"d{i}": i % 3 for i in range(40)}
    first = drain(make_chooser(strategy, ranked, depth=10, seed=42), grades)
    second = drain(make_chooser(strategy, ranked, depth=10, seed=42), grades)
    assert first == second


def test_it_gives_thompson_orders_that_depend_on_the_seed() -> None:
    ranked = {f"r{i}": [f"r{i}-d{j}" for j in range(10)] for i in range(5)}
    grades = {f"r{i}-d{j}": int(j % (i + 2) == 0) for i in range(5) for j in range(10)}
    orders = {
        tuple(drain(make_chooser("bandit-thompson", ranked, depth=10, seed=s), grades)) for s in range(8)
    }
    assert len(orders) > 1


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_it_returns_nothing_for_an_empty_topic(strategy: str) -> None:
    assert make_chooser(strategy, {}, depth=10, seed=1).next_document() is None
    assert make_chooser(strategy, {"A": [], "B": ["x"]}, depth=0, seed=1).next_document() is None


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_it_rejects_recording_a_document_twice_and_ignores_strangers(strategy: str) -> None:
    chooser = make_chooser(strategy, {"A": ["x", "y"]}, depth=5, seed=1)
    chooser.record("not-a-candidate", 3)
    assert chooser.judged == ()
    docid = chooser.next_document()
    assert docid is not None
    chooser.record(docid, 1)
    with pytest.raises(ValueError, match="already"):
        chooser.record(docid, 1)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_it_never_offers_a_document_judged_elsewhere(strategy: str) -> None:
    ranked = {"A": ["x", "y", "z"], "B": ["y", "w"]}
    chooser = make_chooser(strategy, ranked, depth=3, seed=3)
    chooser.record("y", 2)  # external judgement
    assert set(drain(chooser, {})) == {"x", "z", "w"}


def test_it_refuses_to_resume_over_other_lists_or_as_another_strategy() -> None:
    ranked = {"A": ["x", "y"], "B": ["z"]}
    state = make_chooser("mtf", ranked, depth=5, seed=1).state()
    with pytest.raises(ValueError, match="differ"):
        Chooser.from_state({"A": ["y", "x"], "B": ["z"]}, state)
    with pytest.raises(ValueError, match="strategy"):
        ThompsonChooser.from_state(ranked, state)
    assert isinstance(MoveToFrontChooser.from_state(ranked, state), MoveToFrontChooser)


def test_it_rejects_unknown_strategies_and_bad_parameters() -> None:
    with pytest.raises(ValueError, match="unknown strategy"):
        make_chooser("random", {}, depth=5, seed=1)
    with pytest.raises(ValueError, match="relevance_level"):
        make_chooser("mtf", {}, depth=5, seed=1, relevance_level=0)
    with pytest.raises(ValueError, match="seed"):
        make_chooser("mtf", {}, depth=5, seed=None)  # type: ignore[arg-type]  # a wrong argument on purpose
    assert STRATEGIES == ("depth", "mtf", "bandit-maxmean", "bandit-thompson", "cal")


# --------------------------------------------------------------------------------------------------------
# move-to-front


def test_it_stays_on_a_run_while_relevant_and_demotes_it_otherwise() -> None:
    ranked = {"A": ["a1", "a2", "a3", "a4"], "B": ["b1", "b2", "b3"], "C": ["c1", "a3", "c3"]}
    grades = {"a1": 1, "a2": 2, "b2": 1, "c3": 1}
    chooser = make_chooser("mtf", ranked, depth=3, seed=0)
    order = chooser.state()["order"]
    assert sorted(order) == ["A", "B", "C"]

    # Hand-run the rule with the seeded tie order to get the expected sequence.
    first, second, third = order
    expected = {
        ("A", "B", "C"): ["a1", "a2", "a3", "b1", "c1", "b2", "b3", "c3"],
        ("A", "C", "B"): ["a1", "a2", "a3", "c1", "b1", "c3", "b2", "b3"],
        ("B", "A", "C"): ["b1", "a1", "a2", "a3", "c1", "b2", "b3", "c3"],
        ("B", "C", "A"): ["b1", "c1", "a1", "a2", "a3", "b2", "b3", "c3"],
        ("C", "A", "B"): ["c1", "a1", "a2", "a3", "b1", "c3", "b2", "b3"],
        ("C", "B", "A"): ["c1", "b1", "a1", "a2", "a3", "c3", "b2", "b3"],
    }[(first, second, third)]
    assert drain(chooser, grades) == expected
    assert chooser.state()["priority"] == {"A": -1, "B": -2, "C": -1}


def test_it_breaks_mtf_ties_by_a_seeded_permutation_of_the_runs() -> None:
    ranked = {name: [f"{name}{i}" for i in range(3)] for name in "ABCDEF"}
    for seed in range(5):
        chooser = make_chooser("mtf", ranked, depth=3, seed=seed)
        expected = [sorted(ranked)[i] for i in np.random.default_rng(seed).permutation(6)]
        assert chooser.state()["order"] == expected
        # every first document is non-relevant, so the first six picks walk the tie order once
        firsts = drain(chooser, {}, limit=6)
        assert firsts == [f"{run}0" for run in expected]


def test_it_skips_documents_found_via_another_run_without_demoting() -> None:
    ranked = {"A": ["x", "a2"], "B": ["x", "b2"]}
    chooser = MoveToFrontChooser(ranked, depth=2, seed=0)
    first_run = chooser.state()["order"][0]
    other = "B" if first_run == "A" else "A"
    assert chooser.next_document() == "x"
    chooser.record("x", 0)  # demotes first_run only
    assert chooser.next_document() == f"{other.lower()}2"  # other's rank 1 was x: skipped at no cost
    assert chooser.state()["priority"] == {first_run: -1, other: 0}


def test_it_treats_unrateable_as_non_relevant_in_mtf() -> None:
    chooser = make_chooser("mtf", {"A": ["x", "y"]}, depth=2, seed=0)
    chooser.record(chooser.next_document() or "", None)
    assert chooser.state()["priority"] == {"A": -1}
    assert chooser.state()["current"] is None


def test_it_respects_the_relevance_level() -> None:
    chooser = make_chooser("mtf", {"A": ["x", "y"], "B": ["z"]}, depth=2, seed=0, relevance_level=2)
    chooser.record(chooser.next_document() or "", 1)
    assert sorted(chooser.state()["priority"].values()) == [-1, 0]


# --------------------------------------------------------------------------------------------------------
# bandits


def test_it_rewards_only_the_pulled_arm() -> None:
    ranked = {"A": ["x", "a2"], "B": ["x", "b2"], "C": ["c1"]}
    chooser = MaxMeanChooser(ranked, depth=2, seed=0)
    docid = chooser.next_document()
    pulled = chooser.state()["pending"][0]
    chooser.record(docid or "", 3)
    state = chooser.state()
    assert state["rel"] == {run: int(run == pulled) for run in "ABC"}
    assert state["nonrel"] == {"A": 0, "B": 0, "C": 0}


def test_it_pulls_the_arm_with_the_best_posterior_mean() -> None:
    ranked = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2", "b3"]}
    chooser = MaxMeanChooser.from_state(
        ranked,
        {
            **MaxMeanChooser(ranked, depth=3, seed=0).state(),
            "rel": {"A": 1, "B": 3},
            "nonrel": {"A": 0, "B": 3},
        },
    )
    # A: 2/3 > B: 4/8
    assert chooser.next_document() == "a1"
    chooser.record("a1", 0)  # A: 2/4 == B: 4/8 -> tie, broken by the generator
    rng = np.random.default_rng(0)
    assert chooser.next_document() == ["a2", "b1"][int(rng.integers(2))]


def test_it_breaks_maxmean_ties_with_the_seeded_generator() -> None:
    ranked = {name: [f"{name}1"] for name in "ABCDE"}
    for seed in range(6):
        expected = sorted(ranked)[int(np.random.default_rng(seed).integers(5))]
        assert MaxMeanChooser(ranked, depth=1, seed=seed).next_document() == f"{expected}1"


def test_it_draws_thompson_samples_from_the_beta_posterior() -> None:
    ranked = {"A": ["a1", "a2"], "B": ["b1", "b2"], "C": ["c1", "c2"]}
    base = ThompsonChooser(ranked, depth=2, seed=11).state()
    state = {**base, "rel": {"A": 0, "B": 5, "C": 1}, "nonrel": {"A": 4, "B": 1, "C": 1}}
    chooser = ThompsonChooser.from_state(ranked, state)
    draws = np.random.default_rng(11).beta([1.0, 6.0, 2.0], [5.0, 2.0, 2.0])
    assert chooser.next_document() == f"{'ABC'[int(np.argmax(draws))].lower()}1"


def test_it_counts_unrateable_as_a_zero_reward() -> None:
    chooser = make_chooser("bandit-thompson", {"A": ["x"]}, depth=1, seed=0)
    chooser.record(chooser.next_document() or "", None)
    assert chooser.state()["nonrel"] == {"A": 1}
    assert chooser.state()["rel"] == {"A": 0}


def test_it_drops_exhausted_arms() -> None:
    ranked = {"A": ["x"], "B": ["x", "y", "z"]}
    chooser = make_chooser("bandit-maxmean", ranked, depth=None, seed=5)
    assert sorted(drain(chooser, {"x": 1, "y": 1})) == ["x", "y", "z"]


# --------------------------------------------------------------------------------------------------------
# budgets and simulation


def test_it_splits_a_budget_evenly_and_redistributes_leftovers() -> None:
    assert allocate_budget(10, {"q1": 2, "q2": 100, "q3": 100}) == {"q1": 2, "q2": 4, "q3": 4}
    assert allocate_budget(11, {"q1": 2, "q2": 100, "q3": 100}) == {"q1": 2, "q2": 5, "q3": 4}
    assert allocate_budget(7, {"a": 3, "b": 3, "c": 0}) == {"a": 3, "b": 3, "c": 0}
    # a second round of leftovers must not favour the same topic twice
    assert allocate_budget(13, {"a": 100, "b": 100, "c": 1, "d": 2}) == {"a": 5, "b": 5, "c": 1, "d": 2}
    with pytest.raises(ValueError):
        allocate_budget(-1, {"a": 1})


@given(st.integers(0, 300), st.dictionaries(st.text(max_size=3), st.integers(0, 60), max_size=8))
def test_it_allocates_water_filling(budget: int, capacities: dict[str, int]) -> None:
    allocation = allocate_budget(budget, capacities)
    assert set(allocation) == set(capacities)
    assert sum(allocation.values()) == min(budget, sum(capacities.values()))
    assert all(0 <= allocation[q] <= capacities[q] for q in capacities)
    for u in capacities:
        if allocation[u] < capacities[u]:  # u has room, so nobody got more than one above it
            assert all(allocation[t] <= allocation[u] + 1 for t in capacities)


def test_it_derives_stable_topic_seeds() -> None:
    assert topic_seed(1, "301") == int.from_bytes(__import__("hashlib").sha256(b"1:301").digest()[:8], "big")
    assert topic_seed(1, "301") != topic_seed(1, "302") != topic_seed(2, "302")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_it_simulates_within_budget_topic_by_topic(strategy: str) -> None:
    ranked_by_topic = {
        q: {f"r{i}": [f"{q}-{(i * 5 + j) % 30}" for j in range(12)] for i in range(4)}
        for q in ("q2", "q1", "q3")
    }
    qrels = {q: {f"{q}-{d}": int(d % 4 == 0) for d in range(30)} for q in ranked_by_topic}
    pool_size = sum(len(depth_k_pool(r, 8)) for r in ranked_by_topic.values())

    order = simulate(strategy, ranked_by_topic, qrels, budget=25, depth=8, seed=3)
    assert len(order) == 25 == len(set(order))
    assert [q for q, _ in order] == sorted(q for q, _ in order)
    for qid, docid in order:
        assert docid in depth_k_pool(ranked_by_topic[qid], 8)
    assert order == simulate(strategy, ranked_by_topic, qrels, budget=25, depth=8, seed=3)

    everything = simulate(strategy, ranked_by_topic, qrels, budget=10_000, depth=8, seed=3)
    assert len(everything) == pool_size
    if strategy == "depth":
        assert everything == [
            (q, d) for q in sorted(ranked_by_topic) for d in depth_order(ranked_by_topic[q], 8)
        ]


def test_it_treats_documents_missing_from_qrels_as_non_relevant_in_simulation() -> None:
    ranked_by_topic = {"q": {"A": ["a1", "a2"], "B": ["b1", "b2"]}}
    # b1 is absent from the qrels, so it demotes B; A's documents are relevant, so MTF stays on A.
    order = simulate("mtf", ranked_by_topic, {"q": {"a1": 1, "a2": 1}}, budget=4, depth=2, seed=0)
    assert [d for _, d in order] in (["a1", "a2", "b1", "b2"], ["b1", "a1", "a2", "b2"])


# --------------------------------------------------------------------------------------------------------
# statistics and pool bias


items_strategy = st.sets(st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from(DOCIDS[:8])), max_size=10)


@given(st.dictionaries(st.sampled_from(["A", "B", "C", "D"]), items_strategy, max_size=4))
def test_it_computes_jaccard_like_scipy(topk: dict[str, set[tuple[str, str]]]) -> None:
    matrix = overlap_jaccard(topk)
    universe = sorted(set().union(*topk.values())) if topk else []
    assert list(matrix) == sorted(topk)
    for a, b in itertools.product(topk, repeat=2):
        va = np.array([item in topk[a] for item in universe], dtype=bool)
        vb = np.array([item in topk[b] for item in universe], dtype=bool)
        reference = 1.0 if not universe else 1.0 - scipy.spatial.distance.jaccard(va, vb)
        assert matrix[a][b] == pytest.approx(reference)
        assert matrix[a][b] == matrix[b][a]
    assert all(matrix[a][a] == 1.0 for a in topk)


@given(st.dictionaries(st.sampled_from(["A", "B", "C", "D"]), items_strategy, max_size=4))
def test_it_finds_unique_contributions(topk: dict[str, set[tuple[str, str]]]) -> None:
    unique = unique_contributions(topk)
    for run, items in topk.items():
        others = set().union(*(v for r, v in topk.items() if r != run))
        assert unique[run] == items - others


@given(runs_strategy, st.integers(0, 6))
def test_it_inverts_provenance_into_the_runs_topk(
    runs: dict[str, list[tuple[str, str, float]]], k: int
) -> None:
    ranked_by_topic = rankings_by_topic(runs)
    contributions = pool_contributions(depth_k_pool_by_topic(ranked_by_topic, k))
    topk = {run: items for run, items in topk_sets(ranked_by_topic, k).items() if items}
    assert contributions == topk


def test_it_counts_pool_statistics_on_a_small_pool() -> None:
    ranked_by_topic = {"q1": {"A": ["x", "y"], "B": ["y", "z"]}, "q2": {"A": ["u"]}}
    topk = topk_sets(ranked_by_topic, 2)
    assert unique_contributions(topk) == {"A": {("q1", "x"), ("q2", "u")}, "B": {("q1", "z")}}
    assert overlap_jaccard(topk)["A"]["B"] == pytest.approx(1 / 4)  # {y} / {x, y, z, u}


def brute_tau_b(a: list[float], b: list[float]) -> float:
    concordant = discordant = ties_a = ties_b = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        if da == 0:
            ties_a += 1
        if db == 0:
            ties_b += 1
        if da * db > 0:
            concordant += 1
        elif da * db < 0:
            discordant += 1
    pairs = len(a) * (len(a) - 1) // 2
    return (concordant - discordant) / math.sqrt((pairs - ties_a) * (pairs - ties_b))


@given(
    st.lists(
        st.tuples(st.sampled_from([0.1, 0.2, 0.3, 0.4]), st.sampled_from([0.1, 0.5, 0.9])),
        min_size=2,
        max_size=9,
    )
)
def test_it_computes_kendall_tau_b_like_scipy(pairs: list[tuple[float, float]]) -> None:
    scores_a = {f"run{i}": a for i, (a, _) in enumerate(pairs)}
    scores_b = {f"run{i}": b for i, (_, b) in enumerate(pairs)}
    tau = kendall_tau(scores_a, scores_b)
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    if len(set(a)) == 1 or len(set(b)) == 1:
        assert math.isnan(tau)
    else:
        assert tau == pytest.approx(scipy.stats.kendalltau(a, b).statistic)
        assert tau == pytest.approx(brute_tau_b(a, b))


def test_it_gives_tau_one_for_the_same_ranking_and_minus_one_reversed() -> None:
    scores = {"a": 0.3, "b": 0.2, "c": 0.1}
    assert kendall_tau(scores, {"a": 0.9, "b": 0.5, "c": 0.4}) == pytest.approx(1.0)
    assert kendall_tau(scores, {"a": 0.1, "b": 0.2, "c": 0.3}) == pytest.approx(-1.0)
    assert kendall_tau(scores, {"a": 0.3, "b": 0.1, "c": 0.2}) == pytest.approx(1 / 3)
    assert math.isnan(kendall_tau({"a": 1.0}, {"a": 2.0}))
    with pytest.raises(ValueError):
        kendall_tau(scores, {"a": 0.1, "b": 0.2})


def test_it_unjudges_only_the_items_the_left_out_run_alone_contributed() -> None:
    provenance = {
        "q1": {"x": [("A", 1)], "y": [("A", 2), ("B", 1)], "z": [("B", 2)]},
        "q2": {"u": [("A", 1)]},
    }
    qrels = {"q1": {"x": 1, "y": 0, "z": 2, "manual": 3}, "q2": {"u": 1}, "q3": {"v": 1}}
    snapshot = json.dumps(qrels, sort_keys=True)
    assert leave_one_out_qrels(qrels, provenance, "A") == {
        "q1": {"y": 0, "z": 2, "manual": 3},
        "q2": {},
        "q3": {"v": 1},
    }
    assert leave_one_out_qrels(qrels, provenance, "B") == {
        "q1": {"x": 1, "y": 0, "manual": 3},
        "q2": {"u": 1},
        "q3": {"v": 1},
    }
    assert leave_one_out_qrels(qrels, provenance, "C") == qrels
    assert json.dumps(qrels, sort_keys=True) == snapshot


@given(runs_strategy, st.integers(1, 5), st.sampled_from(["r1", "r2", "r3", "r4"]))
def test_it_leaves_out_exactly_the_unique_items(
    runs: dict[str, list[tuple[str, str, float]]], k: int, left_out: str
) -> None:
    ranked_by_topic = rankings_by_topic(runs)
    provenance = depth_k_pool_by_topic(ranked_by_topic, k)
    qrels = {qid: dict.fromkeys(items, 1) for qid, items in provenance.items()}
    reduced = leave_one_out_qrels(qrels, provenance, left_out)
    removed = {(q, d) for q in qrels for d in qrels[q] if d not in reduced[q]}
    assert removed == unique_contributions(pool_contributions(provenance)).get(left_out, set())

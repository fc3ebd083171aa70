"""evaluation.metrics: what several measures share is computed once per ranked table (the DCG terms of each
gain, the judged non-relevant rows) and the whole-run sums keep trec_eval's order of additions."""

from __future__ import annotations

import numpy as np

from evaluation import metrics
from evaluation.metrics.ranked import _by_topic_then_grade_descending


def make_tables(
    *, lengths: list[int], seed: int = 3
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Qrels and a run with one topic per length: graded, non-relevant, negative and absent documents."""
    rng = np.random.default_rng(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for t, n in enumerate(lengths):
        qid = f"q{t}"
        run[qid] = {f"d{i}": float(n - i) for i in range(n)}
        judged = rng.choice(n, size=max(1, n // 4), replace=False)
        qrels[qid] = {f"d{i}": int(rng.integers(-1, 4)) for i in judged.tolist()}
        qrels[qid]["unretrieved"] = 2
    return qrels, run


def rbp_resid_by_hand(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> list[float]:
    """trec_eval's m_rbp_resid.c: one addition per unjudged rank, in rank order."""
    out = []
    for qid in sorted(qrels):
        ranked = sorted(run[qid], key=lambda d: -run[qid][d])
        total, power, unjudged = 0.0, 1.0, False
        for docid in ranked:
            if qrels[qid].get(docid, -1) < 0:
                total += power
                unjudged = True
            power *= 0.9
        out.append(power + (1.0 - 0.9) * total if unjudged else 0.0)
    return out


def test_it_sums_rbp_resid_rank_by_rank_whether_or_not_every_list_has_one_length() -> None:
    for lengths in ([300] * 6, [300, 17, 1, 450, 300, 64]):
        qrels, run = make_tables(lengths=lengths)
        ranked = metrics.rank_lists(qrels, run)
        assert metrics.rbp_resid(ranked).tolist() == rbp_resid_by_hand(qrels, run)  # to the last bit


def test_it_keeps_the_dcg_terms_of_each_gain_and_cutoff_apart() -> None:
    qrels, run = make_tables(lengths=[40, 25, 60])
    shared = metrics.rank_lists(qrels, run)
    for gain in ("linear", "exp", "linear"):
        for k in (5, 10, 1000):
            fresh = metrics.rank_lists(qrels, run)
            assert np.array_equal(metrics.ndcg_cut_k(shared, k, gain), metrics.ndcg_cut_k(fresh, k, gain))
        assert np.array_equal(metrics.ndcg(shared, gain), metrics.ndcg(metrics.rank_lists(qrels, run), gain))


def test_it_counts_the_judged_nonrelevant_documents_at_the_relevance_level() -> None:
    qrels, run = make_tables(lengths=[40, 25, 60])
    for level in (1, 2, 3):
        ranked = metrics.rank_lists(qrels, run, relevance_level=level)
        expected = [sum(1 for d in run[q] if 0 <= qrels[q].get(d, -1) < level) for q in sorted(qrels)]
        assert metrics.num_nonrel_judged_ret(ranked).tolist() == expected


def test_it_orders_the_ideal_ranking_as_lexsort_with_or_without_the_radix_key() -> None:
    rng = np.random.default_rng(4)
    for n_topics, low, high in ((50, 0, 3), (16384, 0, 3), (16385, 0, 3), (7, -2, 40)):
        topic = np.sort(rng.integers(0, n_topics, 5000))
        grade = rng.integers(low, high + 1, 5000)
        got = _by_topic_then_grade_descending(topic, grade, n_topics)
        assert np.array_equal(got, np.lexsort((-grade, topic)))

"""Simulation: adaptive judging orders find more relevant documents than depth-k order on the same budget.

A seeded synthetic campaign (30 topics, 10 runs of varied quality, depth-100 pool) is judged by replaying
its known qrels. For budgets of 10%, 20% and 30% of the depth-100 pool, move-to-front and both bandits
must find more relevant documents than judging in depth-k order, and ``cal`` (continuous active learning,
which reads the documents' texts) more than every other strategy. Print the table with
``.venv/bin/python -m tests.pooling.test_strategies_simulation`` (or pytest ``-s``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from pooling.strategies import TopicTexts, depth_k_pool, rankings_by_topic, simulate

N_TOPICS = 30
N_RUNS = 10
N_DOCS = 3000  # documents per topic that runs score
LIST_LENGTH = 1000  # rows each run returns per topic, as TREC runs do
DEPTH = 100
QUALITIES = (2.6, 2.2, 1.9, 1.6, 1.3, 1.0, 0.8, 0.5, 0.3, 0.1)  # weight of relevance in a run's score
BUDGET_FRACTIONS = (0.1, 0.2, 0.3)
ADAPTIVE = ("mtf", "bandit-maxmean", "bandit-thompson", "cal")
THOMPSON_SEEDS = (1, 2, 3)


@dataclass(frozen=True)
class Setting:
    ranked_by_topic: dict[str, dict[str, list[str]]]
    qrels: dict[str, dict[str, int]]
    pool_size: int
    relevant_in_pool: int
    texts: dict[str, TopicTexts]


BACKGROUND = 4000  # words every topic's documents share, drawn Zipf-like
DOC_WORDS = 40  # background words per document
ASPECTS = 3  # a topic's relevant documents each speak of one of its aspects
ASPECT_WORDS = 12
ASPECT_RATE = 3.0  # a relevant document's aspect words: Poisson(ASPECT_RATE + grade)
CHANCE_RATE = 0.3  # any document's aspect words by chance: Poisson(CHANCE_RATE)


def make_texts(
    rng: np.random.Generator,
    qid: str,
    docids: np.ndarray,
    grades: np.ndarray,
    shared: np.ndarray,
    wanted: set[str],
) -> TopicTexts:
    """Synthetic texts for one topic, drawn from the same latent variables as the runs' scores.

    Every document has 40 background words (Zipf-like over 4000). Words of the topic: its query's 3 words
    appear in any document at a rate growing with ``shared`` (the feature every run scores, so the
    documents all runs put first mention the query), a little more in relevant ones; 30 "near-miss" words
    of the topic's subject come with ``shared`` whatever the relevance; each relevant document speaks of
    one of three aspects (12 words each), Poisson(1.5 + grade) of its words, and any document carries
    Poisson(0.3) aspect words by chance. So the texts say something about relevance, noisily (a relevant
    document may have no aspect word; a non-relevant one may have some), and a classifier must learn each
    aspect's words from judged examples. Drawn for every document (one vectorised draw per kind of word);
    strings are built only for the ``wanted`` docids (the candidates).
    """
    n = len(docids)
    weights = 1.0 / (np.arange(BACKGROUND) + 10.0)
    background = rng.choice(BACKGROUND, size=(n, DOC_WORDS), p=weights / weights.sum())
    topical = np.exp(0.6 * shared)
    n_query = rng.poisson(0.5 * topical + 0.5 * (grades > 0))
    n_near = rng.poisson(topical)
    n_chance = rng.poisson(CHANCE_RATE, size=n)
    n_aspect = np.where(grades > 0, rng.poisson(ASPECT_RATE + grades), 0)
    aspect = rng.integers(ASPECTS, size=n)
    top = int(max(n_query.max(), n_near.max(), n_chance.max(), n_aspect.max(), 1))
    picks = rng.integers(1 << 30, size=(n, 4, top))  # word choices, read modulo each list's length
    documents: dict[str, str] = {}
    for i, docid in enumerate(docids.tolist()):
        if docid not in wanted:
            continue
        words = [f"w{w}" for w in background[i].tolist()]
        words += [f"q{qid}x{w % 3}" for w in picks[i, 0, : n_query[i]].tolist()]
        words += [f"n{qid}x{w % 30}" for w in picks[i, 1, : n_near[i]].tolist()]
        words += [
            f"a{qid}x{(w // ASPECT_WORDS) % ASPECTS}x{w % ASPECT_WORDS}"
            for w in picks[i, 2, : n_chance[i]].tolist()
        ]
        words += [f"a{qid}x{aspect[i]}x{w % ASPECT_WORDS}" for w in picks[i, 3, : n_aspect[i]].tolist()]
        documents[docid] = " ".join(words)
    query = " ".join([f"q{qid}x{j}" for j in range(3)] + [f"n{qid}x{j}" for j in range(5)])
    return TopicTexts(topic=query, documents=documents)


def make_setting(*, seed: int = 20240607) -> Setting:
    """A synthetic campaign with known qrels.

    Per topic: 10-150 relevant documents out of 3000, graded 1/2/3 with probabilities 0.6/0.3/0.1. Run r
    scores document d as ``quality_r * (0.6 + 0.2 * grade(d)) * [d relevant] + 0.8 * shared(d) +
    noise_r(d)`` with standard normal ``shared`` (a topic-wide feature every run uses, so runs overlap)
    and ``noise``; scores are rounded to 3 decimals (ties occur) and each run keeps its top 1000.
    """
    rng = np.random.default_rng(seed)
    text_rng = np.random.default_rng(seed + 1)  # its own stream: the runs and qrels stay as they were
    latent: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    runs: dict[str, list[tuple[str, str, float]]] = {f"run{i:02d}": [] for i in range(N_RUNS)}
    qrels: dict[str, dict[str, int]] = {}
    for t in range(N_TOPICS):
        qid = str(401 + t)
        docids = np.array([f"{qid}-{i:05d}" for i in rng.permutation(N_DOCS)])
        grades = np.zeros(N_DOCS, dtype=int)
        n_relevant = int(rng.integers(10, 151))
        grades[:n_relevant] = rng.choice([1, 2, 3], size=n_relevant, p=[0.6, 0.3, 0.1])
        qrels[qid] = {str(d): int(g) for d, g in zip(docids, grades, strict=True) if g > 0}
        signal = np.where(grades > 0, 0.6 + 0.2 * grades, 0.0)
        shared = rng.normal(size=N_DOCS)
        latent[qid] = (docids, grades, shared)
        for rows, quality in zip(runs.values(), QUALITIES, strict=True):
            scores = np.round(quality * signal + 0.8 * shared + rng.normal(size=N_DOCS), 3)
            top = np.argsort(-scores, kind="stable")[:LIST_LENGTH]
            rows.extend((qid, str(docids[i]), float(scores[i])) for i in top)
    ranked_by_topic = rankings_by_topic(runs)
    pools = {qid: depth_k_pool(ranked, DEPTH) for qid, ranked in ranked_by_topic.items()}
    texts = {qid: make_texts(text_rng, qid, *latent[qid], set(pools[qid])) for qid in sorted(latent)}
    return Setting(
        ranked_by_topic=ranked_by_topic,
        qrels=qrels,
        pool_size=sum(len(pool) for pool in pools.values()),
        relevant_in_pool=sum(1 for qid, pool in pools.items() for docid in pool if docid in qrels[qid]),
        texts=texts,
    )


def relevant_found(order: list[tuple[str, str]], qrels: dict[str, dict[str, int]]) -> int:
    return sum(1 for qid, docid in order if qrels.get(qid, {}).get(docid, 0) >= 1)


def run_simulation(setting: Setting) -> dict[float, dict[str, int]]:
    """Relevant documents found per budget fraction per strategy (Thompson once per seed)."""
    results: dict[float, dict[str, int]] = {}
    for fraction in BUDGET_FRACTIONS:
        budget = round(fraction * setting.pool_size)
        row: dict[str, int] = {}
        for strategy in ("depth", *ADAPTIVE):
            seeds = THOMPSON_SEEDS if strategy == "bandit-thompson" else (THOMPSON_SEEDS[0],)
            for seed in seeds:
                order = simulate(
                    strategy,
                    setting.ranked_by_topic,
                    setting.qrels,
                    budget=budget,
                    depth=DEPTH,
                    seed=seed,
                    texts_by_topic=setting.texts,
                )
                assert len(order) == budget == len(set(order))
                name = strategy if len(seeds) == 1 else f"{strategy}#{seed}"
                row[name] = relevant_found(order, setting.qrels)
        results[fraction] = row
    return results


def format_table(setting: Setting, results: dict[float, dict[str, int]]) -> str:
    names = list(next(iter(results.values())))
    lines = [
        f"{N_TOPICS} topics, {N_RUNS} runs, depth {DEPTH}: pool {setting.pool_size} items, "
        f"{setting.relevant_in_pool} relevant",
        "budget        " + "  ".join(f"{name:>17}" for name in names),
    ]
    for fraction, row in results.items():
        budget = round(fraction * setting.pool_size)
        lines.append(f"{fraction:>4.0%} {budget:>6}  " + "  ".join(f"{row[name]:>17}" for name in names))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def setting() -> Setting:
    return make_setting()


@pytest.fixture(scope="module")
def results(setting: Setting) -> dict[float, dict[str, int]]:
    return run_simulation(setting)


def test_it_generates_a_realistic_setting(setting: Setting) -> None:
    assert len(setting.ranked_by_topic) == N_TOPICS
    assert all(len(ranked) == N_RUNS for ranked in setting.ranked_by_topic.values())
    # runs overlap (the pool is far below 10 x 100 per topic) and the pool holds a minority of relevant items
    assert N_TOPICS * DEPTH < setting.pool_size < N_TOPICS * N_RUNS * DEPTH * 0.8
    assert 0.05 < setting.relevant_in_pool / setting.pool_size < 0.5
    # good runs have relevant documents near the top, poor ones do not
    precision = {
        run: np.mean(
            [
                sum(docid in setting.qrels[qid] for docid in ranked[run][:10]) / 10
                for qid, ranked in setting.ranked_by_topic.items()
            ]
        )
        for run in ("run00", "run09")
    }
    assert precision["run00"] > 0.5 > 0.1 > precision["run09"]


def test_it_finds_more_relevant_documents_adaptively_than_in_depth_order(
    setting: Setting, results: dict[float, dict[str, int]], record_property: Callable[[str, object], None]
) -> None:
    print("\n" + format_table(setting, results))
    for fraction, row in results.items():
        record_property(f"relevant_found_{fraction:.0%}", row)
        for name, found in row.items():
            if name != "depth":
                assert found > row["depth"], (fraction, name, found, row["depth"])


def test_it_finds_more_relevant_documents_with_cal_than_with_every_other_strategy(
    results: dict[float, dict[str, int]],
) -> None:
    for fraction, row in results.items():
        others = {name: found for name, found in row.items() if name != "cal"}
        assert row["cal"] > max(others.values()), (fraction, row)


def test_it_reproduces_the_simulation_with_the_same_seed(setting: Setting) -> None:
    budget = round(0.1 * setting.pool_size)
    for strategy in ADAPTIVE:
        first, again = (
            simulate(
                strategy,
                setting.ranked_by_topic,
                setting.qrels,
                budget=budget,
                depth=DEPTH,
                seed=5,
                texts_by_topic=setting.texts,
            )
            for _ in range(2)
        )
        assert first == again


if __name__ == "__main__":
    the_setting = make_setting()
    print(format_table(the_setting, run_simulation(the_setting)))

"""Benchmark: the whole noise-floor report against the naive way, the platform's own evaluate called again
and again.

Data (seeded, generated in memory): 50 runs × 500 topics, 100 documents per topic per run, drawn from 150
candidates per topic of which the first 100 in a hidden order are pooled; each pool item judged by 3 of 60
simulated raters (the true grade 0-3, or a random grade with probability 0.3).

- ours:  evaluation.noise_floor.report over the campaign — 1,000 bootstrap samples of topics, 200 label
         samples, 20 random rater splits and the 30 busiest raters' own qrels — including building the
         campaign (ranking every run once).
- naive: 1,000 calls of evaluation.metrics.evaluate over the same data, one call scoring every run on one
         qrels (what a loop over resamples does: 50 runs scored per resample, 50,000 evaluate(qrels, run)
         calls). On a shared machine 50,000 calls take minutes, so ``--naive-calls`` of them (default 20)
         are timed and the time scaled linearly to 1,000: each call does the same work on the same data.

Measures: ndcg_cut_10, P_10, map (the report's defaults). The LAST line is ``ratio ours/naive: X.XXXX``
(target <= 0.05). ``--small``: 10 runs × 100 topics, 200 topic and 40 label samples, 5 splits, and the
naive anchor at the same sizes.

Usage: .venv/bin/python benchmarks/noise_floor.py [--small] [--naive-calls N]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation import metrics, noise_floor  # noqa: E402
from pooling.trec_io import QrelsTable, RunTable  # noqa: E402

MEASURES = list(noise_floor.DEFAULT_MEASURES)


def generate(*, n_runs: int, n_topics: int, seed: int = 7) -> tuple[dict, dict, dict]:
    """Runs, consensus qrels (majority of the votes, ties low) and votes."""
    rng = np.random.default_rng(seed)
    n_candidates, n_pooled, depth, n_raters, per_item = 150, 100, 100, 60, 3
    runs: dict[str, dict[str, dict[str, float]]] = {f"run{r:02d}": {} for r in range(n_runs)}
    qrels: dict[str, dict[str, int]] = {}
    votes: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
    skill = np.linspace(0.2, 1.5, n_runs)
    for t in range(n_topics):
        qid = f"t{t:04d}"
        truth = np.clip(rng.poisson(0.6, n_candidates), 0, 3)
        pooled = rng.permutation(n_candidates)[:n_pooled]
        qrels[qid] = {}
        for c in pooled.tolist():
            raters = rng.choice(n_raters, per_item, replace=False)
            grades = np.where(rng.random(per_item) < 0.3, rng.integers(0, 4, per_item), truth[c])
            votes[(qid, f"d{c}")] = [(f"rater{r:02d}", int(g)) for r, g in zip(raters, grades, strict=True)]
            counts = np.bincount(grades, minlength=4)
            qrels[qid][f"d{c}"] = int(np.argmax(counts))
        for r, name in enumerate(runs):
            score = skill[r] * truth + rng.normal(0, 1, n_candidates)
            top = np.argsort(-score)[:depth]
            runs[name][qid] = {f"d{c}": float(score[c]) for c in top.tolist()}
    return runs, qrels, votes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--naive-calls", type=int, default=20)
    args = parser.parse_args()
    n_runs, n_topics = (10, 100) if args.small else (50, 500)
    topic_samples, label_samples, splits = (200, 40, 5) if args.small else (1000, 200, 20)
    naive_total = topic_samples  # one evaluate-over-the-data per resample, as the naive loop does

    runs, qrels, votes = generate(n_runs=n_runs, n_topics=n_topics)
    print(
        f"data: {n_runs} runs x {n_topics} topics, {sum(len(d) for d in qrels.values()):,} pool items, "
        f"{sum(len(v) for v in votes.values()):,} votes"
    )
    tables = {name: RunTable.from_dict(run, name=name) for name, run in runs.items()}
    qt = QrelsTable.from_dict(qrels)

    start = time.perf_counter()
    campaign = noise_floor.Campaign.of(tables, qrels, votes, measures=MEASURES)
    built = time.perf_counter() - start
    data = noise_floor.report(
        campaign, n_topic_samples=topic_samples, n_label_samples=label_samples, n_splits=splits, seed=0
    )
    ours = time.perf_counter() - start
    print(
        f"ours: whole report {ours:.2f} s (campaign built in {built:.2f} s); "
        f"{len(data['pairs']['ndcg_cut_10']):,} pairs per measure"
    )
    print(noise_floor.comparisons(data)[0])

    calls = max(1, min(args.naive_calls, naive_total))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(calls):
            for table in tables.values():
                metrics.evaluate(qt, table, MEASURES, skip_unjudged_topics=True)
    measured = time.perf_counter() - start
    naive = measured / calls * naive_total
    print(
        f"naive: {calls} calls of evaluate over the data (each: {n_runs} runs) took {measured:.2f} s; "
        f"{naive_total:,} calls: {naive:.1f} s" + (" (scaled linearly)" if calls < naive_total else "")
    )
    print(f"ratio ours/naive: {ours / naive:.4f}")


if __name__ == "__main__":
    main()

"""Benchmark: the whole noise-floor report against the naive way, the platform's own evaluate called again
and again.

Data (seeded, generated in memory): 50 runs × 500 topics, 100 documents per topic per run, drawn from 150
candidates per topic of which the first 100 in a hidden order are pooled; each pool item judged by 3 of 60
simulated raters (the true grade 0-3, or a random grade with probability 0.3).

- ours:  evaluation.noise_floor.report over the campaign — 1,000 bootstrap samples of topics, 200 label
         samples, 20 random rater splits and the 30 busiest raters' own qrels — including building the
         campaign (ranking every run once).
- naive: 1,000 calls of the platform's own evaluate (evaluation.metrics.evaluate) over the same data, all
         of them run and timed in this run, none extrapolated. One call = scoring every run on one qrels:
         what a loop over 1,000 resamples does once per resample (50 runs, so 50,000 evaluate(qrels, run)
         in all). Each call scores on the campaign's consensus qrels: a resampled qrels has the same
         topics, items and runs, so the same work; building the 1,000 resampled qrels is not charged to
         the naive side (which only flatters it).

At full size the naive side is long: measured on this two-core machine while it was shared (load average
16 falling to 7), the 1,000 calls took 357 s of CPU (about 0.36 s a call) and 1,671 s of wall time, against
4.3 s of CPU and 40 s of wall time for the whole report: CPU ratio 0.012, wall ratio 0.024. On a quiet
machine expect about 6 minutes for the naive side; it is timed in full anyway, with progress on stderr.
``--small`` (10 runs × 100 topics, 1,000 topic samples, 40 label samples, 5 splits) also runs its 1,000
naive calls for real: 17 s of CPU (164 s wall at load 16), ratio 0.016 CPU, 0.014 wall.

Both sides are timed in wall-clock and in CPU seconds of this process (the CPU figures are the steadier
on a shared machine). Measures: ndcg_cut_10, P_10, map (the report's defaults). The LAST line is
``ratio ours/naive: X.XXXX`` (wall clock; target <= 0.05); the line before it gives the CPU ratio.

Usage: .venv/bin/python benchmarks/noise_floor.py [--small]
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
    parser.add_argument("--small", action="store_true", help="10 runs x 100 topics, 40 label samples")
    args = parser.parse_args()
    n_runs, n_topics = (10, 100) if args.small else (50, 500)
    topic_samples, label_samples, splits = (1000, 40, 5) if args.small else (1000, 200, 20)
    naive_calls = 1000  # one evaluate-over-the-data per resample, as the naive loop does

    runs, qrels, votes = generate(n_runs=n_runs, n_topics=n_topics)
    print(
        f"data: {n_runs} runs x {n_topics} topics, {sum(len(d) for d in qrels.values()):,} pool items, "
        f"{sum(len(v) for v in votes.values()):,} votes"
    )
    tables = {name: RunTable.from_dict(run, name=name) for name, run in runs.items()}
    qt = QrelsTable.from_dict(qrels)

    print(
        f"settings: {topic_samples:,} topic samples, {label_samples} label samples, {splits} rater splits; "
        f"naive: {naive_calls:,} calls"
    )

    start, cpu = time.perf_counter(), time.process_time()
    campaign = noise_floor.Campaign.of(tables, qrels, votes, measures=MEASURES)
    built = time.perf_counter() - start
    data = noise_floor.report(
        campaign, n_topic_samples=topic_samples, n_label_samples=label_samples, n_splits=splits, seed=0
    )
    ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"ours: whole report {ours:.2f} s wall, {ours_cpu:.2f} s CPU (campaign built in {built:.2f} s); "
        f"{len(data['pairs']['ndcg_cut_10']):,} pairs per measure"
    )
    print(noise_floor.comparisons(data)[0])

    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call in range(naive_calls):
            for table in tables.values():
                metrics.evaluate(qt, table, MEASURES, skip_unjudged_topics=True)
            if (call + 1) % 100 == 0:
                print(f"  naive: {call + 1:,} calls, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    naive, naive_cpu = time.perf_counter() - start, time.process_time() - cpu
    print(
        f"naive: {naive_calls:,} calls of evaluate over the data (each: {n_runs} runs), all run: "
        f"{naive:.1f} s wall, {naive_cpu:.1f} s CPU"
    )
    print(f"cpu ratio ours/naive: {ours_cpu / naive_cpu:.4f}")
    print(f"ratio ours/naive: {ours / naive:.4f}")


if __name__ == "__main__":
    main()

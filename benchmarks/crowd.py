"""Benchmark: Dawid–Skene through the platform (judgements.crowd.fit) against crowd-kit's own DawidSkene.

Data (seeded): 1,000 simulated raters give 100,000 labels (grades 0-3) to 20,000 items, 5 labels each;
each rater has a confusion matrix (accurate, lenient or random).

- ours:      judgements.crowd.fit("dawid-skene", items) — building crowd-kit's table from the items' votes,
             the fit, and the decision table (vote signature → grade, tie) every release reads;
- crowd-kit: DawidSkene(n_iter=100).fit(frame) on the table built beforehand (not timed).

Both use the same n_iter (100) and tolerance (crowd-kit's default). The best of --repeat runs each (default
2; they alternate). The LAST line is ``ratio ours/crowd-kit: X.XX`` (target <= 2). ``--small``: 10,000
labels by 100 raters.

Usage: .venv/bin/python benchmarks/crowd.py [--small] [--repeat N]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgements import crowd  # noqa: E402


def simulate(
    *, n_labels: int, n_raters: int, per_item: int = 5, seed: int = 11
) -> list[list[tuple[str, int]]]:
    rng = np.random.default_rng(seed)
    n_items = n_labels // per_item
    truth = rng.choice(4, n_items, p=[0.4, 0.3, 0.2, 0.1])
    matrices = np.empty((n_raters, 4, 4))
    for r in range(n_raters):
        kind = r % 5
        m = np.full((4, 4), 0.05)
        np.fill_diagonal(m, 0.85)
        if kind == 3:  # lenient: one grade up
            m = np.eye(4, k=1) * 0.7 + np.eye(4) * 0.3
            m[3, 3] = 1.0
        elif kind == 4:  # random
            m = np.full((4, 4), 0.25)
        matrices[r] = m / m.sum(axis=1, keepdims=True)
    items = []
    for i in range(n_items):
        raters = rng.choice(n_raters, per_item, replace=False)
        items.append([(f"r{r}", int(rng.choice(4, p=matrices[r, truth[i]]))) for r in raters.tolist()])
    return items


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    n_labels, n_raters = (10_000, 100) if args.small else (100_000, 1_000)
    warnings.simplefilter("ignore")  # crowd-kit's pandas deprecation warnings
    from crowdkit.aggregation import DawidSkene

    items = simulate(n_labels=n_labels, n_raters=n_raters)
    frame = crowd._frame(items)  # noqa: SLF001 - the same table ours builds, here outside the timing
    print(f"data: {len(frame):,} labels by {frame['worker'].nunique():,} raters on {len(items):,} items")
    ours, theirs = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        DawidSkene(n_iter=100).fit(frame)
        theirs.append(time.perf_counter() - start)
        start = time.perf_counter()
        fitted = crowd.fit("dawid-skene", items, grades=[0, 1, 2, 3], n_iter=100)
        ours.append(time.perf_counter() - start)
    print(f"crowd-kit DawidSkene.fit: best {min(theirs):.2f} s of {args.repeat}")
    print(f"ours (table + fit + decisions): best {min(ours):.2f} s; {len(fitted.decisions):,} decisions")
    print(f"ratio ours/crowd-kit: {min(ours) / min(theirs):.2f}")


if __name__ == "__main__":
    main()

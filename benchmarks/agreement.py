"""Benchmark: judgements.agreement.cohen_kappa against sklearn.metrics.cohen_kappa_score.

500,000 pairs of grades 0–3 (seeded; rater b copies rater a 60% of the time, otherwise grades at random),
the same numpy arrays and labels=[0, 1, 2, 3] for both, each timed best of 5 after one warm-up call, for
unweighted, linear and quadratic kappa. The data are generated in memory (nothing is written to disk).
The last line is the ratio of our best time to sklearn's for unweighted kappa.

Usage: .venv/bin/python benchmarks/agreement.py [--small]
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import numpy as np
from sklearn.metrics import cohen_kappa_score

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import best_of  # noqa: E402
from judgements.agreement import cohen_kappa  # noqa: E402

LABELS = [0, 1, 2, 3]
REPEATS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="50,000 pairs instead of 500,000")
    args = parser.parse_args()
    n = 50_000 if args.small else 500_000

    rng = np.random.default_rng(20240601)
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 4, n))
    print(f"pairs: {n:,}, labels {LABELS}, best of {REPEATS}")

    ratio = None
    for weights in (None, "linear", "quadratic"):
        ours_t, ours = best_of(partial(cohen_kappa, a, b, labels=LABELS, weights=weights), REPEATS)
        ref_t, ref = best_of(partial(cohen_kappa_score, a, b, labels=LABELS, weights=weights), REPEATS)
        if ours is None or abs(ours - ref) > 1e-12:
            raise SystemExit(f"MISMATCH ({weights or 'unweighted'}): ours {ours!r}, sklearn {ref!r}")
        name = weights or "unweighted"
        print(
            f"{name:>10}: ours {ours_t * 1e3:7.2f} ms  sklearn {ref_t * 1e3:7.2f} ms  κ {ours:.12f} (equal)"
        )
        if weights is None:
            ratio = ours_t / ref_t
    print(f"ratio ours/sklearn: {ratio:.2f}")


if __name__ == "__main__":
    main()

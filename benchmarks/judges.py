"""Benchmark: the learned judge and one `cal` step, each against scikit-learn doing the same work directly.

1. **Learned judge**: 100,000 judged (topic, document) pairs over 200 topics of a collection of 1,000,000
   synthetic documents (a document's text is generated from its id, seeded: 40 Zipf-distributed
   background words and 5 words of its subject, one of 500; so only the judged documents are ever
   materialised). ``judgements.learned.learned_grades`` (5-fold held-out grades) against the same five
   ``make_model(seed + fold).fit(X[train], y[train]).predict(X[test])`` written out with scikit-learn on
   the same feature matrix and the same folds. Both must give the same grades. Time (best of
   ``--repeats``) and peak memory (tracemalloc, which sees numpy's and scipy's buffers) of each; the
   feature matrix is built once, before, and timed apart.
2. **cal step**: a ``CalChooser`` over one topic of 100,000 candidates, 5,000 of them already judged;
   one step is ``next_documents()`` once the open batch is judged with its true grades (retrain on the
   judged documents, the topic's text and the presumed negatives, predict every candidate, take the next
   batch), against one plain ``make_classifier(seed).fit(...)`` + ``decision_function`` on the same rows
   (built off the clock, before each step). Best of 7 (or ``--repeats``) of each, interleaved.

Nothing is read from the network or disk. The last line holds the three ratios (targets: judge time and
peak memory ≤ 1.5, cal step ≤ 2).

Usage: .venv/bin/python benchmarks/judges.py [--small] [--repeats N]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgements.learned import PairTexts, folds, learned_grades, make_model, pair_features  # noqa: E402
from pooling.cal import CalChooser, make_classifier  # noqa: E402
from pooling.choosers import TopicTexts  # noqa: E402

COLLECTION = 1_000_000
SUBJECTS = 500
BACKGROUND = 5000
WEIGHTS = 1.0 / (np.arange(BACKGROUND) + 10.0)
WEIGHTS /= WEIGHTS.sum()


def document(i: int) -> str:
    """Document i of the synthetic collection (the same text for the same id, always)."""
    rng = np.random.default_rng([20261201, i])
    words = [f"w{w}" for w in rng.choice(BACKGROUND, size=40, p=WEIGHTS).tolist()]
    words += [f"s{i % SUBJECTS}x{w}" for w in rng.integers(20, size=5).tolist()]
    return " ".join(words)


def judged_pairs(n: int, topics: int, seed: int) -> tuple[list[PairTexts], np.ndarray]:
    """n judged pairs: each topic is one subject; half its pairs are of that subject (grade 2, or 1 for a
    tenth of them), half random documents (grade 0, or 1 for a twentieth)."""
    rng = np.random.default_rng(seed)
    per_topic = n // topics
    pairs: list[PairTexts] = []
    grades: list[int] = []
    for t in range(topics):
        query = f"s{t}x0 s{t}x1"
        on = t + SUBJECTS * rng.integers(COLLECTION // SUBJECTS, size=per_topic // 2)
        off = rng.integers(COLLECTION, size=per_topic - per_topic // 2)
        for doc in np.concatenate([on, off]).tolist():
            relevant = doc % SUBJECTS == t
            grade = (1 if rng.random() < 0.1 else 2) if relevant else (1 if rng.random() < 0.05 else 0)
            pairs.append(PairTexts(query, f"documents about subject {t}", "", document(doc)))
            grades.append(grade)
    return pairs, np.array(grades, dtype=np.int64)


def measured(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Best wall time of `repeats` calls, and the peak traced memory (MB) of one more call."""
    best = float("inf")
    value = None
    for _ in range(repeats):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return best, peak / 2**20, value


def sklearn_folds(x: sp.csr_matrix, y: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The learned judge's work written directly with scikit-learn: the same folds and models."""
    out = np.full(len(y), -1, dtype=np.int64)
    for index, (train, test) in enumerate(folds(len(y), k=k, seed=seed)):
        out[test] = make_model(seed + index).fit(x[train], y[train]).predict(x[test])
    return out


def cal_chooser(candidates: int, judged: int, seed: int) -> tuple[CalChooser, dict[str, int]]:
    """A cal chooser over one topic of `candidates` documents (5% speak of apples: relevant), `judged` of
    them recorded; and every document's grade."""
    rng = np.random.default_rng(seed)
    docids = [f"d{i:07d}" for i in range(candidates)]
    relevant = rng.random(candidates) < 0.05
    texts = {
        docid: " ".join(
            [f"w{w}" for w in rng.choice(BACKGROUND, size=30, p=WEIGHTS).tolist()]
            + (["apple", "orchard"] if rel else [])
        )
        for docid, rel in zip(docids, relevant.tolist(), strict=True)
    }
    ranked = {"run": docids}
    chooser = CalChooser(ranked, depth=None, seed=seed, texts=TopicTexts("apple orchard", texts))
    grades = dict(zip(docids, relevant.astype(int).tolist(), strict=True))
    for i in rng.choice(candidates, size=judged, replace=False).tolist():
        chooser.record(docids[i], grades[docids[i]])
    return chooser, grades


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="10,000 pairs and 10,000 candidates")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cal-only", action="store_true", help="only the cal step (its ratio alone)")
    args = parser.parse_args()
    n, candidates, judged = (10_000, 10_000, 500) if args.small else (100_000, 100_000, 5_000)
    judge_ratios = "" if args.cal_only else learned_judge(n, args.repeats)
    cal_ratio = cal_step(candidates, judged, args.repeats)
    print(f"ratios: {judge_ratios}cal step {cal_ratio:.2f} (≤ 2)")


def learned_judge(n: int, repeats: int) -> str:
    """The learned judge against scikit-learn; returns its two ratios, as the last line shows them."""

    started = time.perf_counter()
    pairs, grades = judged_pairs(n, topics=200, seed=1)
    generated = time.perf_counter() - started
    started = time.perf_counter()
    x = pair_features(pairs)
    featured = time.perf_counter() - started
    print(
        f"learned judge: {n:,} judged pairs of a {COLLECTION:,}-document collection, "
        f"{x.shape[1]:,} features, {x.nnz:,} non-zeros "
        f"(texts {generated:.1f} s, features {featured:.1f} s, not in the ratio)"
    )
    empty = x[:0]
    ours_t, ours_mb, ours = measured(lambda: learned_grades(x, grades, empty, k=5, seed=7), repeats)
    ref_t, ref_mb, ref = measured(lambda: sklearn_folds(x, grades, 5, 7), repeats)
    if not np.array_equal(ours.held_out, ref):
        raise SystemExit("MISMATCH: the learned judge's grades differ from scikit-learn's")
    agreement = float((ours.held_out == grades).mean())
    print(
        f"  ours    {ours_t:8.2f} s  peak {ours_mb:8.1f} MB"
        f"   (held-out accuracy {agreement:.3f}, same grades)"
    )
    print(f"  sklearn {ref_t:8.2f} s  peak {ref_mb:8.1f} MB")
    return f"learned judge time {ours_t / ref_t:.2f} (≤ 1.5), peak memory {ours_mb / ref_mb:.2f} (≤ 1.5), "


def cal_step(candidates: int, judged: int, repeats: int) -> float:
    """One cal step against a plain fit and predict; returns the ratio."""
    chooser, grades = cal_chooser(candidates, judged, seed=3)
    first = chooser.next_documents()  # builds the TF-IDF matrix once (not timed) and the first batch
    features, topic_row = chooser._matrices()
    print(f"cal step: {candidates:,} candidates, {judged:,} judged, {features.shape[1]:,} TF-IDF columns")

    negatives = np.arange(CalChooser.presumed_negatives)
    assert topic_row is not None

    def plain_rows() -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix]:
        """The plain fit's matrices for the step about to run: the same judged rows, the topic's row and
        as many presumed negatives (which ones changes nothing to the cost), built off the clock."""
        rows = np.array([chooser._row[d] for d in chooser._labels], dtype=np.intp)
        labels = np.array([int(v) for v in chooser._labels.values()])
        x_train = sp.vstack([features[rows], features[negatives], topic_row], format="csr")
        y_train = np.concatenate([labels, np.zeros(len(negatives), dtype=int), [1]])
        return x_train, y_train, features[np.setdiff1d(np.arange(features.shape[0]), rows)]

    # Each round: the open batch is judged (its true grades, off the clock), then one step — retrain,
    # predict, choose the next batch — against one plain fit and decision_function on the same rows.
    # Interleaved, best of many: both meet the same load of a shared machine.
    step_t = plain_t = float("inf")
    batch: list[str] = first
    for _ in range(max(7, repeats)):
        for docid in batch:
            chooser.record(docid, grades[docid])
        x_train, y_train, unjudged = plain_rows()
        begin = time.perf_counter()
        batch = chooser.next_documents()
        step_t = min(step_t, time.perf_counter() - begin)
        begin = time.perf_counter()
        make_classifier(3).fit(x_train, y_train).decision_function(unjudged)
        plain_t = min(plain_t, time.perf_counter() - begin)
    print(
        f"  cal step (retrain, predict, next batch of {len(batch)}) {step_t * 1e3:8.1f} ms"
        f"  (first batch {len(first)})"
    )
    print(f"  sklearn fit + decision_function                       {plain_t * 1e3:8.1f} ms")
    return step_t / plain_t


if __name__ == "__main__":
    main()

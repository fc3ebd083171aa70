"""Click-derived relevance, pure numpy (no Django): IPS, the ratio estimator and COEC per (topic,
document), session-bootstrap intervals with θ re-estimated inside each replicate, and thresholds to
grades.

For a (topic, document) with cells c (position k_c, impressions n_c, clicks C_c) and propensities θ:

- **IPS**: rel̂ = Σ_c C_c · w(k_c) / Σ_c n_c with w(k) = 1/θ_k, clipped at τ when given (w = min(1/θ_k, τ)):
  the inverse-propensity-weighted clicks (Σ click / p(position), each click at a position with θ = 0.16
  counting 6.25) per impression, an unbiased estimate of the PBM's γ without clipping. `clipped_share`
  is the share of all impressions at positions where clipping changed the weight.
- **ratio**: rel̂ = Σ C_c / Σ n_c θ_{k_c} (clicks over examinations expected; biased but lower variance).
- **COEC**: rel̂ = Σ C_c / Σ n_c CTR_{k_c}, CTR_k the log's click-through rate at position k over all
  documents (clicks over expected clicks, as OpenSearch's Search Relevance Workbench derives implicit
  judgements; needs no θ).

Cells at positions deeper than θ are left out (and counted). A document with no impression has no score.

A document never clicked scores 0, but 0 clicks say little when few examinations were expected: its
score's upper bound is `unclicked_upper` (clicks as a Poisson count of mean score · `expected`), and it
takes the lowest grade only when that bound is below the first threshold (`grade`); otherwise it has no
grade — not seen enough to be called irrelevant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from math import exp, factorial
from typing import Any

import numpy as np

from online.logformats import MAX_POSITION
from online.propensity import Counts

ESTIMATORS = ("ips", "ratio", "coec")


@dataclass
class Scores:
    pair: np.ndarray  # the pair ids scored, ascending
    score: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray
    clipped_share: float = 0.0
    left_out: int = 0  # impressions at positions deeper than θ
    # clicks expected per unit of score: Σ n θ (IPS, ratio; the examinations expected), Σ n CTR (COEC)
    expected: np.ndarray | None = None
    low: np.ndarray | None = None
    high: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)


def check_tau(tau: float | None) -> None:
    """τ, the cap on an IPS weight 1/θ: None (no cap) or a finite number of at least 1; ValueError else."""
    if tau is not None and not (np.isfinite(tau) and tau >= 1.0):
        raise ValueError("tau must be a number of at least 1 (a weight cap)")


def score(counts: Counts, theta: Sequence[float] | None, estimator: str, tau: float | None = None) -> Scores:
    """Per-pair scores of `estimator` (see the module docstring). θ may be None only for COEC."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}; expected one of {', '.join(ESTIMATORS)}")
    check_tau(tau)
    position, imp, clk = counts.position, counts.impressions, counts.clicks
    kmax = counts.max_position
    left_out = 0
    keep = np.ones(len(position), dtype=bool)
    th = None
    if estimator != "coec":
        if theta is None:
            raise ValueError(f"{estimator} needs propensities")
        th = np.asarray(theta, dtype=np.float64)
        usable = np.isfinite(th) & (th > 0)
        padded = np.zeros(max(kmax, len(th)))
        padded[: len(th)] = np.where(usable, th, 0.0)
        keep = padded[position - 1] > 0
        left_out = int(imp[~keep].sum())
        th = padded
    pair = counts.pair[keep]
    uniq, inverse = np.unique(pair, return_inverse=True)
    p, n, c = position[keep], imp[keep], clk[keep]
    pair_imp = np.bincount(inverse, weights=n)
    pair_clk = np.bincount(inverse, weights=c)
    clipped_share = 0.0
    if estimator == "ips":
        assert th is not None
        expected = np.bincount(inverse, weights=n * th[p - 1])
        weight = 1.0 / th[p - 1]
        if tau is not None:
            clipped = weight > tau
            clipped_share = float(n[clipped].sum() / max(n.sum(), 1))
            weight = np.minimum(weight, tau)
        value = np.bincount(inverse, weights=c * weight) / np.maximum(pair_imp, 1e-300)
    elif estimator == "ratio":
        assert th is not None
        expected = np.bincount(inverse, weights=n * th[p - 1])
        value = pair_clk / np.maximum(expected, 1e-300)
    else:
        ctr_imp = np.bincount(position - 1, weights=imp, minlength=kmax)
        ctr = np.divide(
            np.bincount(position - 1, weights=clk, minlength=kmax),
            ctr_imp,
            where=ctr_imp > 0,
            out=np.zeros(kmax),
        )
        expected = np.bincount(inverse, weights=n * ctr[p - 1])
        value = np.divide(pair_clk, expected, where=expected > 0, out=np.zeros(len(uniq)))
    return Scores(uniq, value, pair_imp, pair_clk, clipped_share, left_out, expected=expected)


def unclicked_upper(expected: np.ndarray, level: float) -> np.ndarray:
    """The upper bound of the score of a pair never clicked, at `level`: with clicks a Poisson count of mean
    score · `expected`, no click has probability exp(−score · expected), at least (1 − level) / 2 up to
    −ln((1 − level) / 2) / expected (3.69 / expected at 95%); infinite when nothing was expected."""
    with np.errstate(divide="ignore"):
        return np.where(expected > 0, -np.log((1.0 - level) / 2.0) / np.maximum(expected, 1e-300), np.inf)


_POISSON_CDF = np.cumsum([exp(-1) / factorial(k) for k in range(20)])


def session_weights(session: np.ndarray, replicate: int, seed: int) -> np.ndarray:
    """Poisson(1) bootstrap weights of sessions, a deterministic function of (session id, replicate,
    seed): the same session has the same weight in every chunk, so pages need not be grouped."""
    with np.errstate(over="ignore"):
        x = session.astype(np.uint64) + np.uint64(
            (seed * 1_000_003 + replicate + 1) * 0x9E3779B97F4A7C15 % 2**64
        )
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    u = (x >> np.uint64(11)).astype(np.float64) / float(2**53)
    return np.searchsorted(_POISSON_CDF, u).astype(np.float64)


def bootstrap(
    chunks: Callable[[], Iterator[dict[str, np.ndarray]]],
    *,
    n_docs: int,
    n_loggers: int,
    theta_of: Callable[[Counts], Sequence[float] | None],
    estimator: str,
    tau: float | None = None,
    replicates: int = 100,
    level: float = 0.95,
    seed: int = 0,
    batch: int = 20,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Percentile intervals of each pair's score over `replicates` session resamples (Poisson bootstrap:
    each session weighted by an independent Poisson(1) count), θ re-estimated by `theta_of` on each
    replicate's counts. Reads the archive `chunks()` once per batch of replicates. Returns (pair ids,
    low, high, warnings); pair id = topic index * n_docs + document index. `n_loggers`: the archive's
    loggers (its meta's), each chunk's logger index below it."""
    kmax = 0
    keys_list = []
    for chunk in chunks():
        keys, _ = _chunk_cells(chunk, n_docs, n_loggers)
        keys_list.append(np.unique(keys))
        kmax = max(kmax, int(chunk["length"].max(initial=0)))
    if not keys_list:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), ["no sessions to resample"]
    cells = np.unique(np.concatenate(keys_list))
    logger, rest = cells % n_loggers, cells // n_loggers
    position, pair = rest % MAX_POSITION + 1, rest // MAX_POSITION
    draws: list[tuple[np.ndarray, np.ndarray]] = []
    warnings: list[str] = []
    failed = 0
    for start in range(0, replicates, batch):
        reps = range(start, min(start + batch, replicates))
        imp = np.zeros((len(reps), len(cells)))
        clk = np.zeros((len(reps), len(cells)))
        for chunk in chunks():
            keys, page_of_cell = _chunk_cells(chunk, n_docs, n_loggers)
            index = np.searchsorted(cells, keys)
            clicked = chunk["click"][chunk["doc"] >= 0].astype(np.float64)
            for row, r in enumerate(reps):
                w = session_weights(chunk["session"], r, seed)[page_of_cell]
                imp[row] += np.bincount(index, weights=w, minlength=len(cells))
                clk[row] += np.bincount(index, weights=w * clicked, minlength=len(cells))
        for row in range(len(reps)):
            keep = imp[row] > 0
            counts = Counts.from_cells(
                pair[keep],
                position[keep],
                imp[row][keep],
                clk[row][keep],
                query=pair[keep] // n_docs,
                logger=logger[keep],
            )
            try:
                result = score(counts, theta_of(counts), estimator, tau)
            except ValueError:
                failed += 1
                continue
            draws.append((result.pair, result.score))
    if failed:
        warnings.append(f"{failed} of {replicates} replicates could not re-estimate θ and were left out")
    pairs = np.unique(pair)
    table = np.full((len(draws), len(pairs)), np.nan)
    for i, (ids, values) in enumerate(draws):
        table[i, np.searchsorted(pairs, ids)] = values
    alpha = (1.0 - level) / 2
    if not draws:
        return pairs, np.full(len(pairs), np.nan), np.full(len(pairs), np.nan), warnings
    low = np.nanquantile(table, alpha, axis=0)
    high = np.nanquantile(table, 1 - alpha, axis=0)
    return pairs, low, high, warnings


def _chunk_cells(chunk: dict[str, np.ndarray], n_docs: int, n_loggers: int) -> tuple[np.ndarray, np.ndarray]:
    """Cell keys ((pair * MAX_POSITION + position − 1) * n_loggers + logger) of a chunk's known documents,
    and the page of each: every logger, position and pair its own key, within the key space the import
    checked (`clicklogs.KEY_SPACE`: topics × documents × MAX_POSITION × loggers)."""
    length = chunk["length"].astype(np.int64)
    n = int(length.sum())
    page = np.repeat(np.arange(len(length)), length)
    starts = np.repeat(np.cumsum(length) - length, length)
    position = np.arange(n, dtype=np.int64) - starts + 1
    doc = chunk["doc"].astype(np.int64)
    known = doc >= 0
    topic = chunk["topic"].astype(np.int64)[page]
    logger = chunk["logger"].astype(np.int64)[page]
    pair = topic * n_docs + doc
    keys = (pair * MAX_POSITION + position - 1) * n_loggers + logger
    return keys[known], page[known]


def grade(scores: np.ndarray, thresholds: Sequence[Sequence[float]], lowest: int) -> np.ndarray:
    """Grades by thresholds: `thresholds` is [[t, g], ...] with t ascending; a score ≥ t gets g (the
    highest such), a score below every threshold gets `lowest`."""
    cuts = [float(t) for t, _ in thresholds]
    if any(b <= a for a, b in zip(cuts, cuts[1:], strict=False)):
        raise ValueError("thresholds must be strictly ascending")
    grades = np.array([lowest] + [int(g) for _, g in thresholds])
    return grades[np.searchsorted(np.array(cuts), scores, side="right")]


def seen_too_little(scored: Scores, thresholds: Sequence[Sequence[float]], level: float) -> np.ndarray:
    """The pairs never clicked whose score's upper bound (`unclicked_upper`) reaches the first threshold:
    for all their clicks tell, they may be relevant, so they get no grade (see the module docstring)."""
    assert scored.expected is not None
    bound = unclicked_upper(scored.expected, level)
    return (scored.clicks == 0) & (bound >= float(thresholds[0][0]))


def parse_thresholds(value: Any, labels: Sequence[int]) -> list[list[float]]:
    """Thresholds as given by a user (`[[t, g], ...]` or "t:g,t:g"), checked against the rubric labels."""
    if isinstance(value, str):
        try:
            value = [
                [float(t), int(g)] for t, g in (part.split(":") for part in value.split(",") if part.strip())
            ]
        except ValueError:
            raise ValueError("thresholds must read like 0.2:1,0.5:2 (score:grade, ascending)") from None
    if not isinstance(value, list) or not value:
        raise ValueError("thresholds must be a non-empty list of [score, grade]")
    out = []
    for item in value:
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise ValueError("each threshold is a [score, grade] pair")
        t, g = item
        if isinstance(t, bool) or not isinstance(t, int | float) or not np.isfinite(t):
            raise ValueError(f"threshold {t!r} is not a finite number")
        if isinstance(g, bool) or not isinstance(g, int) or g not in labels:
            raise ValueError(f"grade {g!r} is not a grade of the rubric ({', '.join(map(str, labels))})")
        out.append([float(t), int(g)])
    grade(np.zeros(1), out, min(labels))  # ascending check
    return out

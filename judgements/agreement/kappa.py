"""Cohen's kappa over the full label set: labels and arrays, weights, confusion matrices, the kappas,
and seeded bootstrap intervals over items (see the package docstring for the conventions)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval"]

WEIGHTINGS: tuple[Weights, ...] = (None, "linear", "quadratic")
_KAPPA_KINDS: tuple[str, ...] = ("unweighted", "linear", "quadratic", "binary")


class Record(NamedTuple):
    """One judgement. Any 4-tuple ``(item, topic, rater, grade)`` is accepted where a record is expected."""

    item: Hashable
    topic: Hashable
    rater: Hashable
    grade: int | None


# --------------------------------------------------------------------------------------------------------
# Labels and arrays
# --------------------------------------------------------------------------------------------------------


def _check_labels(labels: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("labels must be a non-empty sequence of the rubric's grades")
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise ValueError(f"labels must be integers, got {list(labels)!r}")
    arr = arr.astype(np.int64, copy=False)
    if np.unique(arr).size != arr.size:
        raise ValueError(f"labels must be distinct, got {arr.tolist()!r}")
    return arr


def _check_weights(weights: Weights) -> None:
    if weights not in WEIGHTINGS:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def _as_grades(values: npt.ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    kind = arr.dtype.kind
    if kind == "i":
        return arr
    if kind in "ub":
        return arr.astype(np.int64)
    if kind == "f":
        if arr.size and not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
            raise ValueError(f"{name} must hold integer grades (NaN or fractions found)")
        return arr.astype(np.int64)
    if arr.size == 0:
        return arr.astype(np.int64)
    raise ValueError(
        f"{name} must hold integer grades; drop unrateable (None) judgements before computing agreement"
    )


def _label_positions(values: np.ndarray, labels: np.ndarray, name: str) -> np.ndarray:
    """Position of each value in ``labels``; ValueError for a value outside the label set."""
    if values.size == 0:
        return values.astype(np.int64)
    lo = int(labels.min())
    hi = int(labels.max())
    vmin = int(values.min())
    vmax = int(values.max())
    n = labels.size
    if vmin >= lo and vmax <= hi:
        if hi - lo + 1 == n and (n == 1 or bool((np.diff(labels) == 1).all())):
            # Contiguous ascending labels (the usual rubric 0..3): the position is an offset.
            return values - lo if lo else values
        if hi - lo <= 1_000_000:
            lut = np.full(hi - lo + 1, -1, dtype=np.int64)
            lut[labels - lo] = np.arange(n)
            pos = lut[values - lo]
            if not (pos < 0).any():
                return pos
        else:
            order = np.argsort(labels, kind="stable")
            found = np.searchsorted(labels[order], values)
            found = np.minimum(found, n - 1)
            if (labels[order][found] == values).all():
                return order[found]
    bad = np.setdiff1d(np.unique(values), labels)
    raise ValueError(f"{name} holds grades not in labels {labels.tolist()}: {bad[:10].tolist()}")


def weight_matrix(n_labels: int, weights: Weights = None) -> np.ndarray:
    """Disagreement weights w[i, j] over label positions: 1 − δ(i, j) (unweighted), |i − j| (linear),
    (i − j)² (quadratic) — sklearn's definitions."""
    _check_weights(weights)
    idx = np.arange(n_labels, dtype=np.float64)
    diff = idx[:, None] - idx[None, :]
    if weights is None:
        return (diff != 0).astype(np.float64)
    if weights == "linear":
        return np.abs(diff)
    return diff**2


def _confusion_from_positions(ia: np.ndarray, ib: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(ia * n + ib, minlength=n * n).reshape(n, n)


def confusion_matrix(a: npt.ArrayLike, b: npt.ArrayLike, *, labels: Sequence[int]) -> np.ndarray:
    """Confusion matrix C over the full label set: C[i, j] = number of pairs with a = labels[i] and
    b = labels[j] (rows are ``a``), as ``sklearn.metrics.confusion_matrix(a, b, labels=labels)``."""
    lab = _check_labels(labels)
    av = _as_grades(a, "a")
    bv = _as_grades(b, "b")
    if av.shape != bv.shape:
        raise ValueError(f"a and b differ in length ({av.size} and {bv.size})")
    ia = _label_positions(av, lab, "a")
    ib = _label_positions(bv, lab, "b")
    return _confusion_from_positions(ia, ib, lab.size)


# --------------------------------------------------------------------------------------------------------
# Cohen's kappa
# --------------------------------------------------------------------------------------------------------


def _kappa_batch(confusions: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kappa of each confusion matrix in a (..., K, K) stack; NaN where undefined (internal only)."""
    c = confusions.astype(np.float64, copy=False)
    total = c.sum(axis=(-2, -1))
    rows = c.sum(axis=-1)
    cols = c.sum(axis=-2)
    observed = (c * w).sum(axis=(-2, -1))
    # sum_ij w_ij * rows_i * cols_j: chance disagreement times the total squared.
    expected = np.einsum("...i,ij,...j->...", rows, w, cols)
    out = np.full(total.shape, np.nan)
    ok = (total > 0) & (expected > 0)
    np.divide(total * observed, expected, out=out, where=ok)
    return np.where(ok, 1.0 - out, np.nan)


def _to_optional(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def kappa_from_confusion(confusion: npt.ArrayLike, *, weights: Weights = None) -> float | None:
    """Cohen's kappa of a K × K confusion matrix C (rows rater a, columns rater b, over the full label set).

    κ = 1 − Σ w_ij C_ij / Σ w_ij E_ij with E_ij = r_i c_j / N (r, c the row and column sums, N the total)
    and w from :func:`weight_matrix`. ``None`` when N = 0 or Σ w_ij E_ij = 0 (both raters use one and the
    same label only: chance agreement is 1 and κ is 0/0).
    """
    c = np.asarray(confusion)
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        raise ValueError("confusion must be a square matrix")
    return _to_optional(float(_kappa_batch(c, weight_matrix(c.shape[0], weights))))


def cohen_kappa(
    a: npt.ArrayLike, b: npt.ArrayLike, *, labels: Sequence[int], weights: Weights = None
) -> float | None:
    """Cohen's kappa of paired grades ``a``, ``b`` over the full label set ``labels``.

    Equals ``sklearn.metrics.cohen_kappa_score(a, b, labels=labels, weights=weights)`` where that is
    defined; where sklearn returns NaN (no pairs, or all pairs on one same label) this returns ``None``.
    Computed from one ``np.bincount`` over the label positions. See :func:`kappa_from_confusion`.
    """
    _check_weights(weights)
    conf = confusion_matrix(a, b, labels=labels)
    return kappa_from_confusion(conf, weights=weights)


def binarise_confusion(
    confusion: npt.ArrayLike, *, labels: Sequence[int] | np.ndarray, level: int
) -> np.ndarray:
    """Collapse a confusion matrix over ``labels`` to 2 × 2 over (not relevant, relevant), where relevant
    means grade ≥ ``level``. Index 0 is "grade < level", index 1 is "grade ≥ level"."""
    lab = _check_labels(labels)
    c = np.asarray(confusion)
    if c.shape[-2:] != (lab.size, lab.size):
        raise ValueError(f"confusion must be {lab.size} × {lab.size} to match labels")
    p = np.zeros((lab.size, 2), dtype=c.dtype)
    p[np.arange(lab.size), (lab >= level).astype(np.int64)] = 1
    return np.einsum("ki,...kl,lj->...ij", p, c, p)


def binary_kappa(
    a: npt.ArrayLike, b: npt.ArrayLike, *, level: int, labels: Sequence[int] | None = None
) -> float | None:
    """Unweighted Cohen's kappa after binarising both raters at ``level`` (grade ≥ level → 1, else 0),
    over the label set {0, 1}. If ``labels`` is given, grades outside it are a ValueError."""
    av = _as_grades(a, "a")
    bv = _as_grades(b, "b")
    if labels is not None:
        lab = _check_labels(labels)
        _label_positions(av, lab, "a")
        _label_positions(bv, lab, "b")
    return cohen_kappa((av >= level).astype(np.int64), (bv >= level).astype(np.int64), labels=[0, 1])


# --------------------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval. ``low``/``high`` are ``None`` when no resample had a defined
    kappa. ``n_undefined`` resamples (kappa undefined, e.g. all on one label) were left out."""

    low: float | None
    high: float | None
    n: int
    n_undefined: int
    alpha: float
    seed: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _resampled_confusions(item_confusions: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, K, K) confusion matrices of n bootstrap resamples of the items (rows of (I, K, K)).

    Items with the same confusion pattern are exchangeable, so drawing I items with replacement equals,
    in distribution, a multinomial draw of I over the distinct patterns weighted by their frequency.
    """
    n_items, k, _ = item_confusions.shape
    flat = item_confusions.reshape(n_items, k * k)
    patterns, counts = _distinct_rows(flat)
    draws = rng.multinomial(n_items, counts / n_items, size=n)
    return (draws @ patterns).reshape(n, k, k)


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(rows, axis=0, return_counts=True)` for rows of non-negative counts: the same rows in the
    same (lexicographic) order. Where every row fits one int64 as the digits of a number in base
    max + 1, the rows are those numbers, whose order is the rows' (a sort of integers; `axis=0` sorts
    rows as records, which was most of the time of a summary's 5,000 bootstraps)."""
    base = int(rows.max()) + 1 if rows.size else 1
    if rows.shape[0] == 0 or rows.min() < 0 or rows.shape[1] * math.log2(base) > 62:
        return np.unique(rows, axis=0, return_counts=True)
    weights = base ** np.arange(rows.shape[1] - 1, -1, -1, dtype=np.int64)
    _, first, counts = np.unique(rows @ weights, return_index=True, return_counts=True)
    return rows[first], counts


def _interval(values: np.ndarray, *, alpha: float, n: int, seed: int) -> Interval:
    defined = values[~np.isnan(values)]
    if defined.size == 0:
        return Interval(None, None, n, n, alpha, seed)
    low, high = np.quantile(defined, [alpha / 2, 1 - alpha / 2])
    return Interval(float(low), float(high), n, int(values.size - defined.size), alpha, seed)


def _check_bootstrap(n: int, alpha: float) -> None:
    if n < 1:
        raise ValueError("n (bootstrap resamples) must be at least 1")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be in (0, 1)")


def bootstrap_interval(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    labels: Sequence[int],
    weights: Weights = None,
    n: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    items: npt.ArrayLike | None = None,
) -> Interval:
    """Seeded percentile bootstrap (1 − alpha) interval of :func:`cohen_kappa` over items.

    ``items`` (optional, one key per pair) groups pairs that belong to the same item; an item is resampled
    with all its pairs. Without it every pair is an item. The interval is the alpha/2 and 1 − alpha/2
    quantiles (numpy's linear interpolation) of the kappas of ``n`` resamples of the items with
    replacement, leaving out resamples whose kappa is undefined.
    """
    _check_weights(weights)
    _check_bootstrap(n, alpha)
    lab = _check_labels(labels)
    k = lab.size
    ia = _label_positions(_as_grades(a, "a"), lab, "a")
    ib = _label_positions(_as_grades(b, "b"), lab, "b")
    if ia.shape != ib.shape:
        raise ValueError(f"a and b differ in length ({ia.size} and {ib.size})")
    if ia.size == 0:
        return Interval(None, None, n, n, alpha, seed)
    code = ia * k + ib
    if items is None:
        group = np.arange(ia.size)
    else:
        keys = np.asarray(items)
        if keys.shape != ia.shape:
            raise ValueError("items must hold one key per pair")
        _, group = np.unique(keys, return_inverse=True)
    n_groups = int(group.max()) + 1
    item_conf = np.bincount(group * k * k + code, minlength=n_groups * k * k).reshape(n_groups, k, k)
    rng = np.random.default_rng(seed)
    confs = _resampled_confusions(item_conf, n, rng)
    return _interval(_kappa_batch(confs, weight_matrix(k, weights)), alpha=alpha, n=n, seed=seed)

"""Inter-rater agreement statistics (pure: numpy only, no Django).

Everything here is computed over the rubric's **full label set**, passed in explicitly as ``labels`` and
never inferred from the data: weights and chance agreement depend on which labels exist, not on which ones
happen to occur (for example a = [0,1,3,3,1,0], b = [0,3,3,1,1,0] has linear κ = 0.5 over labels 0–3, and the
wrong 0.625 if the labels are inferred).

Conventions shared by every function
------------------------------------
* **Undefined is ``None``, never NaN.** A statistic whose denominator is zero — no pairs at all, or chance
  disagreement of zero because every judgement falls on one label (where sklearn warns and returns NaN and
  statsmodels divides 0 by 0) — is returned as ``None``. ``None`` cannot slip silently into arithmetic, it
  serialises to JSON ``null``, and a report must print it as "undefined", never as a number.
* **Labels** are distinct ints in rubric order (ascending grades). Kappa weights use the *positions* in
  ``labels`` (|i − j| or (i − j)² for the i-th and j-th label), exactly like
  ``sklearn.metrics.cohen_kappa_score(labels=, weights=)``. A grade that is not in ``labels`` is a
  ``ValueError`` (sklearn silently drops such pairs; we do not).
* **Records** are judgements ``(item_key, topic_key, rater_key, grade)``: ``grade`` is an int, or ``None``
  for "unrateable", which takes no part in any agreement statistic (it is not a grade). Pass only the
  current revision of each judgement: the same rater twice on one item is a ``ValueError``. Keys are
  hashable; raters and topics are reported in sorted order (``repr`` order if the keys do not sort).
* **Pairs.** For record-level Cohen's kappa every unordered pair of distinct raters' graded judgements on
  one item contributes one (a, b) pair, with ``a`` the grade of the rater whose key sorts first. An item
  graded by k raters contributes k(k − 1)/2 pairs; an item graded once contributes none.
* **Bootstrap** intervals are percentile intervals over *items*: an item is resampled with all of its
  pairs (with ``items=None`` each pair is its own item). Resampling N items with replacement and summing
  their confusion matrices is implemented, exactly equal in distribution, as one multinomial draw over the
  distinct per-item confusion patterns, so 1,000 resamples cost about as much as one. Resamples whose
  kappa is undefined are left out and counted (``Interval.n_undefined``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval"]

WEIGHTINGS: tuple[Weights, ...] = (None, "linear", "quadratic")
_KAPPA_KINDS: tuple[str, ...] = ("unweighted", "linear", "quadratic", "binary")

__all__ = [
    "Interval",
    "FleissTable",
    "PairAgreement",
    "RatingData",
    "Record",
    "TopicAgreement",
    "agreement_summary",
    "binarise_confusion",
    "binary_kappa",
    "bootstrap_interval",
    "cohen_kappa",
    "confusion_matrix",
    "fleiss_kappa",
    "fleiss_table",
    "kappa_from_confusion",
    "krippendorff_alpha",
    "krippendorff_alpha_from_counts",
    "landis_koch_band",
    "noise_floor_sentence",
    "overall_kappa",
    "pairwise_kappas",
    "per_topic_kappa",
    "rating_data",
    "weight_matrix",
]


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
        return {
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "n_undefined": self.n_undefined,
            "alpha": self.alpha,
            "seed": self.seed,
        }


def _resampled_confusions(item_confusions: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, K, K) confusion matrices of n bootstrap resamples of the items (rows of (I, K, K)).

    Items with the same confusion pattern are exchangeable, so drawing I items with replacement equals,
    in distribution, a multinomial draw of I over the distinct patterns weighted by their frequency.
    """
    n_items, k, _ = item_confusions.shape
    flat = item_confusions.reshape(n_items, k * k)
    patterns, counts = np.unique(flat, axis=0, return_counts=True)
    draws = rng.multinomial(n_items, counts / n_items, size=n)
    return (draws @ patterns).reshape(n, k, k)


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


# --------------------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------------------


def _sorted_keys(keys: Iterable[Hashable]) -> list[Hashable]:
    ks = list(keys)
    try:
        return sorted(ks)  # type: ignore[type-var]  # unorderable keys: TypeError below
    except TypeError:
        return sorted(ks, key=repr)


@dataclass(frozen=True)
class RatingData:
    """Judgement records indexed for agreement computations (build with :func:`rating_data`).

    ``items``/``topics``/``raters`` are the sorted keys; per item: ``item_topic`` (index into ``topics``)
    and ``item_counts`` (I × K: graded judgements per label position). Per pair of judgements (see the
    module docstring): ``pair_item``, ``pair_rater_a`` < ``pair_rater_b`` (indices into ``raters``) and
    ``pair_a``, ``pair_b`` (label positions).
    """

    labels: np.ndarray
    items: list[Hashable]
    topics: list[Hashable]
    raters: list[Hashable]
    item_topic: np.ndarray
    item_counts: np.ndarray
    pair_item: np.ndarray
    pair_rater_a: np.ndarray
    pair_rater_b: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    n_judgements: int
    n_unrateable: int
    graded_raters: frozenset[int] = field(default_factory=frozenset)

    @property
    def n_pairs(self) -> int:
        return int(self.pair_a.size)

    def item_confusions(self, mask: np.ndarray | None = None) -> np.ndarray:
        """(P, K, K): the confusion matrix of each item's pairs, for the P items that have a pair
        (optionally counting only the pairs selected by ``mask``, a boolean mask or an index array)."""
        k = self.labels.size
        item, a, b = self.pair_item, self.pair_a, self.pair_b
        if mask is not None:
            item, a, b = item[mask], a[mask], b[mask]
        if item.size == 0:
            return np.zeros((0, k, k), dtype=np.int64)
        _, group = np.unique(item, return_inverse=True)
        n_groups = int(group.max()) + 1
        code = group * k * k + a * k + b
        return np.bincount(code, minlength=n_groups * k * k).reshape(n_groups, k, k)


def rating_data(records: Iterable[Sequence[Any]], *, labels: Sequence[int]) -> RatingData:
    """Index judgement records ``(item, topic, rater, grade)``; see the module docstring for the rules.

    ValueError for a grade outside ``labels`` (or not an int), one rater judging an item twice, or one
    item given two different topics.
    """
    lab = _check_labels(labels)
    position = {int(v): i for i, v in enumerate(lab.tolist())}
    by_item: dict[Hashable, dict[Hashable, int | None]] = {}
    topic_of: dict[Hashable, Hashable] = {}
    n_judgements = 0
    n_unrateable = 0
    for rec in records:
        item, topic, rater, grade = rec
        n_judgements += 1
        known = topic_of.setdefault(item, topic)
        if known != topic:
            raise ValueError(f"item {item!r} is given two topics: {known!r} and {topic!r}")
        judged = by_item.setdefault(item, {})
        if rater in judged:
            raise ValueError(f"rater {rater!r} judged item {item!r} twice; pass only the latest revision")
        if grade is None:
            judged[rater] = None
            n_unrateable += 1
            continue
        if isinstance(grade, bool) or not isinstance(grade, int | np.integer):
            raise ValueError(f"grade {grade!r} of rater {rater!r} on item {item!r} is not an int or None")
        pos = position.get(int(grade))
        if pos is None:
            raise ValueError(
                f"grade {grade!r} of rater {rater!r} on item {item!r} is not in labels {lab.tolist()}"
            )
        judged[rater] = pos

    items = _sorted_keys(by_item)
    topics = _sorted_keys(set(topic_of.values()))
    topic_index = {t: i for i, t in enumerate(topics)}
    all_raters = {r for judged in by_item.values() for r in judged}
    raters = _sorted_keys(all_raters)
    rater_index = {r: i for i, r in enumerate(raters)}

    k = lab.size
    item_counts = np.zeros((len(items), k), dtype=np.int64)
    item_topic = np.empty(len(items), dtype=np.int64)
    p_item: list[int] = []
    p_ra: list[int] = []
    p_rb: list[int] = []
    p_a: list[int] = []
    p_b: list[int] = []
    graded_raters: set[int] = set()
    for i, item in enumerate(items):
        item_topic[i] = topic_index[topic_of[item]]
        graded = sorted((rater_index[r], g) for r, g in by_item[item].items() if g is not None)
        for r, g in graded:
            item_counts[i, g] += 1
            graded_raters.add(r)
        for x in range(len(graded)):
            rx, gx = graded[x]
            for y in range(x + 1, len(graded)):
                ry, gy = graded[y]
                p_item.append(i)
                p_ra.append(rx)
                p_rb.append(ry)
                p_a.append(gx)
                p_b.append(gy)

    def arr(xs: list[int]) -> np.ndarray:
        return np.asarray(xs, dtype=np.int64)

    return RatingData(
        labels=lab,
        items=items,
        topics=topics,
        raters=raters,
        item_topic=item_topic,
        item_counts=item_counts,
        pair_item=arr(p_item),
        pair_rater_a=arr(p_ra),
        pair_rater_b=arr(p_rb),
        pair_a=arr(p_a),
        pair_b=arr(p_b),
        n_judgements=n_judgements,
        n_unrateable=n_unrateable,
        graded_raters=frozenset(graded_raters),
    )


@dataclass(frozen=True)
class PairAgreement:
    """Cohen's kappa of one rater pair over the items both graded (``rater_a``'s grades are the rows)."""

    rater_a: Hashable
    rater_b: Hashable
    kappa: float | None
    n_items: int
    confusion: np.ndarray


@dataclass(frozen=True)
class TopicAgreement:
    """Cohen's kappa over the judgement pairs of one topic (pairs as in the module docstring);
    ``n_items`` counts the topic's items graded by at least two raters."""

    topic: Hashable
    kappa: float | None
    n_items: int
    n_pairs: int
    confusion: np.ndarray


def _grouped_confusions(data: RatingData, group: np.ndarray, n_groups: int) -> np.ndarray:
    k = data.labels.size
    code = group * k * k + data.pair_a * k + data.pair_b
    return np.bincount(code, minlength=n_groups * k * k).reshape(n_groups, k, k)


def pairwise_kappas(
    records: Iterable[Sequence[Any]], *, labels: Sequence[int], weights: Weights = None
) -> dict[tuple[Hashable, Hashable], PairAgreement]:
    """Cohen's kappa for every pair of raters who graded at least one item in common, keyed by
    ``(rater_a, rater_b)`` with ``rater_a`` sorting first. Unrateable judgements are left out."""
    _check_weights(weights)
    data = rating_data(records, labels=labels)
    return _pairwise(data, weights)


def _pairwise(data: RatingData, weights: Weights) -> dict[tuple[Hashable, Hashable], PairAgreement]:
    n_r = len(data.raters)
    group = data.pair_rater_a * n_r + data.pair_rater_b
    confs = _grouped_confusions(data, group, n_r * n_r)
    kappas = _kappa_batch(confs, weight_matrix(data.labels.size, weights))
    out: dict[tuple[Hashable, Hashable], PairAgreement] = {}
    for g in np.unique(group).tolist():
        ra, rb = data.raters[g // n_r], data.raters[g % n_r]
        out[(ra, rb)] = PairAgreement(
            ra, rb, _to_optional(float(kappas[g])), int(confs[g].sum()), confs[g].copy()
        )
    return out


def overall_kappa(
    records: Iterable[Sequence[Any]], *, labels: Sequence[int], weights: Weights = None
) -> float | None:
    """Cohen's kappa over all pairs of judgements of the same item (every unordered pair of distinct
    raters' graded judgements on an item is one (a, b) pair, ``a`` from the rater whose key sorts first).
    ``None`` if undefined (no pairs, or every paired grade is one same label)."""
    _check_weights(weights)
    data = rating_data(records, labels=labels)
    k = data.labels.size
    conf = _confusion_from_positions(data.pair_a, data.pair_b, k)
    return kappa_from_confusion(conf, weights=weights)


def per_topic_kappa(
    records: Iterable[Sequence[Any]], *, labels: Sequence[int], weights: Weights = None
) -> list[TopicAgreement]:
    """Cohen's kappa per topic over that topic's judgement pairs, worst first: ascending kappa, then the
    topics whose kappa is undefined (including topics with no pair), ties by topic key."""
    _check_weights(weights)
    data = rating_data(records, labels=labels)
    return _per_topic(data, weights)


def _per_topic(data: RatingData, weights: Weights) -> list[TopicAgreement]:
    n_t = len(data.topics)
    pair_topic = data.item_topic[data.pair_item]
    confs = _grouped_confusions(data, pair_topic, n_t)
    kappas = _kappa_batch(confs, weight_matrix(data.labels.size, weights))
    paired_items = np.bincount(data.item_topic[np.unique(data.pair_item)], minlength=n_t)
    out = [
        TopicAgreement(
            data.topics[t],
            _to_optional(float(kappas[t])),
            int(paired_items[t]),
            int(confs[t].sum()),
            confs[t].copy(),
        )
        for t in range(n_t)
    ]
    # Stable sort on topic order already given; undefined last.
    return sorted(out, key=lambda r: (r.kappa is None, r.kappa if r.kappa is not None else 0.0))


# --------------------------------------------------------------------------------------------------------
# Fleiss' kappa
# --------------------------------------------------------------------------------------------------------


def fleiss_kappa(table: npt.ArrayLike) -> float | None:
    """Fleiss' kappa of an items × categories table of counts, every row summing to the same n ≥ 2.

    P_i = (Σ_j n_ij² − n) / (n(n − 1)), P̄ = mean P_i, p_j = Σ_i n_ij / (N n), P_e = Σ_j p_j²,
    κ = (P̄ − P_e) / (1 − P_e) — ``statsmodels.stats.inter_rater.fleiss_kappa(table, method="fleiss")``.
    ``None`` when there are no items or P_e = 1 (every rating in one category). ValueError for negative
    counts, rows with different totals, or fewer than 2 ratings per item.
    """
    t = np.asarray(table)
    if t.ndim != 2:
        raise ValueError("table must be items × categories")
    if t.shape[0] == 0:
        return None
    if t.dtype.kind not in "iu":
        if not (np.isfinite(t).all() and (t == np.round(t)).all()):
            raise ValueError("table must hold whole counts")
        t = t.astype(np.int64)
    if (t < 0).any():
        raise ValueError("table counts must be non-negative")
    totals = t.sum(axis=1)
    n = int(totals[0])
    if (totals != n).any():
        raise ValueError(f"every item must have the same number of ratings; row totals are {set(totals)}")
    if n < 2:
        raise ValueError("Fleiss' kappa needs at least 2 ratings per item")
    tf = t.astype(np.float64)
    n_items = t.shape[0]
    p = tf.sum(axis=0) / (n_items * n)
    p_e = float((p * p).sum())
    p_bar = float(((tf * tf).sum(axis=1) - n).mean() / (n * (n - 1)))
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


@dataclass(frozen=True)
class FleissTable:
    """Items × labels count table for Fleiss' kappa: only items with ``n_ratings`` graded judgements.

    ``n_dropped`` items had at least one graded judgement but a different number of them."""

    table: np.ndarray
    items: list[Hashable]
    n_ratings: int
    n_dropped: int


def fleiss_table(records: Iterable[Sequence[Any]], *, labels: Sequence[int]) -> FleissTable:
    """Build the Fleiss table from records, keeping the items with the modal number of graded judgements.

    The mode is taken over items with at least 2 graded judgements (a single rating carries no
    agreement), ties going to the larger number. Unrateable judgements do not count as ratings.
    """
    return _fleiss_table(rating_data(records, labels=labels))


def _fleiss_table(data: RatingData) -> FleissTable:
    m = data.item_counts.sum(axis=1)
    rated = m >= 1
    multi = m[m >= 2]
    if multi.size == 0:
        return FleissTable(np.zeros((0, data.labels.size), dtype=np.int64), [], 0, int(rated.sum()))
    counts = Counter(multi.tolist())
    top = max(counts.values())
    mode = max(v for v, c in counts.items() if c == top)
    keep = m == mode
    idx = np.flatnonzero(keep)
    return FleissTable(
        data.item_counts[keep].copy(),
        [data.items[i] for i in idx.tolist()],
        int(mode),
        int(rated.sum() - keep.sum()),
    )


# --------------------------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------------------------


def _check_level(level: str) -> None:
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")


def krippendorff_alpha_from_counts(
    value_counts: npt.ArrayLike, *, values: Sequence[float], level: Level = "nominal"
) -> float | None:
    """Krippendorff's alpha from a units × values table of counts (n_uv = coders giving unit u value v).

    Coincidence-matrix formulation (Krippendorff 2011): over units with m_u ≥ 2 values,
    o_ck = Σ_u (n_uc n_uk − δ_ck n_uc) / (m_u − 1); n_c = Σ_k o_ck; n = Σ_c n_c;
    e_ck = (n_c n_k − δ_ck n_c) / (n − 1); α = 1 − Σ o_ck δ²_ck / Σ e_ck δ²_ck, with
    δ²_ck = [c ≠ k] (nominal), (v_c − v_k)² (interval), and for ordinal
    (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over the ordered ``values``. ``None`` when no unit has 2 values or
    the expected disagreement is 0 (all pairable values equal).
    """
    _check_level(level)
    vc = np.asarray(value_counts, dtype=np.float64)
    vals = np.asarray(values, dtype=np.float64)
    if vc.ndim != 2 or vc.shape[1] != vals.size:
        raise ValueError("value_counts must be units × values, one column per value")
    m = vc.sum(axis=1)
    vc = vc[m >= 2]
    m = m[m >= 2]
    if vc.shape[0] == 0:
        return None
    scaled = vc / (m - 1)[:, None]
    o = scaled.T @ vc - np.diag(scaled.sum(axis=0))
    n_c = o.sum(axis=0)
    n = n_c.sum()
    e = (np.outer(n_c, n_c) - np.diag(n_c)) / (n - 1)
    k = vals.size
    if level == "nominal":
        d = 1.0 - np.eye(k)
    elif level == "interval":
        d = (vals[:, None] - vals[None, :]) ** 2
    else:
        cum = np.cumsum(n_c)
        i = np.arange(k)
        lo = np.minimum(i[:, None], i[None, :])
        hi = np.maximum(i[:, None], i[None, :])
        between = cum[hi] - cum[lo] + n_c[lo]  # Σ_{g=lo..hi} n_g
        d = (between - (n_c[lo] + n_c[hi]) / 2.0) ** 2
    d_e = float((e * d).sum())
    if d_e <= 0.0:
        return None
    return 1.0 - float((o * d).sum()) / d_e


def krippendorff_alpha(
    reliability_data: npt.ArrayLike,
    *,
    level: Level = "nominal",
    value_domain: Sequence[float] | None = None,
) -> float | None:
    """Krippendorff's alpha of a coders × units matrix with NaN for a missing value.

    ``value_domain`` is the ordered set of possible values (the rubric's grades); values outside it are a
    ValueError. If omitted, the values present are used — which gives the same alpha at every level
    (unused values carry n_g = 0), but pass the rubric to be checked. Matches
    ``krippendorff.alpha(reliability_data=..., level_of_measurement=..., value_domain=...)``; ``None``
    where that raises for lack of pairable values or returns NaN. See :func:`krippendorff_alpha_from_counts`.
    """
    _check_level(level)
    data = np.asarray(reliability_data, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError("reliability_data must be coders × units")
    present = ~np.isnan(data)
    observed = np.unique(data[present])
    if value_domain is None:
        domain = observed
    else:
        domain = np.asarray(value_domain, dtype=np.float64)
        if np.unique(domain).size != domain.size:
            raise ValueError("value_domain must be distinct values")
        if level != "nominal" and (np.diff(domain) <= 0).any():
            raise ValueError("value_domain must be in ascending order for ordinal and interval levels")
        missing = np.setdiff1d(observed, domain)
        if missing.size:
            raise ValueError(f"reliability data holds values outside value_domain: {missing[:10].tolist()}")
    if domain.size == 0:
        return None
    order = np.argsort(domain, kind="stable")
    pos = np.searchsorted(domain[order], data[present])
    col = order[np.minimum(pos, domain.size - 1)]
    unit = np.nonzero(present)[1]
    n_units = data.shape[1]
    counts = np.bincount(unit * domain.size + col, minlength=n_units * domain.size).reshape(
        n_units, domain.size
    )
    return krippendorff_alpha_from_counts(counts, values=domain.tolist(), level=level)


# --------------------------------------------------------------------------------------------------------
# Summary for reports
# --------------------------------------------------------------------------------------------------------

_BANDS: tuple[tuple[float, str], ...] = (
    (0.0, "poor"),
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
)


def landis_koch_band(kappa: float | None) -> str:
    """Landis & Koch (1977) band: < 0 poor, 0–0.20 slight, 0.21–0.40 fair, 0.41–0.60 moderate,
    0.61–0.80 substantial, 0.81–1 almost perfect (upper bounds inclusive); ``"undefined"`` for None."""
    if kappa is None or math.isnan(kappa):
        return "undefined"
    if kappa < 0.0:
        return "poor"
    for upper, name in _BANDS[1:]:
        if kappa <= upper:
            return name
    return "almost perfect"


def _json_key(key: Hashable) -> Any:
    if isinstance(key, bool) or not isinstance(key, str | int | float | np.integer):
        return str(key)
    return key.item() if isinstance(key, np.integer) else key


def agreement_summary(
    records: Iterable[Sequence[Any]],
    *,
    labels: Sequence[int],
    relevance_level: int,
    seed: int = 0,
    n_bootstrap: int = 1000,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Every agreement figure for a pool's judgements, as a JSON-serialisable dict (``None`` = undefined).

    Keys: ``labels``, ``relevance_level``, counts (``n_judgements``, ``n_unrateable``, ``n_raters`` who
    graded anything, ``n_items`` with a grade, ``n_items_paired`` with ≥ 2 grades, ``n_pairs``),
    ``observed_agreement`` (share of pairs with equal grades), ``cohen`` (overall ``unweighted``,
    ``linear``, ``quadratic``, ``binary`` — each ``{kappa, band, ci_low, ci_high, n_undefined}`` — and the
    ``bootstrap`` settings; one set of item resamples serves all four), ``fleiss`` (over the items with
    the modal number of grades), ``krippendorff`` (``nominal``/``ordinal``/``interval`` over every
    graded judgement, value domain = labels), ``pairs`` (one entry per rater pair with its kappas,
    unweighted interval and confusion), ``pair_matrix`` (raters × raters unweighted kappa and item
    counts, ``None`` on the diagonal and for pairs with nothing in common), ``topics`` (per topic, worst
    unweighted kappa first, undefined last, with the unweighted interval), ``confusion`` (overall, rows =
    the rater whose key sorts first) and ``confusion_binary``.
    """
    _check_bootstrap(n_bootstrap, alpha)
    data = rating_data(records, labels=labels)
    lab = data.labels
    k = lab.size
    w = {
        "unweighted": weight_matrix(k, None),
        "linear": weight_matrix(k, "linear"),
        "quadratic": weight_matrix(k, "quadratic"),
    }
    w2 = weight_matrix(2, None)

    def kappas_of(confs: np.ndarray) -> dict[str, np.ndarray]:
        out = {name: _kappa_batch(confs, wm) for name, wm in w.items()}
        out["binary"] = _kappa_batch(binarise_confusion(confs, labels=lab, level=relevance_level), w2)
        return out

    def boot(
        select: np.ndarray | None, rng: np.random.Generator, *, all_kinds: bool = True
    ) -> dict[str, np.ndarray] | None:
        conf_items = data.item_confusions(select)
        if conf_items.shape[0] == 0:
            return None
        confs = _resampled_confusions(conf_items, n_bootstrap, rng)
        if all_kinds:
            return kappas_of(confs)
        return {"unweighted": _kappa_batch(confs, w["unweighted"])}

    def groups(keys: np.ndarray) -> dict[int, np.ndarray]:
        """Pair indices per group key, in one sort rather than one scan per group."""
        if keys.size == 0:
            return {}
        order = np.argsort(keys, kind="stable")
        uniq, starts = np.unique(keys[order], return_index=True)
        return dict(zip(uniq.tolist(), np.split(order, starts[1:]), strict=True))

    def iv(samples: dict[str, np.ndarray] | None, name: str) -> Interval:
        if samples is None:
            return Interval(None, None, n_bootstrap, n_bootstrap, alpha, seed)
        return _interval(samples[name], alpha=alpha, n=n_bootstrap, seed=seed)

    def fig(value: float | np.ndarray) -> float | None:
        return _to_optional(float(value))

    overall_conf = _confusion_from_positions(data.pair_a, data.pair_b, k)
    point = kappas_of(overall_conf)
    samples = boot(None, np.random.default_rng(seed))
    cohen: dict[str, Any] = {}
    for name in _KAPPA_KINDS:
        kappa = fig(point[name])
        interval = iv(samples, name)
        cohen[name] = {
            "kappa": kappa,
            "band": landis_koch_band(kappa),
            "ci_low": interval.low,
            "ci_high": interval.high,
            "n_undefined": interval.n_undefined,
        }
    cohen["binary"]["level"] = relevance_level
    cohen["bootstrap"] = {"n": n_bootstrap, "seed": seed, "alpha": alpha, "unit": "item"}

    # Per rater pair.
    n_r = len(data.raters)
    pair_group = data.pair_rater_a * n_r + data.pair_rater_b
    pair_confs = _grouped_confusions(data, pair_group, n_r * n_r)
    pair_kappas = kappas_of(pair_confs)
    pairs: list[dict[str, Any]] = []
    matrix: list[list[float | None]] = [[None] * n_r for _ in range(n_r)]
    matrix_n: list[list[int]] = [[0] * n_r for _ in range(n_r)]
    for g, select in groups(pair_group).items():
        ra, rb = divmod(g, n_r)
        samples_g = boot(select, np.random.default_rng([seed, 1, g]), all_kinds=False)
        interval = iv(samples_g, "unweighted")
        entry: dict[str, Any] = {
            "rater_a": _json_key(data.raters[ra]),
            "rater_b": _json_key(data.raters[rb]),
            "n_items": int(pair_confs[g].sum()),
        }
        entry.update({name: fig(pair_kappas[name][g]) for name in _KAPPA_KINDS})
        entry.update({"ci_low": interval.low, "ci_high": interval.high})
        entry["confusion"] = pair_confs[g].tolist()
        pairs.append(entry)
        matrix[ra][rb] = matrix[rb][ra] = entry["unweighted"]
        matrix_n[ra][rb] = matrix_n[rb][ra] = entry["n_items"]

    # Per topic.
    n_t = len(data.topics)
    pair_topic = data.item_topic[data.pair_item]
    topic_confs = _grouped_confusions(data, pair_topic, n_t)
    topic_kappas = kappas_of(topic_confs)
    topic_items = np.bincount(data.item_topic[np.unique(data.pair_item)], minlength=n_t)
    topics: list[dict[str, Any]] = []
    topic_pairs = groups(pair_topic)
    for t in range(n_t):
        select_t = topic_pairs.get(t)
        samples_t = (
            None if select_t is None else boot(select_t, np.random.default_rng([seed, 2, t]), all_kinds=False)
        )
        interval = iv(samples_t, "unweighted")
        entry = {"topic": _json_key(data.topics[t]), "n_items": int(topic_items[t])}
        entry["n_pairs"] = int(topic_confs[t].sum())
        entry.update({name: fig(topic_kappas[name][t]) for name in _KAPPA_KINDS})
        entry.update({"ci_low": interval.low, "ci_high": interval.high})
        topics.append(entry)
    topics.sort(key=lambda e: (e["unweighted"] is None, e["unweighted"] or 0.0))

    ft = _fleiss_table(data)
    fleiss = {
        "kappa": fleiss_kappa(ft.table) if ft.n_ratings else None,
        "n_items": len(ft.items),
        "ratings_per_item": ft.n_ratings or None,
        "n_items_dropped": ft.n_dropped,
    }
    # Krippendorff's ordinal and interval levels order the grades by value, whatever the order of labels.
    by_value = np.argsort(lab, kind="stable")
    values = lab[by_value].astype(np.float64).tolist()
    kripp = {
        level: krippendorff_alpha_from_counts(data.item_counts[:, by_value], values=values, level=level)
        for level in ("nominal", "ordinal", "interval")
    }

    n_pairs = data.n_pairs
    return {
        "labels": lab.tolist(),
        "relevance_level": relevance_level,
        "n_judgements": data.n_judgements,
        "n_unrateable": data.n_unrateable,
        "n_raters": len(data.graded_raters),
        "n_items": int((data.item_counts.sum(axis=1) >= 1).sum()),
        "n_items_paired": int((data.item_counts.sum(axis=1) >= 2).sum()),
        "n_pairs": n_pairs,
        "observed_agreement": float(np.trace(overall_conf) / n_pairs) if n_pairs else None,
        "cohen": cohen,
        "fleiss": fleiss,
        "krippendorff": kripp,
        "pairs": pairs,
        "pair_matrix": {
            "raters": [_json_key(r) for r in data.raters],
            "unweighted": matrix,
            "n_items": matrix_n,
        },
        "topics": topics,
        "confusion": overall_conf.tolist(),
        "confusion_binary": binarise_confusion(overall_conf, labels=lab, level=relevance_level).tolist(),
    }


def _fmt(x: float) -> str:
    return f"{x:.2f}".replace("-", "−")


def noise_floor_sentence(summary: dict[str, Any]) -> str:
    """One plain sentence on what the overall unweighted Cohen's kappa of ``summary`` (from
    :func:`agreement_summary`) means for the noise floor of metrics computed on these labels."""
    cohen = summary["cohen"]["unweighted"]
    kappa = cohen["kappa"]
    n_items = summary["n_items_paired"]
    n_pairs = summary["n_pairs"]
    if kappa is None:
        if n_pairs == 0:
            return (
                "Agreement is undefined: no item was graded by two raters, so the label noise of these "
                "qrels is unknown and no noise floor can be stated for metrics built on them."
            )
        return (
            f"Agreement is undefined: all {n_pairs} paired judgements fall on one and the same grade, so "
            "chance agreement is total and the label noise of these qrels cannot be estimated."
        )
    band = cohen["band"]
    ci = ""
    if cohen["ci_low"] is not None:
        ci = f", 95% CI {_fmt(cohen['ci_low'])}–{_fmt(cohen['ci_high'])}"
    disagree = 1.0 - summary["observed_agreement"]
    size = f"{n_items} item{'s' if n_items != 1 else ''} judged twice or more"
    head = f"Raters agree at κ={_fmt(kappa)} ({band}{ci}; {size})"
    if kappa > 0.8:
        return (
            f"{head} and give different grades on {disagree:.0%} of paired judgements: the labels are "
            "reliable, though differences between runs as small as the effect of relabelling that share "
            "of documents are still within the noise floor of metrics built on them."
        )
    if kappa > 0.4:
        return (
            f"{head} but give different grades on {disagree:.0%} of paired judgements: differences between "
            "runs smaller than the effect of relabelling that share of documents are within the label "
            "noise of metrics built on these labels and should not be trusted."
        )
    return (
        f"{head} and give different grades on {disagree:.0%} of paired judgements: the labels are too "
        "noisy for small differences between runs to mean anything — fix the rubric or adjudicate before "
        "trusting metrics built on them."
    )

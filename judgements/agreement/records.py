"""Records of judgements as arrays (`RatingData`) and the kappas over them: overall, per rater pair,
per topic."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgements.agreement.kappa import (
    Weights,
    _check_labels,
    _check_weights,
    _confusion_from_positions,
    _kappa_batch,
    _to_optional,
    kappa_from_confusion,
    weight_matrix,
)

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

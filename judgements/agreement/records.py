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


@dataclass(frozen=True, eq=False)
class Records:
    """Judgement records ``(item, topic, rater, grade)`` as columns: ``item``, ``topic`` and ``rater`` index
    the sorted keys ``items``, ``topics`` and ``raters`` (``_sorted_keys``; each key occurs), ``grade`` is
    the grade (0 where ``unrateable``). What a pool's judgements are read into (``of_columns``: a few
    bytes a judgement, where a tuple of four objects was about 300); iterating gives the records back, in
    order of their columns."""

    item: np.ndarray
    topic: np.ndarray
    rater: np.ndarray
    grade: np.ndarray
    unrateable: np.ndarray
    items: list[Hashable]
    topics: list[Hashable]
    raters: list[Hashable]

    @classmethod
    def of_columns(
        cls, item: Iterable[Hashable], topic: Iterable[Hashable], rater: Iterable[Hashable],
        grade: np.ndarray, unrateable: np.ndarray,
    ) -> Records:  # fmt: skip
        """Records from one column of keys (of any hashable kind) per field; grades as int64."""
        return cls.of_codes(first_seen(item), first_seen(topic), first_seen(rater), grade, unrateable)

    @classmethod
    def of_codes(
        cls, item: Coded, topic: Coded, rater: Coded, grade: np.ndarray, unrateable: np.ndarray
    ) -> Records:
        """Records from each key column as `Coded`: codes into its distinct keys in the order first seen."""
        (item_codes, items), (topic_codes, topics), (rater_codes, raters) = map(
            _sorted_codes, (item, topic, rater)
        )
        return cls(item_codes, topic_codes, rater_codes, np.asarray(grade, dtype=np.int64),
                   np.asarray(unrateable, dtype=bool), items, topics, raters)  # fmt: skip

    def __len__(self) -> int:
        return int(self.item.size)

    def __iter__(self) -> Any:
        for i, t, r, g, u in zip(
            self.item.tolist(), self.topic.tolist(), self.rater.tolist(), self.grade.tolist(),
            self.unrateable.tolist(), strict=True,
        ):  # fmt: skip
            yield (self.items[i], self.topics[t], self.raters[r], None if u else g)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Records) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # (equal by value, and mutable arrays)


#: A column of keys as codes (int64) into its distinct keys, listed in the order they were first seen.
Coded = tuple[np.ndarray, list[Hashable]]


def first_seen(keys: Iterable[Hashable]) -> Coded:
    """A column of keys as `Coded`."""
    first: dict[Hashable, int] = {}
    codes = np.fromiter((first.setdefault(key, len(first)) for key in keys), dtype=np.int64)
    return codes, list(first)


def _sorted_codes(coded: Coded) -> Coded:
    """`Coded` with its keys sorted (`_sorted_keys`) and the codes following them."""
    codes, keys = coded
    ordered = _sorted_keys(keys)
    where = {key: n for n, key in enumerate(keys)}
    rank = np.empty(len(keys), dtype=np.int64)
    rank[[where[key] for key in ordered]] = np.arange(len(keys), dtype=np.int64)
    return (rank[codes] if codes.size else codes.astype(np.int64)), ordered


def _records_of(records: Iterable[Sequence[Any]]) -> Records:
    """`Records` of an iterable of ``(item, topic, rater, grade)``; ValueError for a grade that is not an
    int or None."""
    items: list[Hashable] = []
    topics: list[Hashable] = []
    raters: list[Hashable] = []
    grades: list[int] = []
    unrateable: list[bool] = []
    for rec in records:
        item, topic, rater, grade = rec
        if grade is not None and (isinstance(grade, bool) or not isinstance(grade, int | np.integer)):
            raise ValueError(f"grade {grade!r} of rater {rater!r} on item {item!r} is not an int or None")
        items.append(item)
        topics.append(topic)
        raters.append(rater)
        grades.append(0 if grade is None else int(grade))
        unrateable.append(grade is None)
    return Records.of_columns(
        items, topics, raters, np.asarray(grades, dtype=np.int64), np.asarray(unrateable)
    )


def rating_data(records: Iterable[Sequence[Any]] | Records, *, labels: Sequence[int]) -> RatingData:
    """Index judgement records ``(item, topic, rater, grade)`` (any iterable of them, or `Records`); see
    the module docstring for the rules. In array operations throughout: the memory is the records'
    columns and the pairs', whatever the keys are.

    ValueError for a grade outside ``labels`` (or not an int), one rater judging an item twice, or one
    item given two different topics.
    """
    lab = _check_labels(labels)
    data = records if isinstance(records, Records) else _records_of(records)
    k = lab.size
    n_items = len(data.items)
    item, rater = data.item, data.rater

    # one topic per item: the first record of an item (in the records' order) gives it
    by_item = np.argsort(item, kind="stable")
    if by_item.size:
        sorted_item, sorted_topic = item[by_item], data.topic[by_item]
        starts = np.flatnonzero(np.r_[True, sorted_item[1:] != sorted_item[:-1]])
        known = np.repeat(sorted_topic[starts], np.diff(np.r_[starts, sorted_item.size]))
        if (other := np.flatnonzero(sorted_topic != known)).size:
            at = by_item[other[0]]
            first = data.topics[int(known[other[0]])]
            raise ValueError(
                f"item {data.items[int(item[at])]!r} is given two topics: {first!r} and "
                f"{data.topics[int(data.topic[at])]!r}"
            )
        item_topic = sorted_topic[starts]
    else:
        item_topic = np.empty(0, dtype=np.int64)
    # one judgement per rater and item
    by_pair = np.lexsort((rater, item))
    g_item, g_rater = item[by_pair], rater[by_pair]
    twice = np.flatnonzero((g_item[1:] == g_item[:-1]) & (g_rater[1:] == g_rater[:-1]))
    if twice.size:
        at = by_pair[twice[0]]
        raise ValueError(
            f"rater {data.raters[int(rater[at])]!r} judged item {data.items[int(item[at])]!r} twice; "
            "pass only the latest revision"
        )
    # the grades' positions among the labels
    graded = ~data.unrateable
    order = np.argsort(lab, kind="stable")
    grade = data.grade
    found = np.minimum(np.searchsorted(lab[order], grade), k - 1)
    position = order[found]
    if (bad := np.flatnonzero(graded & (lab[position] != grade))).size:
        at = bad[0]
        raise ValueError(
            f"grade {int(grade[at])!r} of rater {data.raters[int(rater[at])]!r} on item "
            f"{data.items[int(item[at])]!r} is not in labels {lab.tolist()}"
        )

    g_pos = position[by_pair]
    keep = graded[by_pair]
    g_item, g_rater, g_pos = g_item[keep], g_rater[keep], g_pos[keep]
    item_counts = np.bincount(g_item * k + g_pos, minlength=n_items * k).reshape(n_items, k).astype(np.int64)
    # every pair (x, y) of an item's graded judgements, x before y in rater order, by item then x then y
    pairs_x, pairs_y = _pairs_within(g_item)
    return RatingData(
        labels=lab,
        items=data.items,
        topics=data.topics,
        raters=data.raters,
        item_topic=item_topic.astype(np.int64),
        item_counts=item_counts,
        pair_item=g_item[pairs_x],
        pair_rater_a=g_rater[pairs_x],
        pair_rater_b=g_rater[pairs_y],
        pair_a=g_pos[pairs_x],
        pair_b=g_pos[pairs_y],
        n_judgements=len(data),
        n_unrateable=int(data.unrateable.sum()),
        graded_raters=frozenset(np.unique(g_rater).tolist()),
    )


def _pairs_within(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a sorted array of group codes: the index pairs (x, y), x < y, of every two elements of a group,
    ordered by x then y."""
    if group.size == 0:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, group.size])
    end = np.repeat(starts + sizes, sizes)  # each element's group end
    xs, ys = [], []
    index = np.arange(group.size, dtype=np.int64)
    for offset in range(1, int(sizes.max())):
        x = index[index + offset < end]
        xs.append(x)
        ys.append(x + offset)
    if not xs:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty
    x, y = np.concatenate(xs), np.concatenate(ys)
    order = np.lexsort((y, x))
    return x[order], y[order]


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

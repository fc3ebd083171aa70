"""Property tests: agreement statistics equal the reference libraries on random data.

References: sklearn.metrics.cohen_kappa_score / confusion_matrix, statsmodels' fleiss_kappa and the
krippendorff package. Where a reference is undefined (NaN, or a ValueError for lack of pairable data) ours
must be ``None``.
"""

from __future__ import annotations

import itertools
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion_matrix
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from judgements.agreement import (
    binary_kappa,
    bootstrap_interval,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    fleiss_table,
    krippendorff_alpha,
    overall_kappa,
    pairwise_kappas,
    rating_data,
)
from judgements.agreement.kappa import _distinct_rows
from judgements.agreement.records import Records

TOL = 1e-9


def assert_same(ours: float | None, ref: float) -> None:
    if ours is None:
        assert np.isnan(ref), f"ours is undefined, reference gives {ref}"
    else:
        assert not np.isnan(ref), f"reference is undefined, ours gives {ours}"
        assert ours == pytest.approx(ref, abs=TOL)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@st.composite
def label_sets(draw) -> list[int]:
    labels = draw(st.lists(st.integers(-3, 12), min_size=2, max_size=6, unique=True))
    return labels if draw(st.booleans()) else sorted(labels)


@st.composite
def paired_grades(draw, min_size: int = 1) -> tuple[list[int], list[int], list[int]]:
    labels = draw(label_sets())
    n = draw(st.integers(min_size, 60))
    # Draw from a random subset so that some labels go unused (the full-label-set case matters).
    used = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=len(labels), unique=True))
    a = draw(st.lists(st.sampled_from(used), min_size=n, max_size=n))
    b = draw(st.lists(st.sampled_from(used), min_size=n, max_size=n))
    return labels, a, b


@settings(max_examples=200, deadline=None)
@given(paired_grades(), st.sampled_from([None, "linear", "quadratic"]))
def test_it_equals_sklearn_cohen_kappa(case, weights):
    labels, a, b = case
    ref = quiet(cohen_kappa_score, a, b, labels=labels, weights=weights)
    assert_same(cohen_kappa(a, b, labels=labels, weights=weights), ref)
    assert_same(cohen_kappa(np.asarray(a), np.asarray(b), labels=labels, weights=weights), ref)


@settings(max_examples=100, deadline=None)
@given(paired_grades(), st.sampled_from([None, "linear", "quadratic"]))
def test_it_is_symmetric_in_the_two_raters(case, weights):
    labels, a, b = case
    ab = cohen_kappa(a, b, labels=labels, weights=weights)
    ba = cohen_kappa(b, a, labels=labels, weights=weights)
    assert (ab is None and ba is None) or ab == pytest.approx(ba, abs=TOL)
    assert ab is None or ab <= 1.0 + TOL


@settings(max_examples=100, deadline=None)
@given(paired_grades())
def test_it_equals_sklearn_confusion_matrix(case):
    labels, a, b = case
    ours = confusion_matrix(a, b, labels=labels)
    assert ours.tolist() == sk_confusion_matrix(a, b, labels=labels).tolist()


@settings(max_examples=100, deadline=None)
@given(paired_grades(), st.integers(-2, 12))
def test_it_equals_sklearn_on_binarised_grades(case, level):
    labels, a, b = case
    ref = quiet(
        cohen_kappa_score,
        (np.asarray(a) >= level).astype(int),
        (np.asarray(b) >= level).astype(int),
        labels=[0, 1],
    )
    assert_same(binary_kappa(a, b, level=level, labels=labels), ref)


@settings(max_examples=50, deadline=None)
@given(paired_grades(min_size=2), st.sampled_from([None, "linear", "quadratic"]), st.integers(0, 2**32 - 1))
def test_it_gives_an_ordered_interval_reproducibly(case, weights, seed):
    labels, a, b = case
    one = bootstrap_interval(a, b, labels=labels, weights=weights, n=200, seed=seed)
    assert one == bootstrap_interval(a, b, labels=labels, weights=weights, n=200, seed=seed)
    if one.low is None:
        assert one.high is None and one.n_undefined == 200
    else:
        assert -1.0 - TOL <= one.low <= one.high <= 1.0 + TOL


@st.composite
def fleiss_tables(draw) -> np.ndarray:
    n_items = draw(st.integers(1, 25))
    n_cat = draw(st.integers(2, 6))
    n_raters = draw(st.integers(2, 10))
    used = draw(st.lists(st.integers(0, n_cat - 1), min_size=1, max_size=n_cat, unique=True))
    rows = []
    for _ in range(n_items):
        ratings = draw(st.lists(st.sampled_from(used), min_size=n_raters, max_size=n_raters))
        rows.append(np.bincount(ratings, minlength=n_cat))
    return np.asarray(rows)


@settings(max_examples=200, deadline=None)
@given(fleiss_tables())
def test_it_equals_statsmodels_fleiss_kappa(table):
    assert_same(fleiss_kappa(table), quiet(sm_fleiss_kappa, table))


@st.composite
def reliability_matrices(draw) -> tuple[np.ndarray, list[int]]:
    domain = sorted(draw(st.lists(st.integers(-2, 9), min_size=2, max_size=6, unique=True)))
    coders = draw(st.integers(2, 6))
    units = draw(st.integers(1, 25))
    used = draw(st.lists(st.sampled_from(domain), min_size=1, max_size=len(domain), unique=True))
    cell = st.one_of(st.none(), st.sampled_from(used))
    rows = [draw(st.lists(cell, min_size=units, max_size=units)) for _ in range(coders)]
    matrix = np.asarray([[np.nan if v is None else float(v) for v in row] for row in rows])
    return matrix, domain


@settings(max_examples=200, deadline=None)
@given(reliability_matrices(), st.sampled_from(["nominal", "ordinal", "interval"]))
def test_it_equals_the_krippendorff_package(case, level):
    matrix, domain = case
    try:
        ref = quiet(
            krippendorff.alpha, reliability_data=matrix, level_of_measurement=level, value_domain=domain
        )
    except ValueError as exc:  # the package refuses data with nothing pairable
        assert "at least one unit" in str(exc)
        ref = float("nan")
    assert_same(krippendorff_alpha(matrix, level=level, value_domain=domain), ref)
    assert_same(krippendorff_alpha(matrix, level=level), ref)


@st.composite
def campaigns(draw) -> tuple[list[tuple[int, str, str, int | None]], list[int]]:
    labels = sorted(draw(st.lists(st.integers(0, 6), min_size=2, max_size=5, unique=True)))
    raters = ["ann", "ben", "cat", "dan"][: draw(st.integers(2, 4))]
    n_items = draw(st.integers(1, 30))
    grade = st.one_of(st.just("-"), st.none(), st.sampled_from(labels))
    records = []
    for item in range(n_items):
        for rater in raters:
            g = draw(grade)
            if g != "-":
                records.append((item, f"t{item % 3}", rater, g))
    return records, labels


@settings(max_examples=100, deadline=None)
@given(campaigns(), st.sampled_from([None, "linear", "quadratic"]))
def test_it_pools_every_pair_of_raters_on_an_item(case, weights):
    records, labels = case
    by_item: dict[int, dict[str, int]] = {}
    for item, _, rater, g in records:
        if g is not None:
            by_item.setdefault(item, {})[rater] = g
    a, b = [], []
    pairs: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    for grades in by_item.values():
        for r1, r2 in itertools.combinations(sorted(grades), 2):
            a.append(grades[r1])
            b.append(grades[r2])
            pa, pb = pairs.setdefault((r1, r2), ([], []))
            pa.append(grades[r1])
            pb.append(grades[r2])
    if a:
        ref = quiet(cohen_kappa_score, a, b, labels=labels, weights=weights)
        assert_same(overall_kappa(records, labels=labels, weights=weights), ref)
    else:
        assert overall_kappa(records, labels=labels, weights=weights) is None
    ours = pairwise_kappas(records, labels=labels, weights=weights)
    assert set(ours) == set(pairs)
    for key, (pa, pb) in pairs.items():
        assert ours[key].n_items == len(pa)
        assert_same(ours[key].kappa, quiet(cohen_kappa_score, pa, pb, labels=labels, weights=weights))


@settings(max_examples=100, deadline=None)
@given(campaigns())
def test_it_builds_fleiss_tables_from_records_like_statsmodels(case):
    records, labels = case
    ft = fleiss_table(records, labels=labels)
    if ft.n_ratings:
        assert (ft.table.sum(axis=1) == ft.n_ratings).all()
        assert_same(fleiss_kappa(ft.table), quiet(sm_fleiss_kappa, ft.table))
    graded_items = {r[0] for r in records if r[3] is not None}
    assert len(ft.items) + ft.n_dropped == len(graded_items)


@settings(max_examples=100, deadline=None)
@given(campaigns(), st.randoms(use_true_random=False))
def test_it_indexes_records_in_any_order_as_the_plain_reading_of_them(case, rnd):
    """`rating_data` works in array operations; here its indexes and pairs against the plain reading of
    the records (sorted keys, every two graded raters of an item in rater order), the records shuffled."""
    records, labels = case
    rnd.shuffle(records)
    data = rating_data(records, labels=labels)
    for shaped in (data, rating_data(_columns(records),
                                     labels=labels)):  # fmt: skip
        items = sorted({r[0] for r in records})
        raters = sorted({r[2] for r in records})
        assert (shaped.items, shaped.raters) == (items, raters)
        assert shaped.topics == sorted({r[1] for r in records})
        position = {g: n for n, g in enumerate(labels)}
        graded = {(r[0], r[2]): r[3] for r in records if r[3] is not None}
        pairs = [
            (
                items.index(i),
                raters.index(x),
                raters.index(y),
                position[graded[(i, x)]],
                position[graded[(i, y)]],
            )
            for i in items
            for x, y in itertools.combinations([r for r in raters if (i, r) in graded], 2)
        ]
        got = zip(shaped.pair_item.tolist(), shaped.pair_rater_a.tolist(), shaped.pair_rater_b.tolist(),
                  shaped.pair_a.tolist(), shaped.pair_b.tolist(), strict=True)  # fmt: skip
        assert list(got) == pairs
        counts = np.zeros((len(items), len(labels)), dtype=np.int64)
        for (i, _), g in graded.items():
            counts[items.index(i), position[g]] += 1
        assert (shaped.item_counts == counts).all()
        assert shaped.item_topic.tolist() == [shaped.topics.index(f"t{i % 3}") for i in items]
        assert shaped.n_unrateable == sum(r[3] is None for r in records) and shaped.n_judgements == len(
            records
        )
        assert shaped.graded_raters == frozenset(raters.index(r) for _, r in graded)
    assert list(_columns(records)) == records


def _columns(records) -> Records:
    """The records as `Records` of their columns."""
    item, topic, rater = ([r[n] for r in records] for n in range(3))
    return Records.of_columns(item, topic, rater, *_grades(records))


def _grades(records) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([0 if r[3] is None else r[3] for r in records], dtype=np.int64),
            np.array([r[3] is None for r in records], dtype=bool))  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 40),
    st.sampled_from([1, 4, 9, 16, 25]),
    st.sampled_from([1, 2, 5, 60, 2**40]),
    st.randoms(use_true_random=False),
)
def test_it_finds_the_distinct_confusion_patterns_as_numpy_unique_does(rows, cells, most, rnd):
    """The bootstrap's distinct item patterns: the rows and counts of `np.unique(axis=0)`, in its order
    (the multinomial draws follow it), whether the rows fit one integer each or not."""
    matrix = np.array([[rnd.randint(0, most) for _ in range(cells)] for _ in range(rows)], dtype=np.int64)
    matrix = matrix[[rnd.randrange(rows) for _ in range(rows)]]  # repeated rows, as items share patterns
    patterns, counts = _distinct_rows(matrix)
    expected, expected_counts = np.unique(matrix, axis=0, return_counts=True)
    assert patterns.tolist() == expected.tolist() and counts.tolist() == expected_counts.tolist()

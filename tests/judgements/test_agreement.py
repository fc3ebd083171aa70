"""Agreement statistics: published test vectors, edge cases, records, summary (pure, no database)."""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from judgements.agreement import (
    Record,
    agreement_summary,
    binarise_confusion,
    binary_kappa,
    bootstrap_interval,
    cohen_kappa,
    confusion_matrix,
    fleiss_kappa,
    fleiss_table,
    kappa_from_confusion,
    krippendorff_alpha,
    landis_koch_band,
    noise_floor_sentence,
    overall_kappa,
    pairwise_kappas,
    per_topic_kappa,
    rating_data,
    summary_body,
    weight_matrix,
)

GRADES = [0, 1, 2, 3]
Y1 = [0, 1, 2, 3, 0, 1, 2, 3, 2, 1, 0, 3]
Y2 = [0, 2, 2, 3, 1, 1, 3, 3, 1, 1, 0, 2]
A = [0, 1, 3, 3, 1, 0]
B = [0, 3, 3, 1, 1, 0]
NAN = np.nan
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]
# Wikipedia, "Fleiss' kappa", worked example: 10 subjects, 14 raters, 5 categories.
FLEISS_WIKIPEDIA = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def make_two_by_two(*, yes_yes: int, yes_no: int, no_yes: int, no_no: int) -> tuple[list[int], list[int]]:
    a = [1] * yes_yes + [1] * yes_no + [0] * no_yes + [0] * no_no
    b = [1] * yes_yes + [0] * yes_no + [1] * no_yes + [0] * no_no
    return a, b


def make_records(
    grades: dict[str, list[int | None]], *, topic_of=lambda item: f"t{item // 4}"
) -> list[Record]:
    """Records from {rater: grades per item index}; a missing item is written as the string "-"."""
    out = []
    for rater, row in grades.items():
        for item, grade in enumerate(row):
            if grade == "-":
                continue
            out.append(Record(item, topic_of(item), rater, grade))
    return out


# ------------------------------------------------------------------------------------------- test vectors


def test_it_gives_kappa_0_4_on_the_spec_two_by_two_table():
    a, b = make_two_by_two(yes_yes=20, yes_no=5, no_yes=10, no_no=15)
    assert cohen_kappa(a, b, labels=[0, 1]) == pytest.approx(0.4, abs=1e-12)
    assert cohen_kappa_score(a, b, labels=[0, 1]) == pytest.approx(0.4, abs=1e-12)
    assert confusion_matrix(a, b, labels=[0, 1]).tolist() == [[15, 10], [5, 20]]


@pytest.mark.parametrize(
    ("weights", "expected"), [(None, 0.444444), ("linear", 0.655172), ("quadratic", 0.821429)]
)
def test_it_matches_the_spec_y1_y2_vectors(weights, expected):
    ours = cohen_kappa(Y1, Y2, labels=GRADES, weights=weights)
    assert round(ours, 6) == expected
    assert ours == pytest.approx(cohen_kappa_score(Y1, Y2, labels=GRADES, weights=weights), abs=1e-12)


def test_it_uses_the_full_label_set_not_the_labels_that_occur():
    assert cohen_kappa(A, B, labels=GRADES, weights="linear") == pytest.approx(0.5, abs=1e-12)
    # The classic mistake: sklearn without labels= infers {0, 1, 3} and weights 3 as 2.
    assert cohen_kappa_score(A, B, weights="linear") == pytest.approx(0.625, abs=1e-12)
    assert cohen_kappa(A, B, labels=[0, 1, 3], weights="linear") == pytest.approx(0.625, abs=1e-12)


def test_it_matches_the_wikipedia_fleiss_example():
    assert np.asarray(FLEISS_WIKIPEDIA).sum(axis=1).tolist() == [14] * 10
    assert round(fleiss_kappa(FLEISS_WIKIPEDIA), 5) == 0.20993
    assert fleiss_kappa(FLEISS_WIKIPEDIA) == pytest.approx(sm_fleiss_kappa(np.asarray(FLEISS_WIKIPEDIA)))


@pytest.mark.parametrize(
    ("level", "expected"), [("nominal", 0.7434), ("ordinal", 0.8154), ("interval", 0.8491)]
)
def test_it_matches_krippendorff_2011(level, expected):
    ours = krippendorff_alpha(KRIPPENDORFF_2011, level=level, value_domain=[1, 2, 3, 4, 5])
    assert round(ours, 4) == expected
    ref = krippendorff.alpha(
        reliability_data=KRIPPENDORFF_2011, level_of_measurement=level, value_domain=[1, 2, 3, 4, 5]
    )
    assert ours == pytest.approx(ref, abs=1e-12)


def test_it_gives_the_same_alpha_with_unused_values_in_the_domain():
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(
            KRIPPENDORFF_2011, level=level, value_domain=[0, 1, 2, 3, 4, 5, 6]
        ) == pytest.approx(krippendorff_alpha(KRIPPENDORFF_2011, level=level), abs=1e-12)


# ---------------------------------------------------------------------------------------------- kappa


def test_it_returns_none_when_every_judgement_is_the_same_label():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(cohen_kappa_score([2, 2, 2], [2, 2, 2], labels=GRADES))
    for weights in (None, "linear", "quadratic"):
        assert cohen_kappa([2, 2, 2], [2, 2, 2], labels=GRADES, weights=weights) is None


def test_it_returns_none_for_no_pairs():
    assert cohen_kappa([], [], labels=GRADES) is None
    assert kappa_from_confusion(np.zeros((4, 4))) is None


def test_it_gives_zero_when_raters_each_use_one_different_label():
    assert cohen_kappa([1, 1, 1], [2, 2, 2], labels=GRADES) == 0.0


def test_it_gives_one_for_perfect_agreement_on_several_labels():
    assert cohen_kappa([0, 3, 1], [0, 3, 1], labels=GRADES, weights="quadratic") == 1.0


def test_it_rejects_grades_outside_the_label_set():
    with pytest.raises(ValueError, match=r"not in labels .*\[4\]"):
        cohen_kappa([0, 4], [0, 1], labels=GRADES)
    with pytest.raises(ValueError, match="not in labels"):
        cohen_kappa([0, 2], [0, 1], labels=[0, 1, 3])
    with pytest.raises(ValueError, match="None"):
        cohen_kappa([0, None], [0, 1], labels=GRADES)
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa([0, 1], [0], labels=GRADES)


def test_it_rejects_bad_labels_and_weights():
    with pytest.raises(ValueError, match="distinct"):
        cohen_kappa([0], [0], labels=[0, 0, 1])
    with pytest.raises(ValueError, match="non-empty"):
        cohen_kappa([0], [0], labels=[])
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([0], [0], labels=GRADES, weights="cubic")


def test_it_weights_by_position_in_labels_like_sklearn():
    labels = [0, 1, 2, 5]
    a, b = [0, 5, 2, 1, 5], [1, 2, 5, 1, 0]
    assert cohen_kappa(a, b, labels=labels, weights="linear") == pytest.approx(
        cohen_kappa_score(a, b, labels=labels, weights="linear"), abs=1e-12
    )
    assert weight_matrix(3, "quadratic").tolist() == [[0, 1, 4], [1, 0, 1], [4, 1, 0]]


def test_it_computes_binary_kappa_at_the_relevance_level():
    a, b = np.asarray(Y1), np.asarray(Y2)
    expected = cohen_kappa_score(a >= 2, b >= 2)
    assert binary_kappa(Y1, Y2, level=2) == pytest.approx(expected, abs=1e-12)
    conf = confusion_matrix(Y1, Y2, labels=GRADES)
    assert kappa_from_confusion(binarise_confusion(conf, labels=GRADES, level=2)) == pytest.approx(expected)
    with pytest.raises(ValueError, match="not in labels"):
        binary_kappa([0, 7], [0, 1], level=2, labels=GRADES)


def test_it_builds_the_confusion_over_the_full_label_set():
    conf = confusion_matrix([0, 0, 3], [0, 3, 3], labels=GRADES)
    assert conf.shape == (4, 4)
    assert conf[0, 0] == 1 and conf[0, 3] == 1 and conf[3, 3] == 1 and conf.sum() == 3


# ------------------------------------------------------------------------------------------- bootstrap


def test_it_gives_a_reproducible_bootstrap_interval_around_the_estimate():
    first = bootstrap_interval(Y1 * 5, Y2 * 5, labels=GRADES, n=500, seed=3)
    again = bootstrap_interval(Y1 * 5, Y2 * 5, labels=GRADES, n=500, seed=3)
    other = bootstrap_interval(Y1 * 5, Y2 * 5, labels=GRADES, n=500, seed=4)
    assert first == again
    assert first != other
    kappa = cohen_kappa(Y1 * 5, Y2 * 5, labels=GRADES)
    assert first.low < kappa < first.high
    assert first.n == 500 and first.n_undefined == 0


def test_it_bootstraps_like_naive_resampling_of_items():
    rng = np.random.default_rng(11)
    a = rng.integers(0, 4, 300)
    b = np.where(rng.random(300) < 0.5, a, rng.integers(0, 4, 300))
    ours = bootstrap_interval(a, b, labels=GRADES, weights="linear", n=4000, seed=1)
    naive = []
    for _ in range(4000):
        idx = rng.integers(0, 300, 300)
        # Our kappa is checked against sklearn elsewhere; here the resampling is under test.
        naive.append(cohen_kappa(a[idx], b[idx], labels=GRADES, weights="linear"))
    low, high = np.quantile(naive, [0.025, 0.975])
    assert ours.low == pytest.approx(low, abs=0.015)
    assert ours.high == pytest.approx(high, abs=0.015)


def test_it_resamples_whole_items_when_given_item_keys():
    # Two pairs per item, perfectly correlated within an item: item-level intervals are wider.
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, 100)
    b = np.where(rng.random(100) < 0.5, a, rng.integers(0, 4, 100))
    a2, b2 = np.repeat(a, 2), np.repeat(b, 2)
    items = np.repeat(np.arange(100), 2)
    by_pair = bootstrap_interval(a2, b2, labels=GRADES, n=2000, seed=0)
    by_item = bootstrap_interval(a2, b2, labels=GRADES, n=2000, seed=0, items=items)
    single = bootstrap_interval(a, b, labels=GRADES, n=2000, seed=0)
    assert by_item.high - by_item.low > 1.2 * (by_pair.high - by_pair.low)
    assert by_item.high - by_item.low == pytest.approx(single.high - single.low, rel=0.1)


def test_it_reports_an_undefined_interval_when_every_resample_is_undefined():
    iv = bootstrap_interval([1, 1], [1, 1], labels=GRADES, n=50)
    assert iv.low is None and iv.high is None and iv.n_undefined == 50
    assert bootstrap_interval([], [], labels=GRADES).low is None


def test_it_counts_undefined_resamples_and_leaves_them_out():
    iv = bootstrap_interval([0, 1, 1, 1], [0, 1, 1, 1], labels=GRADES, n=2000, seed=0)
    assert 0 < iv.n_undefined < 2000
    assert iv.low == 1.0 and iv.high == 1.0


# ---------------------------------------------------------------------------------------------- records


def test_it_builds_one_pair_per_unordered_pair_of_raters_on_an_item():
    records = [
        Record("d1", "t", "carol", 3),
        Record("d1", "t", "alice", 1),
        Record("d1", "t", "bob", 2),
        Record("d2", "t", "bob", 0),
        Record("d2", "t", "alice", None),
        Record("d3", "t", "alice", 2),
    ]
    data = rating_data(records, labels=GRADES)
    assert data.raters == ["alice", "bob", "carol"]
    assert data.n_pairs == 3
    # a is always the rater sorting first: (alice, bob), (alice, carol), (bob, carol).
    assert list(zip(data.pair_a.tolist(), data.pair_b.tolist(), strict=True)) == [(1, 2), (1, 3), (2, 3)]
    assert data.n_unrateable == 1 and data.n_judgements == 6
    expected = cohen_kappa_score([1, 1, 2], [2, 3, 3], labels=GRADES)
    assert overall_kappa(records, labels=GRADES) == pytest.approx(expected, abs=1e-12)


def test_it_rejects_duplicate_judgements_and_conflicting_topics():
    with pytest.raises(ValueError, match="twice"):
        rating_data([("d", "t", "a", 1), ("d", "t", "a", 2)], labels=GRADES)
    with pytest.raises(ValueError, match="two topics"):
        rating_data([("d", "t1", "a", 1), ("d", "t2", "b", 2)], labels=GRADES)
    with pytest.raises(ValueError, match="not in labels"):
        rating_data([("d", "t", "a", 9)], labels=GRADES)
    with pytest.raises(ValueError, match="not an int"):
        rating_data([("d", "t", "a", 1.5)], labels=GRADES)


def test_it_computes_pairwise_kappas_with_confusions():
    grades = {
        "alice": [0, 1, 2, 3, 0, 1, 2, 3],
        "bob": [0, 1, 2, 2, 1, 1, 3, 3],
        "carol": [0, "-", 2, 3, None, 1, 2, "-"],
    }
    records = make_records(grades)
    result = pairwise_kappas(records, labels=GRADES, weights="linear")
    assert set(result) == {("alice", "bob"), ("alice", "carol"), ("bob", "carol")}
    ab = result[("alice", "bob")]
    assert ab.n_items == 8
    assert ab.kappa == pytest.approx(
        cohen_kappa_score(grades["alice"], grades["bob"], labels=GRADES, weights="linear"), abs=1e-12
    )
    assert (ab.confusion == confusion_matrix(grades["alice"], grades["bob"], labels=GRADES)).all()
    ac = result[("alice", "carol")]
    assert ac.n_items == 5  # carol skipped two items and said unrateable on one
    assert ac.kappa == pytest.approx(
        cohen_kappa_score([0, 2, 3, 1, 2], [0, 2, 3, 1, 2], labels=GRADES, weights="linear")
    )


def test_it_sorts_topics_worst_first_with_undefined_last():
    records = [
        # t-good: perfect agreement on two labels
        ("g1", "t-good", "a", 0), ("g1", "t-good", "b", 0),
        ("g2", "t-good", "a", 3), ("g2", "t-good", "b", 3),
        # t-bad: systematic disagreement
        ("b1", "t-bad", "a", 0), ("b1", "t-bad", "b", 3),
        ("b2", "t-bad", "a", 3), ("b2", "t-bad", "b", 0),
        # t-flat: everybody says 2 — undefined
        ("f1", "t-flat", "a", 2), ("f1", "t-flat", "b", 2),
        # t-single: one judgement only — no pairs
        ("s1", "t-single", "a", 2),
    ]  # fmt: skip
    result = per_topic_kappa(records, labels=GRADES)
    assert [r.topic for r in result] == ["t-bad", "t-good", "t-flat", "t-single"]
    assert result[0].kappa == pytest.approx(-1.0)
    assert result[1].kappa == 1.0
    assert result[2].kappa is None and result[2].n_pairs == 1
    assert result[3].kappa is None and result[3].n_pairs == 0 and result[3].n_items == 0


def test_it_builds_the_fleiss_table_from_the_modal_number_of_ratings():
    records = [("i1", "t", r, 1) for r in "abc"]
    records += [("i2", "t", r, g) for r, g in zip("abc", [0, 1, 1], strict=True)]
    records += [("i3", "t", r, 2) for r in "ab"]  # two ratings: dropped
    records += [("i4", "t", "a", 3)]  # one rating: dropped
    records += [("i5", "t", "a", 3), ("i5", "t", "b", None), ("i5", "t", "c", 3)]  # 2 graded: dropped
    ft = fleiss_table(records, labels=GRADES)
    assert ft.n_ratings == 3 and ft.items == ["i1", "i2"] and ft.n_dropped == 3
    assert ft.table.tolist() == [[0, 3, 0, 0], [1, 2, 0, 0]]
    assert fleiss_kappa(ft.table) == pytest.approx(sm_fleiss_kappa(ft.table))


def test_it_breaks_ties_in_the_modal_rating_count_towards_more_ratings():
    records = [("i1", "t", r, 1) for r in "ab"] + [("i2", "t", r, 1) for r in "abc"]
    assert fleiss_table(records, labels=GRADES).n_ratings == 3


def test_it_handles_fleiss_edge_cases():
    assert fleiss_kappa(np.zeros((0, 4), dtype=int)) is None
    assert fleiss_kappa([[3, 0], [3, 0]]) is None
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[2, 1], [1, 1]])
    with pytest.raises(ValueError, match="at least 2"):
        fleiss_kappa([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="non-negative"):
        fleiss_kappa([[3, -1], [1, 1]])


def test_it_handles_krippendorff_edge_cases():
    assert krippendorff_alpha([[1, NAN], [NAN, 2]]) is None  # nothing pairable
    assert krippendorff_alpha([[2, 2], [2, 2]], value_domain=GRADES) is None  # no variation
    with pytest.raises(ValueError, match="outside value_domain"):
        krippendorff_alpha([[1, 7], [1, 2]], value_domain=GRADES)
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([[1, 2], [1, 2]], level="ratio")
    with pytest.raises(ValueError, match="ascending"):
        krippendorff_alpha([[1, 2], [1, 2]], level="ordinal", value_domain=[3, 2, 1, 0])


# ---------------------------------------------------------------------------------------------- summary


def make_campaign(*, seed: int = 0, n_items: int = 60) -> list[tuple[str, str, str, int | None]]:
    rng = np.random.default_rng(seed)
    records = []
    for i in range(n_items):
        truth = int(rng.integers(0, 4))
        raters = ["alice", "bob", "carol"] if i % 3 else ["alice", "bob"]
        for r in raters:
            if rng.random() < 0.05:
                grade = None
            elif rng.random() < 0.7:
                grade = truth
            else:
                grade = int(rng.integers(0, 4))
            records.append((f"d{i}", f"q{i % 5}", r, grade))
    return records


def test_it_summarises_agreement_as_json_matching_the_reference_libraries():
    records = make_campaign()
    summary = agreement_summary(records, labels=GRADES, relevance_level=2, seed=0, n_bootstrap=300)
    json.dumps(summary, allow_nan=False)
    data = rating_data(records, labels=GRADES)
    a, b = data.pair_a, data.pair_b
    for name, weights in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic")):
        entry = summary["cohen"][name]
        assert entry["kappa"] == pytest.approx(
            cohen_kappa_score(a, b, labels=GRADES, weights=weights), abs=1e-12
        )
        assert entry["ci_low"] < entry["kappa"] < entry["ci_high"]
        assert entry["band"] == landis_koch_band(entry["kappa"])
    assert summary["cohen"]["binary"]["kappa"] == pytest.approx(cohen_kappa_score(a >= 2, b >= 2))
    assert summary["n_raters"] == 3 and summary["n_pairs"] == len(a)
    assert summary["n_unrateable"] == sum(1 for r in records if r[3] is None)
    assert np.asarray(summary["confusion"]).sum() == len(a)
    # Krippendorff over raters × items with unrateable as missing.
    raters, items = data.raters, data.items
    matrix = np.full((len(raters), len(items)), np.nan)
    for item, _, rater, grade in records:
        if grade is not None:
            matrix[raters.index(rater), items.index(item)] = grade
    for level in ("nominal", "ordinal", "interval"):
        ref = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level, value_domain=GRADES)
        assert summary["krippendorff"][level] == pytest.approx(ref, abs=1e-12)
    ft = fleiss_table(records, labels=GRADES)
    assert summary["fleiss"]["kappa"] == pytest.approx(sm_fleiss_kappa(ft.table))
    assert summary["fleiss"]["n_items_dropped"] == ft.n_dropped
    # Per pair and per topic figures agree with the dedicated functions.
    pairs = pairwise_kappas(records, labels=GRADES)
    assert len(summary["pairs"]) == len(pairs) == 3
    for entry in summary["pairs"]:
        assert entry["unweighted"] == pytest.approx(pairs[(entry["rater_a"], entry["rater_b"])].kappa)
    m = summary["pair_matrix"]
    assert m["raters"] == ["alice", "bob", "carol"] and m["unweighted"][0][0] is None
    assert m["unweighted"][0][1] == m["unweighted"][1][0] == pytest.approx(pairs[("alice", "bob")].kappa)
    topic_kappas = [t["unweighted"] for t in summary["topics"]]
    assert topic_kappas == sorted(topic_kappas)
    assert {t["topic"] for t in summary["topics"]} == {f"q{i}" for i in range(5)}


def test_it_is_reproducible_for_a_seed():
    records = make_campaign(seed=2)
    one = agreement_summary(records, labels=GRADES, relevance_level=2, seed=7, n_bootstrap=200)
    two = agreement_summary(records, labels=GRADES, relevance_level=2, seed=7, n_bootstrap=200)
    other = agreement_summary(records, labels=GRADES, relevance_level=2, seed=8, n_bootstrap=200)
    assert one == two
    assert one["cohen"]["unweighted"]["ci_low"] != other["cohen"]["unweighted"]["ci_low"]


def test_it_summarises_undefined_agreement_as_null_and_says_so():
    records = [("d1", "t", "a", 2), ("d1", "t", "b", 2), ("d2", "t", "a", 2), ("d2", "t", "b", 2)]
    body = summary_body(records, labels=GRADES, relevance_level=2, n_bootstrap=50)
    summary = asdict(body)
    json.dumps(summary, allow_nan=False)
    assert summary["cohen"]["unweighted"]["kappa"] is None
    assert summary["cohen"]["unweighted"]["band"] == "undefined"
    assert summary["fleiss"]["kappa"] is None
    assert summary["krippendorff"]["nominal"] is None
    sentence = noise_floor_sentence(body)
    assert "undefined" in sentence and "κ=" not in sentence


def test_it_summarises_records_with_no_pairs():
    body = summary_body([("d1", "t", "a", 1)], labels=GRADES, relevance_level=2, n_bootstrap=10)
    summary = asdict(body)
    json.dumps(summary, allow_nan=False)
    assert summary["n_pairs"] == 0 and summary["cohen"]["linear"]["kappa"] is None
    assert summary["fleiss"] == {"kappa": None, "n_items": 0, "ratings_per_item": None, "n_items_dropped": 1}
    assert "no item was graded by two raters" in noise_floor_sentence(body)
    empty = agreement_summary([], labels=GRADES, relevance_level=2, n_bootstrap=10)
    assert empty["n_items"] == 0 and empty["topics"] == [] and empty["pairs"] == []


def test_it_writes_a_noise_floor_sentence_with_the_band_and_interval():
    body = summary_body(make_campaign(), labels=GRADES, relevance_level=2, n_bootstrap=200)
    summary = asdict(body)
    kappa = summary["cohen"]["unweighted"]["kappa"]
    sentence = noise_floor_sentence(body)
    assert sentence.startswith(f"Raters agree at κ={kappa:.2f} ({landis_koch_band(kappa)}, 95% CI ")
    assert f"{1 - summary['observed_agreement']:.0%} of paired judgements" in sentence
    assert "noise" in sentence and sentence.endswith(".") and "\n" not in sentence


@pytest.mark.parametrize(
    ("kappa", "band"),
    [(-0.1, "poor"), (0.0, "slight"), (0.2, "slight"), (0.21, "fair"), (0.4, "fair"), (0.5, "moderate"),
     (0.62, "substantial"), (0.8, "substantial"), (0.81, "almost perfect"), (1.0, "almost perfect"),
     (None, "undefined")],
)  # fmt: skip
def test_it_names_landis_koch_bands(kappa, band):
    assert landis_koch_band(kappa) == band


def test_it_orders_grades_by_value_for_krippendorff_whatever_the_label_order():
    records = make_campaign(seed=4)
    up = agreement_summary(records, labels=[0, 1, 2, 3], relevance_level=2, n_bootstrap=20)
    down = agreement_summary(records, labels=[3, 2, 1, 0], relevance_level=2, n_bootstrap=20)
    for level in ("nominal", "ordinal", "interval"):
        assert down["krippendorff"][level] == pytest.approx(up["krippendorff"][level], abs=1e-12)
    assert down["cohen"]["binary"]["kappa"] == pytest.approx(up["cohen"]["binary"]["kappa"], abs=1e-12)

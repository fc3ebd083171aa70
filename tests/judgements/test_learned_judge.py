"""The learned judge's features and cross-validation (pure, no database)."""

from __future__ import annotations

import numpy as np

from judgements.learned import PairTexts, folds, learned_grades, pair_features


def make_pairs(n: int, seed: int = 0) -> tuple[list[PairTexts], np.ndarray]:
    """Two topics; a document is relevant (grade 2) when it speaks of its topic's subject."""
    rng = np.random.default_rng(seed)
    subjects = {
        "apple harvest": ["orchard", "apple", "harvest", "cider"],
        "engine repair": ["engine", "piston", "garage", "repair"],
    }
    filler = ["the", "report", "said", "year", "city", "people", "new", "time"]
    pairs, grades = [], []
    for i in range(n):
        query = list(subjects)[i % 2]
        relevant = rng.random() < 0.4
        words = list(rng.choice(filler, size=8))
        if relevant:
            words += list(rng.choice(subjects[query], size=3))
        elif rng.random() < 0.5:  # about the other topic
            words += list(rng.choice(subjects[list(subjects)[1 - i % 2]], size=3))
        pairs.append(PairTexts(query, f"documents about {query}", "", " ".join(words)))
        grades.append(2 if relevant else 0)
    return pairs, np.array(grades)


def test_it_holds_each_row_out_exactly_once_and_never_trains_on_it() -> None:
    splits = folds(23, k=5, seed=3)
    assert len(splits) == 5
    held = np.concatenate([test for _, test in splits])
    assert sorted(held.tolist()) == list(range(23))
    for train, test in splits:
        assert not set(train.tolist()) & set(test.tolist())
        assert len(train) + len(test) == 23


def test_it_never_grades_an_item_with_a_model_that_saw_its_label() -> None:
    pairs, grades = make_pairs(60)
    x = pair_features(pairs)
    first = learned_grades(x, grades, x[:0], k=5, seed=1)
    for row in (0, 7, 31):  # flip one item's own label: its own grade cannot move, by construction
        flipped = grades.copy()
        flipped[row] = 2 - flipped[row]
        again = learned_grades(x, flipped, x[:0], k=5, seed=1)
        assert again.held_out[row] == first.held_out[row]
        assert again.fold[row] == first.fold[row]


def test_it_learns_which_words_are_relevant_to_which_topic() -> None:
    pairs, grades = make_pairs(400)
    x = pair_features(pairs)
    result = learned_grades(x[:300], grades[:300], x[300:], k=5, seed=0)
    assert (result.held_out == grades[:300]).mean() > 0.85
    assert (result.unlabelled == grades[300:]).mean() > 0.85
    assert set(result.fold.tolist()) == {0, 1, 2, 3, 4}


def test_it_is_reproducible_with_a_seed_and_reads_texts_only() -> None:
    pairs, grades = make_pairs(80)
    x = pair_features(pairs)
    assert np.array_equal(
        learned_grades(x, grades, x, seed=4).held_out, learned_grades(x, grades, x, seed=4).held_out
    )
    assert (pair_features(pairs[:10]) != x[:10]).nnz == 0  # stateless: rows do not depend on the batch


def test_it_grades_nothing_it_cannot_hold_out() -> None:
    pairs, grades = make_pairs(3)
    x = pair_features(pairs)
    one = learned_grades(x[:1], grades[:1], x[1:])
    assert one.held_out.tolist() == [-1] and one.unlabelled.tolist() == [grades[0]] * 2

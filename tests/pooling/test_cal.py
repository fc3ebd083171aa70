"""Tests of the continuous active learning chooser, `cal` (pure, no database)."""

from __future__ import annotations

import json

import numpy as np
import scipy.sparse as sp

from pooling.cal import CalChooser, bmi_batch_sizes, fit_and_rank
from pooling.strategies import Chooser, TopicTexts, make_chooser


def make_topic(n: int = 60) -> tuple[dict[str, list[str]], TopicTexts, dict[str, int]]:
    """Two runs over n documents; the relevant ones (every third) speak of apples, the others of cars
    (a few words drawn at random, so that texts, and predictions, differ)."""
    rng = np.random.default_rng(0)
    docids = [f"d{i:03d}" for i in range(n)]
    grades = {docid: int(i % 3 == 0) for i, docid in enumerate(docids)}
    words = {1: ["apple", "orchard", "harvest", "tree"], 0: ["car", "engine", "repair", "road"]}
    texts = {
        docid: " ".join(rng.choice(words[grades[docid]], size=int(rng.integers(3, 9))).tolist() + ["and"])
        for docid in docids
    }
    ranked = {"A": docids[::2], "B": docids[1::2]}
    return ranked, TopicTexts(topic="apple orchard", documents=texts), grades


def drain_batches(chooser: Chooser, grades: dict[str, int], rounds: int) -> list[list[str]]:
    batches: list[list[str]] = []
    for _ in range(rounds):
        batch = chooser.next_documents()
        if not batch:
            break
        for docid in reversed(batch):  # any order within the batch: raters see it blind
            chooser.record(docid, grades.get(docid, 0))
        batches.append(batch)
    return batches


def test_it_grows_batches_as_bmi_does() -> None:
    assert bmi_batch_sizes(14) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17]


def test_it_seeds_with_the_rank_one_document_of_every_run_then_grows_batches() -> None:
    ranked, texts, grades = make_topic()
    chooser = make_chooser("cal", ranked, depth=None, seed=1, texts=texts)
    batches = drain_batches(chooser, grades, 5)
    assert batches[0] == ["d000", "d001"]  # A's and B's first documents
    assert [len(batch) for batch in batches[1:]] == [1, 2, 3, 4]


def test_it_judges_what_the_texts_say_is_relevant_first() -> None:
    ranked, texts, grades = make_topic()
    chooser = make_chooser("cal", ranked, depth=None, seed=1, texts=texts)
    batches = drain_batches(chooser, grades, 7)
    after_seed = [docid for batch in batches[1:] for docid in batch]
    assert len(after_seed) == 21
    # the seed found 1 of the 20 relevant documents; the other 19 come before any document about cars
    assert [grades[docid] for docid in after_seed] == [1] * 19 + [0, 0]


def test_it_reads_no_run_names_ranks_or_scores_once_seeded() -> None:
    ranked, texts, grades = make_topic()
    renamed = {"zeta": list(reversed(ranked["B"])), "alpha": ranked["A"][5:] + ranked["A"][:5]}
    batches = []
    for lists in (ranked, renamed):
        chooser = make_chooser("cal", lists, depth=None, seed=4, texts=texts)
        for docid in ("d003", "d004", "d010"):  # judged elsewhere: no seed batch, the same labels
            chooser.record(docid, grades[docid])
        batches.append([sorted(batch) for batch in drain_batches(chooser, grades, 6)])
    assert batches[0] == batches[1]


def test_it_learns_from_judgements_made_elsewhere() -> None:
    ranked, texts, grades = make_topic()
    chooser = make_chooser("cal", ranked, depth=None, seed=1, texts=texts)
    chooser.record("d006", 1)
    chooser.record("d007", 0)
    first = chooser.next_documents()
    assert len(first) == 1 and grades[first[0]] == 1  # no seed batch: a relevant label is known


def test_it_resumes_mid_batch_exactly_as_if_uninterrupted() -> None:
    ranked, texts, grades = make_topic()
    straight = make_chooser("cal", ranked, depth=None, seed=9, texts=texts)
    order: list[str] = []
    while (docid := straight.next_document()) is not None and len(order) < 40:
        straight.record(docid, grades[docid])
        order.append(docid)
    resumed: Chooser = make_chooser("cal", ranked, depth=None, seed=9, texts=texts)
    again: list[str] = []
    while len(again) < 40:
        resumed = Chooser.from_state(ranked, json.loads(json.dumps(resumed.state())), texts=texts)
        docid = resumed.next_document()
        assert docid is not None
        resumed.record(docid, grades[docid])
        again.append(docid)
    assert again == order
    assert isinstance(resumed, CalChooser)


def test_it_falls_back_to_depth_order_without_texts() -> None:
    ranked, _texts, grades = make_topic(12)
    chooser = make_chooser("cal", ranked, depth=None, seed=1)
    order = [docid for batch in drain_batches(chooser, grades, 10) for docid in batch]
    assert order == [f"d{i:03d}" for i in range(12)]


def test_it_ranks_by_decision_value_with_ties_in_the_given_order() -> None:
    features = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]))
    chosen = fit_and_rank(
        features,
        np.array([0, 1]),
        np.array([1, 0]),
        np.array([2, 3, 4]),
        2,
        tie_order=np.arange(5),
        seed=0,
    )
    assert chosen.tolist() == [2, 3]
    one_class = fit_and_rank(
        features,
        np.array([0]),
        np.array([1]),
        np.array([4, 2, 3]),
        3,
        tie_order=np.array([0, 1, 9, 5, 2]),
        seed=0,
    )
    assert one_class.tolist() == [4, 3, 2]

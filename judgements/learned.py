"""A learned judge: grades (topic, document) pairs from their texts, trained on people's labels, and never
grades an item it trained on (pure: numpy, scipy and scikit-learn, no Django).

Features (:func:`pair_features`) are the texts only, never run names, ranks or scores (which would favour
the pooled runs):

- the document's words (title and body), hashed (``HashingVectorizer``, 2^18 columns, l2-normalised);
- the same words conditioned on the topic — each word hashed together with the topic's query text — so
  one linear model learns, per topic, which words go with relevance;
- for each of the topic's query, description and narrative: the share of its distinct words that occur
  in the document, and log(1 + how many do).

The model is logistic regression fitted by SGD (``SGDClassifier(loss="log_loss")``, 15 epochs, seeded, so
a judge is reproducible); its grade is the most probable rubric grade. :func:`learned_grades` gives every
labelled item the grade of a model that did not see it (k-fold cross-validation over the labelled items,
shuffled by the seed: the item's own fold is left out of its model's training rows, :func:`folds`), and every
unlabelled item the grade of a model trained on all the labelled ones.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import SGDClassifier

__all__ = ["LearnedGrades", "PairTexts", "folds", "learned_grades", "make_model", "pair_features"]

N_FEATURES = 2**18
_WORD = re.compile(r"(?u)\b\w\w+\b")
_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class PairTexts:
    """The texts of one (topic, document) pair: the topic's fields and the document's title and body."""

    query: str
    description: str
    narrative: str
    document: str


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _conditioned(text: str) -> list[str]:
    """The analyzer of the topic-conditioned words: `topic␟document` in, `topic␟word` tokens out."""
    topic, _, document = text.partition(_SEPARATOR)
    return [f"{topic}{_SEPARATOR}{word}" for word in _words(document)]


def pair_features(pairs: Sequence[PairTexts], *, n_features: int = N_FEATURES) -> sp.csr_matrix:
    """The feature matrix of ``pairs``, one row each (see the module docstring); stateless, so rows made
    in separate calls are comparable."""
    if not pairs:
        return sp.csr_matrix((0, 2 * n_features + 6))
    documents = [pair.document for pair in pairs]
    plain = HashingVectorizer(n_features=n_features, alternate_sign=False, norm="l2", analyzer=_words)
    conditioned = HashingVectorizer(
        n_features=n_features, alternate_sign=False, norm="l2", analyzer=_conditioned
    )
    topic_keys = [" ".join(_words(pair.query)) for pair in pairs]
    overlap = np.zeros((len(pairs), 6))
    for row, pair in enumerate(pairs):
        present = set(_words(pair.document))
        for column, field in enumerate((pair.query, pair.description, pair.narrative)):
            words = set(_words(field))
            if words:
                shared = len(words & present)
                overlap[row, 2 * column] = shared / len(words)
                overlap[row, 2 * column + 1] = math.log1p(shared)
    return sp.hstack(
        [
            plain.transform(documents),
            conditioned.transform(
                [f"{key}{_SEPARATOR}{doc}" for key, doc in zip(topic_keys, documents, strict=True)]
            ),
            sp.csr_matrix(overlap),
        ],
        format="csr",
    )


def make_model(seed: int) -> SGDClassifier:
    """The learned judge's classifier: logistic regression by SGD, deterministic for a seed."""
    return SGDClassifier(loss="log_loss", alpha=1e-5, max_iter=15, tol=None, random_state=seed % (2**32))


def _fit_predict(
    x: sp.csr_matrix, y: np.ndarray, train: np.ndarray | None, test: sp.csr_matrix | np.ndarray, seed: int
) -> np.ndarray:
    """Fit on the rows `train` of `x` (all of them if None) and predict `test` (rows of `x`, or a matrix
    of its own). The training rows are sliced for the fit only and the test rows after it, so the two
    copies are never held at once (the peak memory of a plain fit, then predict)."""
    y_train = y if train is None else y[train]
    n_test = len(test) if isinstance(test, np.ndarray) else test.shape[0]
    if n_test == 0:
        return np.empty(0, dtype=np.int64)
    classes = np.unique(y_train)
    if classes.size == 1:  # one grade only: nothing to learn, that grade for every item
        return np.full(n_test, classes[0], dtype=np.int64)
    model = make_model(seed).fit(x if train is None else x[train], y_train)
    return np.asarray(model.predict(x[test] if isinstance(test, np.ndarray) else test), dtype=np.int64)


def folds(n: int, *, k: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` (train rows, held-out rows) splits of ``n`` labelled rows: a seeded permutation cut into
    ``min(k, n)`` near-equal parts, each held out once. A row is never among its own split's training
    rows (the rule "never grades an item it trained on")."""
    if n == 0:
        return []
    k = max(2, min(k, n)) if n > 1 else 1
    order = np.random.default_rng(seed).permutation(n)
    parts = np.array_split(order, k)
    if k == 1:
        return [(np.empty(0, dtype=np.intp), parts[0])]
    return [
        (np.sort(np.concatenate(parts[:i] + parts[i + 1 :])), np.sort(part)) for i, part in enumerate(parts)
    ]


@dataclass(frozen=True)
class LearnedGrades:
    """``held_out[i]``: the grade of labelled row i by the model of its fold (which never trained on it);
    ``fold[i]``: that fold; ``unlabelled[j]``: unlabelled row j's grade by a model of every labelled row."""

    held_out: np.ndarray
    fold: np.ndarray
    unlabelled: np.ndarray


def learned_grades(
    labelled: sp.csr_matrix,
    labels: Sequence[int] | np.ndarray,
    unlabelled: sp.csr_matrix,
    *,
    k: int = 5,
    seed: int = 0,
) -> LearnedGrades:
    """Cross-validated grades of the labelled rows and grades of the unlabelled rows (module docstring).

    With fewer than two labelled rows nothing can be held out and learned: labelled rows get no grade
    (-1 in ``held_out``) and unlabelled rows the single label if there is one, else -1."""
    y = np.asarray(labels, dtype=np.int64)
    n = labelled.shape[0]
    held_out = np.full(n, -1, dtype=np.int64)
    fold = np.full(n, -1, dtype=np.int64)
    if n < 2:
        rest = np.full(unlabelled.shape[0], y[0] if n else -1, dtype=np.int64)
        return LearnedGrades(held_out, fold, rest)
    for index, (train, test) in enumerate(folds(n, k=k, seed=seed)):
        held_out[test] = _fit_predict(labelled, y, train, test, seed + index)
        fold[test] = index
    rest = _fit_predict(labelled, y, None, unlabelled, seed)
    return LearnedGrades(held_out, fold, rest)

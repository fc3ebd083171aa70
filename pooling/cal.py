"""Continuous active learning (``cal``): judge next what a classifier trained on the judgements so far
predicts most likely relevant (Cormack & Grossman's BMI, 2015-16; HiCAL).

Pure (no Django). One chooser per topic, as every strategy of :mod:`pooling.strategies`:

- **Features** are the texts only (:class:`pooling.choosers.TopicTexts`): TF-IDF (sublinear tf, fitted on
  the topic's candidates) of each candidate's title and body, and of the topic's query, description and
  narrative as one synthetic document. Never run names, ranks or scores, which would favour the pooled
  runs; the runs only say which documents are candidates (those within ``depth`` of some run).
- **Seed**: the first batch is the top documents of the runs — the rank-1 document of every run (depth
  order, :func:`pooling.ranking.depth_order`). If a relevant judgement is already known (judged
  elsewhere, e.g. imported), there is no seed batch: the classifier starts from it.
- **Training**: logistic regression (scikit-learn, ``liblinear``, deterministic) on every judged
  candidate (relevant = grade ≥ the relevance level; unrateable counts as non-relevant), the topic's
  synthetic document as one more relevant example, and — as BMI does — a few unjudged candidates drawn by
  the seeded generator, presumed non-relevant for this round only (:attr:`CalChooser.presumed_negatives`).
- **Batches**: after the seed, batch sizes grow as in BMI: 1, then ``B + ceil(B / 10)`` each round
  (1, 2, 3, ..., 10, 11, 13, 15, ...). A batch is the ``B`` unjudged candidates of highest predicted
  relevance, ties in depth order. The classifier is retrained once per batch, after the batch is judged.
  :meth:`CalChooser.next_documents` gives the whole open batch, which the web app selects at once: raters
  then see its items in the blind order of the pool (by keyed hash), never in the order of prediction.

A document with no text (or a topic whose candidates have none) gives the classifier nothing to learn:
every prediction ties and the order falls back to depth order. Reproducible with the seed; the state
(:meth:`Chooser.state`) holds the labels, the open batch, the next batch size and the generator, and a
resumed chooser continues exactly as an uninterrupted one (it refits the same model on the same rows).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:  # at run time imported where used: scikit-learn takes half a second to import
    import scipy.sparse as sp
    from sklearn.linear_model import LogisticRegression

from pooling.choosers import Chooser, _is_relevant, register
from pooling.ranking import depth_order

__all__ = ["CalChooser", "bmi_batch_sizes", "fit_and_rank"]


def bmi_batch_sizes(count: int) -> list[int]:
    """The first ``count`` batch sizes after the seed: 1, then each ``B + ceil(B / 10)``."""
    sizes: list[int] = []
    size = 1
    for _ in range(count):
        sizes.append(size)
        size += math.ceil(size / 10)
    return sizes


def make_classifier(seed: int) -> LogisticRegression:
    """The classifier ``cal`` trains: L2 logistic regression, liblinear (deterministic for a seed)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1.0, solver="liblinear", random_state=seed % (2**32))


def fit_and_rank(
    features: sp.csr_matrix,
    train_rows: np.ndarray,
    train_labels: np.ndarray,
    candidates: np.ndarray,
    size: int,
    *,
    tie_order: np.ndarray,
    seed: int,
    extra: tuple[sp.csr_matrix, np.ndarray] | None = None,
) -> np.ndarray:
    """One ``cal`` step: fit the classifier on ``features[train_rows]`` (plus ``extra`` rows and labels)
    and return the ``size`` rows of ``candidates`` with the highest decision value, best first; ties go to
    the lower ``tie_order``. With one class only (nothing to learn) the order is ``tie_order``'s.

    Prediction runs over the whole matrix (one sparse product, no copy of the candidates' rows) and is
    then read at ``candidates``; the benchmark holds this to twice a plain fit and predict."""
    size = min(size, len(candidates))
    if size <= 0:
        return np.empty(0, dtype=np.intp)
    x = features[train_rows]
    y = train_labels
    if extra is not None:
        import scipy.sparse as sp

        x = sp.vstack([x, extra[0]], format="csr")
        y = np.concatenate([y, extra[1]])
    if len(np.unique(y)) < 2 or x.shape[1] == 0:
        scores = np.zeros(len(candidates))
    else:
        model = make_classifier(seed).fit(x, y)
        scores = model.decision_function(features)[candidates]
    ties = tie_order[candidates]
    if size < len(candidates):  # the top `size` by score, then sorted exactly (ties included)
        threshold = np.partition(-scores, size - 1)[size - 1]
        keep = np.flatnonzero(-scores <= threshold)
    else:
        keep = np.arange(len(candidates))
    order = keep[np.lexsort((ties[keep], -scores[keep]))][:size]
    return candidates[order]


@register
class CalChooser(Chooser):
    """Continuous active learning over one topic's candidates (see the module docstring)."""

    strategy = "cal"
    presumed_negatives: ClassVar[int] = 20
    """Unjudged candidates presumed non-relevant per round (BMI uses 100 over a whole collection; a pool
    is far denser in relevant documents, so fewer)."""

    def _start(self) -> None:
        # Feature rows are in docid order, so nothing the classifier sees (rows, the presumed negatives
        # drawn from them) depends on the runs; depth order only seeds and breaks ties.
        depth_first = depth_order(self._lists, None)
        self._order: list[str] = sorted(depth_first)
        self._row: dict[str, int] = {docid: i for i, docid in enumerate(self._order)}
        self._depth_first = depth_first
        self._tie_order = np.empty(len(self._order), dtype=np.intp)
        self._tie_order[[self._row[docid] for docid in depth_first]] = np.arange(len(depth_first))
        self._labels: dict[str, bool] = {}
        self._judged_rows = np.zeros(len(self._order), dtype=bool)  # by feature row: a mask, not a set scan
        self._batch: list[str] = []
        self._batch_size = 1
        self._seeded = False
        self._features: sp.csr_matrix | None = None
        self._topic_row: sp.csr_matrix | None = None

    # -- features and training --------------------------------------------------------------------------

    def _matrices(self) -> tuple[sp.csr_matrix, sp.csr_matrix | None]:
        """TF-IDF rows of the candidates (in docid order) and of the topic's text (None if it has none)."""
        if self._features is None:
            import scipy.sparse as sp
            from sklearn.feature_extraction.text import TfidfVectorizer

            documents = [self.texts.documents.get(docid, "") for docid in self._order]
            vectorizer = TfidfVectorizer(sublinear_tf=True, dtype=np.float64)
            try:
                self._features = sp.csr_matrix(vectorizer.fit_transform([*documents, self.texts.topic]))
            except ValueError:  # no word anywhere: nothing to learn from
                self._features = sp.csr_matrix((len(documents) + 1, 0))
            topic = self._features[len(documents) :]
            self._topic_row = topic if topic.nnz else None
            self._features = self._features[: len(documents)]
        return self._features, self._topic_row

    def _classify(self, size: int) -> list[str]:
        features, topic_row = self._matrices()
        judged = np.array([self._row[docid] for docid in self._labels], dtype=np.intp)
        labels = np.array([int(relevant) for relevant in self._labels.values()], dtype=np.int64)
        unjudged = np.flatnonzero(~self._judged_rows)
        presumed = min(self.presumed_negatives, len(unjudged))
        if presumed:  # presumed non-relevant for this round only: rows of the same matrix, label 0
            drawn = np.sort(self._rng.choice(unjudged, size=presumed, replace=False))
            judged = np.concatenate([judged, drawn])
            labels = np.concatenate([labels, np.zeros(presumed, dtype=np.int64)])
        extra = None if topic_row is None else (topic_row, np.ones(1, dtype=np.int64))
        chosen = fit_and_rank(
            features,
            judged,
            labels,
            unjudged,
            size,
            tie_order=self._tie_order,
            seed=self.seed,
            extra=extra,
        )
        return [self._order[i] for i in chosen.tolist()]

    def _next_batch(self) -> list[str]:
        if len(self._judged) == len(self._order):
            return []
        if not self._seeded and not any(self._labels.values()):
            self._seeded = True
            seeds = [docid for docid in self._depth_first if docid not in self._judged]
            return seeds[: len(self._runs)]  # the rank-1 document of every run, in depth order
        self._seeded = True
        size = self._batch_size
        self._batch_size += math.ceil(size / 10)
        return self._classify(size)

    # -- the chooser protocol ---------------------------------------------------------------------------

    def _choose(self) -> tuple[str | None, str] | None:
        self._batch = [docid for docid in self._batch if docid not in self._judged]
        if not self._batch:
            self._batch = self._next_batch()
        return (None, self._batch[0]) if self._batch else None

    def next_documents(self) -> list[str]:
        """The open batch: every document the classifier chose this round and nobody judged yet."""
        if self.next_document() is None:
            return []
        return [docid for docid in self._batch if docid not in self._judged]

    def record(self, docid: str, grade: int | None) -> None:
        """As :meth:`Chooser.record`; every recorded candidate's grade (chosen here or judged elsewhere)
        is a training example from the next round on."""
        super().record(docid, grade)
        if docid in self._row:
            self._labels[docid] = _is_relevant(grade, self.relevance_level)
            self._judged_rows[self._row[docid]] = True

    def _extra_state(self) -> dict[str, Any]:
        return {
            "labels": {docid: int(relevant) for docid, relevant in self._labels.items()},
            "batch": list(self._batch),
            "batch_size": self._batch_size,
            "seeded": self._seeded,
        }

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        labels: Mapping[str, Any] = state["labels"]
        batch: Sequence[str] = state["batch"]
        if set(labels) != self._judged or any(docid not in self._row for docid in batch):
            raise ValueError("the state's labels or batch are not this topic's candidates")
        self._labels = {docid: bool(labels[docid]) for docid in self._judged_order}
        self._judged_rows[[self._row[docid] for docid in self._labels]] = True
        self._batch = list(batch)
        self._batch_size = int(state["batch_size"])
        self._seeded = bool(state["seeded"])

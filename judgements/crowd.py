"""Model-based aggregation of crowd labels (pure: no Django), fitted by crowd-kit (Apache-2.0).

Majority, median and mean decide each item from its own votes. The policies here first learn every
rater's reliability from the whole pool, then decide each item from its votes weighed by who cast them:

- ``dawid-skene`` — Dawid & Skene (1979): a full confusion matrix per rater and class priors, by EM
  (``crowdkit.aggregation.DawidSkene``).
- ``mace`` — MACE (Hovy et al. 2013): each rater is, per answer, either knowing or spamming with their own
  spamming distribution (``crowdkit.aggregation.MACE``, variational Bayes, crowd-kit's defaults:
  ``MACE_RESTARTS`` = 10 random restarts of 50 iterations each, the one of highest likelihood kept). The
  restarts are seeded by one generator made from ``seed``: crowd-kit (1.4.2) draws every restart's start
  with ``random_state``, so an integer there would start all ten from the same point — ten identical
  fits — while a generator gives each restart its own start, the same ones for the same ``seed``.
- ``glad`` — GLAD (Whitehill et al. 2009): each rater has an expertise, each item a difficulty, and the
  chance of a right answer grows with their product (``crowdkit.aggregation.GLAD``, EM; deterministic).
  Its M-step is a numerical optimisation: the slowest policy here (about 30 s of CPU for 9,000 labels).
- ``gold-weighted`` — weighted majority (``crowdkit.aggregation.MajorityVote`` with skills), each rater
  weighed by their exact accuracy on the pool's gold items by the one rule of gold accuracy
  (``judgements.rater_quality.gold_accuracy``: an unrateable answer is a miss, so it is the "Gold exact"
  their statistics show; without unrateable answers, ``GoldMajorityVote``'s skills); a rater who
  answered no gold item gets the median weight of those who did (every rater 1 when nobody did, which is
  plain majority), and no weight is below ``GOLD_WEIGHT_FLOOR``.

Only graded votes enter a model; the rules common to every policy (adjudication first, ``required``, an
unrateable majority) stay in :func:`judgements.aggregation.aggregate`. Each model's posterior of an item is
a function of its votes — which rater gave which grade — and of the fitted parameters alone, so a fit is
kept as :class:`Fitted`: vote signature → (grade, tie). The grade is the most probable one, a tie (two
grades equally probable to 1e-9) going to the lower grade and flagged, as majority does.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgements.aggregation import MODEL_POLICIES

#: MACE's random restarts (crowd-kit's default; the best of them is kept).
MACE_RESTARTS = 10

#: The least weight of a rater under gold-weighted voting (one who got every gold item wrong).
GOLD_WEIGHT_FLOOR = 1e-3

Signature = frozenset[tuple[Hashable, int]]


def signature(votes: Iterable[tuple[Hashable, int | None]]) -> Signature:
    """The graded votes of an item as the set of (rater, grade) a model reads."""
    return frozenset((rater, grade) for rater, grade in votes if grade is not None)


@dataclass(frozen=True)
class Fitted:
    """A fitted model: each vote signature seen in the fit → (grade, tie), and the posterior of each."""

    policy: str
    decisions: Mapping[Signature, tuple[int, bool]]
    posteriors: Mapping[Signature, Mapping[int, float]] = field(default_factory=dict)
    raters: Mapping[Hashable, float] = field(default_factory=dict)  # a reliability per rater, if any

    def decide(self, votes: Sequence[tuple[Hashable, int | None]]) -> tuple[int, bool] | None:
        """(grade, tie) of an item with these votes; None for votes the fit never saw."""
        return self.decisions.get(signature(votes))


def _frame(items: Sequence[Sequence[tuple[Hashable, int | None]]]) -> Any:
    """crowd-kit's input: one row (task = the item's index, worker, label) per graded vote."""
    import pandas as pd

    tasks, workers, labels = [], [], []
    for task, votes in enumerate(items):
        for rater, grade in votes:
            if grade is not None:
                tasks.append(task)
                workers.append(str(rater))
                labels.append(int(grade))
    return pd.DataFrame({"task": tasks, "worker": workers, "label": labels})


def _first_seen(column: Any) -> list[Any]:
    """The distinct values of a frame's column in order of first appearance (how crowd-kit's
    ``pd.factorize`` numbers workers)."""
    import pandas as pd

    return list(pd.factorize(column)[1])


def _decide(probas: Any, grades: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``probas`` (task × label): the most probable grade, ties low, and the tie flags."""
    columns = [g for g in sorted(grades) if g in probas.columns]
    values = probas.reindex(columns=columns, fill_value=0.0).to_numpy(dtype=float)
    best = values.max(axis=1, keepdims=True)
    top = values >= best - 1e-9
    first = top.argmax(axis=1)
    return np.asarray(columns)[first], top.sum(axis=1) > 1, values


def fit(
    policy: str,
    items: Sequence[Sequence[tuple[Hashable, int | None]]],
    *,
    grades: Sequence[int],
    gold: Mapping[int, int] | None = None,
    seed: int = 0,
    n_iter: int = 100,
) -> Fitted:
    """Fit ``policy`` (one of ``MODEL_POLICIES``) on every item's votes ``[(rater, grade or None), ...]``
    (``items[i]``), over the rubric's ``grades``. ``gold`` maps an index of ``items`` to its gold grade
    (for ``gold-weighted``). ValueError for an unknown policy."""
    from crowdkit.aggregation import GLAD, MACE, DawidSkene, MajorityVote

    if policy not in MODEL_POLICIES:
        raise ValueError(f"unknown model policy {policy!r}; expected one of {', '.join(MODEL_POLICIES)}")
    frame = _frame(items)
    if frame.empty:
        return Fitted(policy, {})
    raters: dict[Hashable, float] = {}
    if policy == "dawid-skene":
        ds = DawidSkene(n_iter=n_iter)
        probas = ds.fit(frame).probas_
        errors: Any = ds.errors_  # (worker, label) × true label
        for worker in frame["worker"].unique().tolist():
            matrix = errors.loc[worker]
            raters[worker] = float(np.mean([matrix.at[g, g] for g in matrix.columns if g in matrix.index]))
    elif policy == "mace":
        starts: Any = np.random.RandomState(seed)  # one stream for every restart (see the module docstring)
        mace = MACE(n_restarts=MACE_RESTARTS, n_iter=min(n_iter, 50), random_state=starts)
        probas = mace.fit(frame).probas_
        # P(knowing) of each worker: column 1 of spamming_, rows in order of first appearance in the frame
        order = _first_seen(frame["worker"])
        raters = {w: float(c) for w, c in zip(order, mace.spamming_[:, 1].tolist(), strict=True)}
    elif policy == "glad":
        glad = GLAD(n_iter=n_iter)
        probas = glad.fit(frame).probas_
        alphas: Any = glad.alphas_  # the expertise of each worker
        raters = {w: float(a) for w, a in alphas.items()}
    else:
        import pandas as pd

        from judgements.rater_quality import gold_accuracy

        # Each rater's answers on gold items, unrateable ones too: their weight is their exact accuracy
        # by the one rule of gold accuracy (an unrateable answer a miss), the "Gold exact" of their
        # statistics, where crowd-kit's GoldMajorityVote would see their graded answers only.
        answers: dict[str, list[tuple[int, int | None]]] = {}
        for task, truth in (gold or {}).items():
            for rater, grade in items[task]:
                answers.setdefault(str(rater), []).append((int(truth), grade))
        skills = {w: gold_accuracy(a).exact_rate or 0.0 for w, a in answers.items()}
        fill = float(np.median(list(skills.values()))) if skills else 1.0
        # A floor keeps an item whose every rater failed the gold decidable (by those raters, equally).
        workers = frame["worker"].unique().tolist()
        weights = pd.Series({w: max(skills.get(w, fill), GOLD_WEIGHT_FLOOR) for w in workers}, name="skill")
        probas = MajorityVote().fit(frame, weights).probas_
        raters = dict(weights.items())
    assert probas is not None  # every crowd-kit model sets it in fit
    best, tie, values = _decide(probas, grades)
    columns = [g for g in sorted(grades) if g in probas.columns]
    decisions: dict[Signature, tuple[int, bool]] = {}
    posteriors: dict[Signature, dict[int, float]] = {}
    for row, task in enumerate(probas.index.tolist()):
        sig = signature(items[int(task)])
        decisions[sig] = (int(best[row]), bool(tie[row]))
        posteriors[sig] = {g: float(v) for g, v in zip(columns, values[row].tolist(), strict=True)}
    return Fitted(policy, decisions, posteriors, raters)

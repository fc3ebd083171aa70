"""Per-rater quality in a crowd (pure: no Django): confusion matrices against gold and against the
consensus, exact accuracy, Cohen's κ with the consensus and with the other raters, and automatic flags.

Accuracy against gold has one rule, `gold_accuracy` (every page, API and report reads it): every answer
to a gold item counts, and an unrateable one is a miss (a gold label is always a grade), so a rater
cannot dodge the gold checks by answering unrateable. κ and the confusion matrix against gold compare
grades, so they are over the graded answers only (`versus_gold`).

Flags, each with the number behind it (thresholds below, all on graded votes):

- ``constant`` — one grade in ≥ ``CONSTANT_SHARE`` of the rater's votes; ``near-constant`` — in ≥
  ``NEAR_CONSTANT_SHARE`` (a rater who always answers the middle grade is "within one" of every gold item,
  and only this flag catches them);
- ``fast`` — the rater's median time per judgement is below ``FAST_RATIO`` × the median of the other
  raters' medians;
- ``near-chance`` — Cohen's κ (unweighted, the rubric's full label set) between the rater and the
  majority of the *other* raters of the same items is below ``CHANCE_KAPPA``: their answers agree with
  everyone else's no better than chance. (Against the consensus the rater's own vote is in it; against
  the others it is not, so a random answerer cannot agree with themselves.) The other raters are those
  whose labels count: an ``excluded`` rater is measured, but is no one else's reference, as the
  consensus leaves them out too.

A flag needs ``MIN_VOTES`` votes (times, shared items) to be raised: too few say nothing.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgements import aggregation

CONSTANT_SHARE = 0.98
NEAR_CONSTANT_SHARE = 0.9
FAST_RATIO = 0.3
CHANCE_KAPPA = 0.1
MIN_VOTES = 10

Record = tuple[Hashable, Hashable, int | None, float | None]  # (item, rater, grade or None, seconds)


@dataclass
class Versus:
    """The rater's grades against reference grades on the items both have: ``confusion[i][j]`` counts
    items whose reference is ``labels[i]`` and the rater's grade ``labels[j]``. Against gold (`versus_gold`)
    `n` and `accuracy` count the unrateable answers too (as misses), which the matrix and κ leave out."""

    n: int
    accuracy: float | None
    kappa: float | None
    confusion: list[list[int]]

    def rounded(self) -> Versus:
        """As the quality report gives it: each figure to 6 decimals, an undefined one None."""
        return Versus(
            n=self.n, accuracy=_round(self.accuracy), kappa=_round(self.kappa), confusion=self.confusion
        )


@dataclass(frozen=True)
class GoldAccuracy:
    """A rater's answers to the pool's gold items by the one rule of gold accuracy (`gold_accuracy`): `n`
    every answer, `exact` those whose grade equals the gold grade, `within_one` those whose grade is at most
    one from it (an unrateable answer is in `n` and in neither of the others: a miss); each rate null while
    the rater has answered no gold item."""

    n: int = 0
    exact: int = 0
    within_one: int = 0
    exact_rate: float | None = field(init=False)  # exact / n
    within_one_rate: float | None = field(init=False)  # within_one / n

    def __post_init__(self) -> None:
        object.__setattr__(self, "exact_rate", self.exact / self.n if self.n else None)
        object.__setattr__(self, "within_one_rate", self.within_one / self.n if self.n else None)


def gold_accuracy(answers: Iterable[tuple[int, int | None]]) -> GoldAccuracy:
    """Accuracy against gold of one rater's answers ``(gold grade, the rater's grade or None when they
    answered unrateable)``, one per gold item they answered: the one rule, which the rater statistics
    (`judgements.stats.gold_accuracy`), the quality report (`versus_gold`), the dashboard's gold misses
    and the APIs read. Every answer counts in `n`; an unrateable answer is a miss, never a hit: a gold
    label is a grade (`GoldLabel.grade` cannot be null), so "unrateable" is never its right answer, and
    leaving such answers out would let a rater dodge the gold checks by answering unrateable."""
    n = exact = within_one = 0
    for gold, grade in answers:
        n += 1
        if grade is not None:
            exact += int(grade == gold)
            within_one += int(abs(grade - gold) <= 1)
    return GoldAccuracy(n=n, exact=exact, within_one=within_one)


@dataclass(frozen=True)
class RaterFlag:
    """A flag raised on a rater (see the module docstring: constant, near-constant, fast, near-chance)
    and `why`: the number behind it, in words."""

    flag: str
    why: str


@dataclass
class _RaterFigures:
    rater: Hashable
    votes: int
    unrateable: int
    modal_share: float | None
    median_seconds: float | None
    gold: Versus
    consensus: Versus
    others: Versus


@dataclass
class RaterQualityRow(_RaterFigures):
    """One rater of the quality report (`RaterQuality.row`): graded `votes` and `unrateable` answers, the
    share of the modal grade and the median seconds (null when undefined), against gold, the consensus
    and the other raters, the flags, and whether the rater is excluded now from the pool's releases."""

    rater: str
    flags: list[RaterFlag]
    excluded: bool


@dataclass
class RaterQuality(_RaterFigures):
    """One rater's figures (`rater_quality`), unrounded; `row` is how the report shows them."""

    flags: list[RaterFlag] = field(default_factory=list)

    def row(self, *, excluded: bool) -> RaterQualityRow:
        """The rater as the quality report shows them: figures to 6 decimals, an undefined one None."""
        return RaterQualityRow(
            rater=str(self.rater),
            votes=self.votes,
            unrateable=self.unrateable,
            modal_share=_round(self.modal_share),
            median_seconds=_round(self.median_seconds),
            gold=self.gold.rounded(),
            consensus=self.consensus.rounded(),
            others=self.others.rounded(),
            flags=list(self.flags),
            excluded=excluded,
        )


def _round(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 6)


def versus(pairs: Sequence[tuple[int, int]], labels: Sequence[int]) -> Versus:
    """(reference, rater) pairs → counts, exact accuracy, unweighted κ over ``labels`` (None when
    undefined: no pairs, or both sides one same grade)."""
    index = {g: i for i, g in enumerate(labels)}
    confusion = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for ref, mine in pairs:
        confusion[index[ref], index[mine]] += 1
    n = int(confusion.sum())
    if not n:
        return Versus(0, None, None, confusion.tolist())
    observed = float(np.trace(confusion)) / n
    expected = float(confusion.sum(axis=1) @ confusion.sum(axis=0)) / (n * n)
    kappa = (observed - expected) / (1 - expected) if expected < 1 else None
    return Versus(n, observed, kappa, confusion.tolist())


def versus_gold(answers: Sequence[tuple[int, int | None]], labels: Sequence[int]) -> Versus:
    """A rater against gold from their answers ``(gold grade, grade or None when unrateable)``: `n` and
    exact `accuracy` by the one rule (`gold_accuracy`: every answer, an unrateable one a miss); κ and the
    confusion matrix over the graded answers only (they compare grades), so the matrix sums to `n` less
    the unrateable answers."""
    graded = versus([(gold, grade) for gold, grade in answers if grade is not None], labels)
    accuracy = gold_accuracy(answers)
    return Versus(accuracy.n, accuracy.exact_rate, graded.kappa, graded.confusion)


def rater_quality(
    records: Sequence[Record],
    *,
    labels: Sequence[int],
    consensus: Mapping[Any, int],
    gold: Mapping[Any, int],
    excluded: Collection[Hashable] = (),
) -> list[RaterQuality]:
    """Every rater's quality (in order of first appearance) from their current judgements ``records``;
    ``consensus`` holds the judged items' grades under the pool's policy, ``gold`` the gold grades;
    the ``excluded`` raters' votes are left out of every other rater's "others" reference. Against gold,
    `n` and accuracy count every answer (an unrateable one a miss), κ and the confusion matrix the graded
    ones (`versus_gold`); against the consensus and the others, the graded answers only.
    Cohen's κ here is computed from the confusion matrix over ``labels`` (the same value as
    ``sklearn.metrics.cohen_kappa_score(..., labels=labels)``)."""
    by_rater: dict[Hashable, list[Record]] = defaultdict(list)
    by_item: dict[Hashable, list[tuple[Hashable, int | None]]] = defaultdict(list)
    for record in records:
        by_rater[record[1]].append(record)
        by_item[record[0]].append((record[1], record[2]))
    medians = {}
    for rater, rows in by_rater.items():
        times = [t for *_, s in rows if (t := known_seconds(s)) is not None]
        medians[rater] = statistics.median(times) if len(times) >= MIN_VOTES else None
    out = []
    for rater, rows in by_rater.items():
        graded = [(item, g) for item, _, g, _ in rows if g is not None]
        counts = np.bincount([labels.index(g) for _, g in graded], minlength=len(labels)) if graded else None
        modal = float(counts.max() / len(graded)) if counts is not None else None
        others_pairs = []
        for item, grade in graded:
            rest = [(r, g) for r, g in by_item[item] if r != rater and r not in excluded]
            if any(g is not None for _, g in rest):
                decided = aggregation.aggregate(rest, policy="majority")
                if decided.grade is not None:
                    others_pairs.append((decided.grade, grade))
        quality = RaterQuality(
            rater=rater,
            votes=len(graded),
            unrateable=len(rows) - len(graded),
            modal_share=modal,
            median_seconds=medians[rater],
            gold=versus_gold([(gold[item], g) for item, _, g, _ in rows if item in gold], labels),
            consensus=versus([(consensus[item], g) for item, g in graded if item in consensus], labels),
            others=versus(others_pairs, labels),
        )
        quality.flags = flags(quality, [m for r, m in medians.items() if r != rater and m is not None])
        out.append(quality)
    return out


def known_seconds(seconds: float | None) -> float | None:
    """A judgement's time, when it has one: `seconds` is 0 when none was given (an import without times,
    a crowd file's empty cell, a client that sent none). Every median of times (the rater statistics',
    the `fast` flag's) reads times through this."""
    return seconds if seconds is not None and seconds > 0 else None


def flags(quality: RaterQuality, others_medians: Sequence[float]) -> list[RaterFlag]:
    """The flags of one rater (see the module docstring)."""
    out: list[RaterFlag] = []
    share = quality.modal_share
    if share is not None and quality.votes >= MIN_VOTES:
        if share >= CONSTANT_SHARE:
            out.append(RaterFlag(flag="constant", why=f"one grade in {share:.0%} of {quality.votes} votes"))
        elif share >= NEAR_CONSTANT_SHARE:
            why = f"one grade in {share:.0%} of {quality.votes} votes"
            out.append(RaterFlag(flag="near-constant", why=why))
    if quality.median_seconds is not None and others_medians:
        typical = statistics.median(others_medians)
        if quality.median_seconds < FAST_RATIO * typical:
            why = f"median {quality.median_seconds:.1f} s a judgement, the others {typical:.1f} s"
            out.append(RaterFlag(flag="fast", why=why))
    others = quality.others
    if others.n >= MIN_VOTES and (others.kappa is None or others.kappa < CHANCE_KAPPA):
        kappa = "undefined" if others.kappa is None else f"{others.kappa:.2f}"
        why = f"κ with the other raters {kappa} over {others.n} items"
        out.append(RaterFlag(flag="near-chance", why=why))
    return out

"""Label aggregation: from an item's judgements to one consensus state and grade (pure, no Django).

Policies, applied by :func:`aggregate` in this order:

1. **Adjudication overrides everything.** ``adjudicated=<int>`` → ``judged`` with that grade;
   ``adjudicated="unrateable"`` → ``unrateable``; ``None`` means no adjudication. This holds whatever the
   policy and however many judgements there are (an adjudication is a consensus).
2. ``rater:NAME`` — NAME's own judgement only (the rater whose ``str(rater) == NAME``): a grade →
   ``judged``; unrateable → ``unrateable``; NAME has not judged the item → ``pending``. ``required``
   does not apply (other raters are irrelevant).
3. No judgements, or fewer than ``required`` (unrateable votes count: they are judgements) → ``pending``.
4. **Unrateable majority.** If strictly more than half of the judgements say unrateable → ``unrateable``.
   Otherwise the unrateable votes are ignored and the policy runs on the graded votes (of which there is
   at least one):

   * ``majority`` — the most frequent grade; a tie between grades goes to the **lower** grade.
   * ``median`` — the **lower** median: the ⌈n/2⌉-th smallest of the n grades.
   * ``mean`` — the arithmetic mean **rounded half up** (⌊mean + ½⌋, computed exactly with fractions, so
     1.5 → 2 and 2.5 → 3).

``tie`` is True when the rule had to break a tie, so the item is worth a look (or an adjudication):

* any policy: exactly half the judgements are unrateable (unrateable vs graded is a dead heat);
* ``majority``: another grade has as many votes as the winner, or the unrateable votes are as many as the
  winner's (a plurality tie with "unrateable", resolved in favour of the grade);
* ``median``: an even number of grades whose two middle grades differ;
* ``mean``: the mean lies exactly halfway between two grades.

``tie`` is always False for ``pending`` items, for ``rater:NAME`` and for adjudicated items.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

State = Literal["judged", "unrateable", "pending"]
JUDGED: State = "judged"
UNRATEABLE: State = "unrateable"
PENDING: State = "pending"

POLICY_KINDS = ("majority", "median", "mean", "rater")

__all__ = [
    "JUDGED",
    "PENDING",
    "UNRATEABLE",
    "Aggregate",
    "Policy",
    "aggregate",
    "parse_policy",
]


@dataclass(frozen=True)
class Policy:
    """A parsed aggregation policy: ``kind`` is majority, median, mean or rater (with ``rater`` set)."""

    kind: Literal["majority", "median", "mean", "rater"]
    rater: str | None = None

    def __str__(self) -> str:
        return f"rater:{self.rater}" if self.kind == "rater" else self.kind


@dataclass(frozen=True)
class Aggregate:
    """The consensus of one item: ``grade`` is set iff ``state == "judged"``."""

    state: State
    grade: int | None
    tie: bool = False


def parse_policy(policy: str | Policy) -> Policy:
    """Parse ``"majority"``, ``"median"``, ``"mean"`` or ``"rater:NAME"`` (NAME non-empty, kept verbatim
    after the first colon). ValueError with the accepted forms for anything else."""
    if isinstance(policy, Policy):
        return policy
    if not isinstance(policy, str):
        raise ValueError(f"aggregation policy must be a string, got {type(policy).__name__}")
    if policy in ("majority", "median", "mean"):
        return Policy(policy)  # type: ignore[arg-type]  # one of the Literal kinds: checked above
    if policy.startswith("rater:"):
        name = policy[len("rater:") :]
        if not name.strip():
            raise ValueError("aggregation policy 'rater:NAME' needs a rater name after 'rater:'")
        return Policy("rater", name)
    raise ValueError(
        f"unknown aggregation policy {policy!r}; expected 'majority', 'median', 'mean' or 'rater:NAME'"
    )


def _check_grade(grade: object, what: str) -> int:
    if isinstance(grade, bool) or not isinstance(grade, int):
        raise ValueError(f"{what} must be an int grade, got {grade!r}")
    return grade


def aggregate(
    judgements: Sequence[tuple[Hashable, int | None]],
    *,
    policy: str | Policy,
    required: int = 1,
    adjudicated: int | Literal["unrateable"] | None = None,
) -> Aggregate:
    """Aggregate one item's current judgements ``[(rater, grade or None for unrateable), ...]`` under
    ``policy`` into an :class:`Aggregate`; the rules are in the module docstring.

    ValueError for an unknown policy, a rater listed twice, a grade that is not an int, or
    ``required < 1``.
    """
    parsed = parse_policy(policy)
    if isinstance(required, bool) or not isinstance(required, int) or required < 1:
        raise ValueError(f"required must be an int ≥ 1, got {required!r}")
    seen: set[Hashable] = set()
    votes: list[int | None] = []
    for rater, grade in judgements:
        if rater in seen:
            raise ValueError(f"rater {rater!r} appears twice; pass only each rater's latest judgement")
        seen.add(rater)
        votes.append(None if grade is None else _check_grade(grade, f"grade of rater {rater!r}"))

    if adjudicated is not None:
        if adjudicated == "unrateable":
            return Aggregate(UNRATEABLE, None, False)
        return Aggregate(JUDGED, _check_grade(adjudicated, "adjudicated"), False)

    if parsed.kind == "rater":
        for rater, grade in judgements:
            if str(rater) == parsed.rater:
                return Aggregate(JUDGED, grade, False) if grade is not None else Aggregate(UNRATEABLE, None)
        return Aggregate(PENDING, None, False)

    total = len(votes)
    if total == 0 or total < required:
        return Aggregate(PENDING, None, False)
    grades = sorted(g for g in votes if g is not None)
    n_unrateable = total - len(grades)
    if 2 * n_unrateable > total:
        return Aggregate(UNRATEABLE, None, False)
    half_unrateable = 2 * n_unrateable == total

    if parsed.kind == "majority":
        counts = Counter(grades)
        top = max(counts.values())
        winners = [g for g, c in counts.items() if c == top]
        tie = len(winners) > 1 or n_unrateable >= top
        return Aggregate(JUDGED, min(winners), tie or half_unrateable)
    if parsed.kind == "median":
        n = len(grades)
        lower = grades[(n - 1) // 2]
        tie = n % 2 == 0 and grades[n // 2] != lower
        return Aggregate(JUDGED, lower, tie or half_unrateable)
    mean = Fraction(sum(grades), len(grades))
    rounded = math.floor(mean + Fraction(1, 2))
    tie = mean.denominator == 2
    return Aggregate(JUDGED, rounded, tie or half_unrateable)

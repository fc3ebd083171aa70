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

Each of the three is a function of ``RULES`` (a new policy is one more function there); rules 1–4 hold
for every policy.

**Model policies** (``MODEL_POLICIES``: ``dawid-skene``, ``mace``, ``glad``, ``gold-weighted``, see
:mod:`judgements.crowd`) learn each rater's reliability from the whole pool first: their ``Policy``
carries the fit (``Policy.fitted``, made by ``judgements.crowd_policies.fit_policy``), which decides an
item from who gave which grade, after rules 1–4. ``aggregate`` refuses a model policy without its fit.

``tie`` is always False for ``pending`` items, for ``rater:NAME`` and for adjudicated items.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

State = Literal["judged", "unrateable", "pending"]
JUDGED: State = "judged"
UNRATEABLE: State = "unrateable"
PENDING: State = "pending"


__all__ = [
    "JUDGED",
    "PENDING",
    "UNRATEABLE",
    "Aggregate",
    "RULES",
    "Policy",
    "aggregate",
    "parse_policy",
]


#: Policies fitted on the whole pool before any item is decided (judgements.crowd).
MODEL_POLICIES = ("dawid-skene", "mace", "glad", "gold-weighted")


@dataclass(frozen=True)
class Policy:
    """A parsed aggregation policy: ``kind`` is the name of one of the `RULES`, one of the
    ``MODEL_POLICIES`` (with its ``fitted`` model once fitted), or ``rater`` (with ``rater`` set)."""

    kind: str
    rater: str | None = None
    fitted: Any = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"rater:{self.rater}" if self.kind == "rater" else self.kind


@dataclass(frozen=True)
class Aggregate:
    """The consensus of one item: ``grade`` is set iff ``state == "judged"``."""

    state: State
    grade: int | None
    tie: bool = False

    @property
    def qrels_grade(self) -> int:
        """The grade of the item's qrels line: its grade when judged, else -1 (trec_eval's "in the pool,
        unjudged": pending and unrateable items are never scored as irrelevant)."""
        return self.grade if self.state == JUDGED and self.grade is not None else -1


def parse_policy(policy: str | Policy) -> Policy:
    """Parse ``"majority"``, ``"median"``, ``"mean"`` or ``"rater:NAME"`` (NAME non-empty, kept verbatim
    after the first colon). ValueError with the accepted forms for anything else."""
    if isinstance(policy, Policy):
        return policy
    if not isinstance(policy, str):
        raise ValueError(f"aggregation policy must be a string, got {type(policy).__name__}")
    if policy in RULES or policy in MODEL_POLICIES:
        return Policy(policy)
    if policy.startswith("rater:"):
        name = policy[len("rater:") :]
        if not name.strip():
            raise ValueError("aggregation policy 'rater:NAME' needs a rater name after 'rater:'")
        return Policy("rater", name)
    expected = ", ".join(repr(name) for name in (*RULES, *MODEL_POLICIES))
    raise ValueError(f"unknown aggregation policy {policy!r}; expected {expected} or 'rater:NAME'")


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
    if parsed.kind in MODEL_POLICIES:
        decided = parsed.fitted.decide(judgements) if parsed.fitted is not None else None
        if decided is None:
            raise ValueError(f"policy {parsed.kind!r} decides only the votes it was fitted on (fit_policy)")
        grade, tie = decided
        return Aggregate(JUDGED, grade, tie or half_unrateable)
    grade, tie = RULES[parsed.kind](grades, n_unrateable)
    return Aggregate(JUDGED, grade, tie or half_unrateable)


def majority(grades: list[int], n_unrateable: int) -> tuple[int, bool]:
    """The most frequent grade, a tie going to the lower grade; a tie also when the unrateable votes are
    as many as the winner's."""
    counts = Counter(grades)
    top = max(counts.values())
    winners = [g for g, c in counts.items() if c == top]
    return min(winners), len(winners) > 1 or n_unrateable >= top


def median(grades: list[int], n_unrateable: int) -> tuple[int, bool]:
    """The lower median; a tie when the two middle grades of an even number differ."""
    n = len(grades)
    lower = grades[(n - 1) // 2]
    return lower, n % 2 == 0 and grades[n // 2] != lower


def mean(grades: list[int], n_unrateable: int) -> tuple[int, bool]:
    """The mean rounded half up, exactly; a tie when the mean lies halfway between two grades."""
    exact = Fraction(sum(grades), len(grades))
    return math.floor(exact + Fraction(1, 2)), exact.denominator == 2


#: A policy's rule: the graded votes of an item, sorted (at least one), and how many votes said
#: unrateable (at most half of them) → (the released grade, whether the rule broke a tie). A new policy is
#: one function added here: `parse_policy` accepts its name and `aggregate` (hence every release, the
#: current qrels and the evaluation on them) applies it after the rules common to every policy.
RULES: dict[str, Callable[[list[int], int], tuple[int, bool]]] = {
    "majority": majority,
    "median": median,
    "mean": mean,
}
#: The policy of a release, a report or a read that names none (a request's absent or blank `policy`:
#: `release_policy.read_policy`).
DEFAULT_POLICY = "majority"

"""The statistics of an interleaving experiment's preference (pure: numpy and scipy, no Django): counts of
outcomes, Δ_AB, the exact sign test, the user-clustered bootstrap interval, the summary of a set of
impressions and the power planner. The outcomes themselves (how lists are merged and clicks credited) are
`online.interleaving`'s.

Statistics
----------
* Δ_AB = (wins_A + ties / 2) / (wins_A + wins_B + ties) − 1/2 (Chapelle, Joachims, Radlinski and Yue,
  TOIS 2012): > 0 prefers A, < 0 prefers B, undefined (None) without any clicked impression.
* The exact sign test: under "no preference" wins_A ~ Binomial(wins_A + wins_B, 1/2); two-sided
  p = min(1, 2 · P(X ≤ min(wins_A, wins_B))). 115 wins against 85: p = 0.040.
* The interval of Δ_AB is a percentile bootstrap over **users** (every impression of a resampled user comes
  with them): one user's impressions are not independent, and resampling impressions would give an
  interval too narrow for the traffic.
* The power planner: how many impressions the exact sign test needs to detect a true Δ_AB, given the share
  of impressions that have a click and the share of clicked impressions that tie.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from online.interleaving import OUTCOMES, Outcome
from online.logformats import MAX_COUNT
from pooling.errors import Refused


@dataclass(frozen=True)
class Counts:
    """Outcomes of a set of impressions."""

    a: int = 0
    b: int = 0
    ties: int = 0
    none: int = 0

    @property
    def clicked(self) -> int:
        return self.a + self.b + self.ties

    @property
    def impressions(self) -> int:
        return self.clicked + self.none

    @property
    def delta_ab(self) -> float | None:
        """Δ_AB (module docstring); None without a clicked impression."""
        return delta_ab(self.a, self.b, self.ties)

    @property
    def p_value(self) -> float:
        return sign_test(self.a, self.b)

    @property
    def preferred(self) -> str:
        """``"A"``, ``"B"`` or ``"neither"`` (`preferred`)."""
        return preferred(self.delta_ab)


def preferred(delta: float | None) -> str:
    """The side a Δ_AB prefers: ``"A"`` above 0, ``"B"`` below, ``"neither"`` at 0 or undefined."""
    if delta is None or delta == 0:
        return "neither"
    return "A" if delta > 0 else "B"


def count(outcomes: Iterable[Outcome]) -> Counts:
    tally = dict.fromkeys(OUTCOMES, 0)
    for outcome in outcomes:
        tally[outcome] += 1
    return Counts(tally["A"], tally["B"], tally["tie"], tally["none"])


def delta_ab(wins_a: int, wins_b: int, ties: int) -> float | None:
    """Δ_AB = (wins_A + ties/2) / (wins_A + wins_B + ties) − 1/2; None when all three are 0."""
    total = wins_a + wins_b + ties
    if total == 0:
        return None
    return (wins_a + ties / 2) / total - 0.5


def sign_test(wins_a: int, wins_b: int) -> float:
    """The exact two-sided sign test of wins_A against wins_B (ties left out): p = min(1, 2·P(X ≤ min))
    with X ~ Binomial(wins_A + wins_B, 1/2); 1.0 when there is no decisive impression."""
    if wins_a < 0 or wins_b < 0:
        raise ValueError("wins cannot be negative")
    n = wins_a + wins_b
    if n == 0:
        return 1.0
    from scipy import stats  # here: scipy.stats takes a second to import, and every process loads this module

    return float(min(1.0, 2.0 * stats.binom.cdf(min(wins_a, wins_b), n, 0.5)))


@dataclass(frozen=True)
class Impression:
    """One impression's outcome, with the searcher it belongs to (the bootstrap's cluster) and its query."""

    user: Hashable
    qid: str
    outcome: Outcome


@dataclass(frozen=True)
class Summary:
    """The preference over a set of impressions: counts, Δ_AB with its user-clustered bootstrap interval,
    the sign test, and the same per query."""

    counts: Counts
    delta_ab: float | None
    interval: tuple[float, float] | None
    level: float
    p_value: float
    users: int
    per_query: dict[str, Counts] = field(default_factory=dict)


def clustered_interval(
    per_user: np.ndarray, *, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of Δ_AB, resampling users: `per_user` is a (users × 3) array of each
    user's (wins_A, wins_B, ties). A resample of N users with replacement is one multinomial draw of how
    many times each user is taken (equal in distribution), done in blocks so memory stays bounded.
    Resamples without any clicked impression are left out. None without a clicked impression at all."""
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    per_user = np.asarray(per_user, dtype=np.int64).reshape(-1, 3)
    per_user = per_user[per_user.sum(axis=1) > 0]
    users = len(per_user)
    if users == 0:
        return None
    rng = np.random.default_rng(seed)
    block = max(1, min(resamples, 2_000_000 // users))
    deltas: list[np.ndarray] = []
    done = 0
    while done < resamples:
        size = min(block, resamples - done)
        weights = rng.multinomial(users, np.full(users, 1.0 / users), size=size)
        sums = weights @ per_user  # (size × 3): wins_A, wins_B, ties of each resample
        total = sums.sum(axis=1)
        keep = total > 0
        deltas.append((sums[keep, 0] + sums[keep, 2] / 2) / total[keep] - 0.5)
        done += size
    values = np.concatenate(deltas)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def summarise(
    impressions: Iterable[Impression], *, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> Summary:
    """Counts, Δ_AB, its user-clustered interval, the sign test, and the per-query counts."""
    users: dict[Hashable, int] = {}
    queries: dict[str, int] = {}
    rows = [
        (
            users.setdefault(i.user, len(users)),
            queries.setdefault(i.qid, len(queries)),
            OUTCOMES.index(i.outcome),
        )
        for i in impressions
    ]
    table = np.array(rows, dtype=np.int64).reshape(-1, 3)
    return summarise_codes(
        table[:, 0], table[:, 1], table[:, 2], list(queries), resamples=resamples, level=level, seed=seed
    )


def summarise_codes(
    users: np.ndarray,
    queries: np.ndarray,
    outcomes: np.ndarray,
    query_names: Sequence[str],
    *,
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> Summary:
    """`summarise` over arrays, one entry per impression: the searcher (any integer code), the query (an
    index into `query_names`) and the outcome (its index in OUTCOMES: 0 A, 1 B, 2 tie, 3 none)."""
    outcomes = np.asarray(outcomes, dtype=np.int64)
    tally = np.bincount(outcomes, minlength=4)
    counts = Counts(int(tally[0]), int(tally[1]), int(tally[2]), int(tally[3]))
    _, user_index = np.unique(np.asarray(users), return_inverse=True)
    n_users = int(user_index.max()) + 1 if len(user_index) else 0
    per_user = np.stack(
        [np.bincount(user_index, weights=outcomes == c, minlength=n_users) for c in range(3)], axis=1
    ).astype(np.int64)
    by_query = np.bincount(
        np.asarray(queries, dtype=np.int64) * 4 + outcomes, minlength=4 * len(query_names)
    ).reshape(-1, 4)
    return Summary(
        counts=counts,
        delta_ab=counts.delta_ab,
        interval=clustered_interval(per_user, resamples=resamples, level=level, seed=seed),
        level=level,
        p_value=counts.p_value,
        users=n_users,
        per_query={
            name: Counts(*(int(v) for v in by_query[i]))
            for i, name in sorted(enumerate(query_names), key=lambda item: item[1])
            if by_query[i].sum()
        },
    )


# ------------------------------------------------------------------------------------------------ power


@dataclass(frozen=True)
class PowerPlan:
    """What the exact sign test needs to detect Δ_AB: `decisive` impressions won by A or B (not tied),
    hence `clicked` impressions with a click and `impressions` in all."""

    delta_ab: float
    win_share: float
    decisive: int
    clicked: int
    impressions: int
    alpha: float
    power: float
    achieved_power: float


def sign_test_power(n: int, win_share: float, alpha: float) -> float:
    """The power of the exact two-sided sign test at level `alpha` with `n` decisive impressions when A
    wins each with probability `win_share`."""
    if n <= 0:
        return 0.0
    return float(_powers(np.array([n], dtype=np.int64), win_share, alpha)[0])


def _critical(n: np.ndarray, alpha: float) -> np.ndarray:
    """For each of `n` (each ≥ 1), the largest c with 2·P(X ≤ c) ≤ alpha, X ~ Binomial(n, 1/2): the sign
    test rejects when min(wins_A, wins_B) ≤ c; −1 where no c is small enough."""
    from scipy import stats  # here, not at the top: see sign_test

    c = stats.binom.ppf(alpha / 2, n, 0.5).astype(np.int64)
    # ppf is the smallest c with P(X ≤ c) ≥ alpha/2, up to rounding: step to the largest within alpha
    high = 2 * stats.binom.cdf(c, n, 0.5) > alpha
    while high.any():
        c[high] -= 1
        high &= (c >= 0) & (2 * stats.binom.cdf(c, n, 0.5) > alpha)
    low = 2 * stats.binom.cdf(c + 1, n, 0.5) <= alpha
    while low.any():
        c[low] += 1
        low &= 2 * stats.binom.cdf(c + 1, n, 0.5) <= alpha
    return c


def _powers(n: np.ndarray, win_share: float, alpha: float) -> np.ndarray:
    """`sign_test_power` of each of `n` (each ≥ 1) at once: P(X ≤ c) + P(X ≥ n − c) under `win_share`,
    c the critical count (`_critical`); 0 where there is none."""
    from scipy import stats  # here, not at the top: see sign_test

    c = _critical(n, alpha)
    power = stats.binom.cdf(c, n, win_share) + stats.binom.sf(n - c - 1, n, win_share)
    return np.where(c >= 0, power, 0.0)


def _one_sided_power(n: int, win_share: float, size: float) -> float:
    """The power of the most powerful test of level `size` that A wins more often than B, on n decisive
    impressions: the randomised one that rejects when B wins few. By Neyman–Pearson it is at least the
    power of any test of that level, so it never decreases in n (with n + 1 impressions one may ignore
    one)."""
    from scipy import stats  # here, not at the top: see sign_test

    k = int(stats.binom.ppf(size, n, 0.5))  # the smallest k with P(Y ≤ k) ≥ size, up to rounding
    while k < n and stats.binom.cdf(k, n, 0.5) < size:
        k += 1
    while k > 0 and stats.binom.cdf(k - 1, n, 0.5) >= size:
        k -= 1
    below = stats.binom.cdf(k - 1, n, 0.5) if k > 0 else 0.0
    share = min(1.0, max(0.0, (size - below) / stats.binom.pmf(k, n, 0.5)))
    lose = 1 - win_share
    return float((stats.binom.cdf(k - 1, n, lose) if k > 0 else 0.0) + share * stats.binom.pmf(k, n, lose))


def _first(low: int, high: int, reaches: Callable[[int], bool]) -> int:
    """The smallest n in [low, high] for which `reaches(n)`, a predicate that never turns false again as n
    grows; high + 1 when there is none."""
    if not reaches(high):
        return high + 1
    while low < high:
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle + 1
    return low


def _no_power_below(win_share: float, alpha: float, power: float, most: int) -> int:
    """An n below which no number of decisive impressions gives the exact sign test `power` (most + 1 when
    none up to `most` does). Its power is P(B wins ≤ c) + P(A wins ≤ c): the first term is at most the
    one-sided power at level alpha/2 (`_one_sided_power`: that region has size ≤ alpha/2), and the second
    at most alpha/2 (its size). A bound that only grows with n, so a binary search finds where it reaches
    `power`; then, for n from there, the second term is bounded more tightly, by alpha/2 · (4pq)^c of that
    n's c (each term P(A wins k) is P_½(k) · (2p)^k (2q)^(n−k) ≤ P_½(k) · (4pq)^k for k ≤ c < n/2, and c
    only grows with n), and searched again."""
    start = _first(1, most, lambda n: _one_sided_power(n, win_share, alpha / 2) + alpha / 2 >= power)
    if start > most:
        return start
    c = int(_critical(np.array([start], dtype=np.int64), alpha)[0])
    if c < 0:
        return start
    slack = alpha / 2 * (4 * win_share * (1 - win_share)) ** c
    return _first(start, most, lambda n: _one_sided_power(n, win_share, alpha / 2) + slack >= power)


#: Most impressions a plan may ask for: what a count holds (the click logs' own limit).
MAX_IMPRESSIONS = MAX_COUNT


class PlanError(Refused, ValueError):
    """An argument `plan_power` cannot plan with; `field` names it. A `Refused`, so it is shown as every
    service's refusal is (`as_data` the API's 400 on the field, `add_to` beside the field of a page's form,
    the commands' error); a ValueError too, as a bad argument of a pure function is. (`pooling.errors` is
    as pure as this module: no Django.)"""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


#: The planner's level and power when none is given (the page's, the API's and the command's defaults).
ALPHA = 0.05
POWER = 0.8


def plan_power(
    delta: float,
    *,
    tie_share: float = 0.0,
    click_rate: float = 1.0,
    alpha: float = ALPHA,
    power: float = POWER,
    max_decisive: int = 10_000_000,
) -> PowerPlan:
    """Impressions needed for the exact sign test to detect a true Δ_AB of `delta` (either sign) with
    probability `power` at level `alpha`, when a share `click_rate` of impressions has a click and a share
    `tie_share` of those ties. Among decisive impressions A then wins with probability
    1/2 + Δ_AB / (1 − tie_share). The smallest n whose exact power reaches `power`; impressions are assumed
    independent (a user's correlated impressions need more: the bootstrap interval shows it afterwards).

    The exact power saw-tooths in n (it falls while the critical count stays, jumps when it grows), so the
    first n that reaches `power` is not found by stepping: every n is tried, from a bound below which none
    can reach it (`_no_power_below`), a block at a time.

    The one home of what can be planned: the page, the API and the command all ask this, and a
    `PlanError` (a `Refused` and a ValueError, naming its argument) is their refusal."""
    if not 0 < abs(delta) < 0.5:
        raise PlanError("delta", "delta must be between -0.5 and 0.5, and not 0")
    if not 0 <= tie_share < 1:
        raise PlanError("tie_share", "tie_share must be at least 0 and below 1")
    if not 0 < click_rate <= 1:
        raise PlanError("click_rate", "click_rate must be above 0 and at most 1")
    if not 0 < alpha < 1:
        raise PlanError("alpha", "alpha must be between 0 and 1")
    if not 0 < power < 1:
        raise PlanError("power", "power must be between 0 and 1")
    win_share = 0.5 + abs(delta) / (1 - tie_share)
    if win_share >= 1:
        raise PlanError(
            "delta", "delta is too large for this tie_share: A would win every decisive impression"
        )
    low = _no_power_below(win_share, alpha, power, max_decisive)
    block = max(1024, low // 512)  # the bound is within a few tenths of a percent of n, mostly: one block
    n = 0
    while not n:
        if low > max_decisive:
            raise PlanError("delta", f"more than {max_decisive:,} decisive impressions would be needed")
        candidates = np.arange(low, min(low + block, max_decisive + 1), dtype=np.int64)
        reached = np.flatnonzero(_powers(candidates, win_share, alpha) >= power)
        if len(reached):
            n = int(candidates[reached[0]])
        low += block
    achieved = sign_test_power(n, win_share, alpha)
    clicked = math.ceil(n / (1 - tie_share))
    needed = clicked / click_rate  # infinite for a click_rate of a few ulps
    impressions = math.ceil(needed) if math.isfinite(needed) else MAX_IMPRESSIONS + 1
    if impressions > MAX_IMPRESSIONS:
        raise PlanError(
            "click_rate",
            f"click_rate is too small: more than {MAX_IMPRESSIONS:,} impressions would be needed",
        )
    return PowerPlan(
        delta_ab=delta,
        win_share=win_share,
        decisive=n,
        clicked=clicked,
        impressions=impressions,
        alpha=alpha,
        power=power,
        achieved_power=achieved,
    )

"""Interleaving two rankers' lists, crediting clicks, and the statistics of the preference (pure: numpy and
scipy, no Django). Usable from a notebook.

Methods
-------
* **Team draft** (Radlinski, Kurup and Joachims, CIKM 2008). Before each round in which the two teams have
  placed the same number of documents, a fair coin says which ranker picks first; each picks its
  highest-ranked document not yet in the list. When one ranker has nothing new left, the other keeps
  picking. Every position records the team that placed it (``"A"`` or ``"B"``).
* **Identical-prefix rule** (team draft, on by default): the longest common prefix of A and B (the first
  k positions where both rank the same documents in the same order) is shown as is, its positions belong
  to no team (``"-"``), and the draft goes on after it. Both rankers would have shown those documents
  there, so a click on them says nothing about which is better; with the rule they cannot make noise
  either. With A = B every position is in the prefix: every clicked impression is a tie. Without the rule
  (``identical_prefix=False``, "plain credit"), the coin gives the first document to A or B, so a user
  who clicks it makes A win half the time and B the other half, never a tie.
* **Balanced** (Joachims 2002/2003), for comparison: the lists are merged alternately from the top, one
  coin saying who goes first, each skipping what is already shown. Positions record which ranker
  contributed them, but the credit does not use that: for the lowest clicked document d, k = min(rank of d
  in A, rank of d in B) (a document a list lacks ranks past its end), and A gets the clicks in A's top k,
  B those in B's top k. Its known bias: with A = [a,b,c,d], B = [b,c,d,a] and one uniformly random click,
  B wins 3 times in 4, although A and B differ only by where they put ``a``.

Credit rules (one impression)
-----------------------------
* A click names a 1-based position of the shown list; several clicks on one position count once.
* Team draft: a click on a position of team A gives A one point, team B gives B one; a click on an
  identical-prefix position (``"-"``) gives nobody a point.
* The impression's outcome: ``"A"`` if A has more points, ``"B"`` if B has more, ``"tie"`` if both have as
  many and there was at least one click (prefix-only clicks included), ``"none"`` without any click.
* ``"none"`` impressions are counted and shown but take no part in any statistic: nobody expressed a
  preference. Ties count in Δ_AB (half to each side) and are left out of the sign test.

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
import random
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np
from scipy import stats

Method = Literal["team_draft", "balanced"]
Outcome = Literal["A", "B", "tie", "none"]
METHODS: tuple[Method, ...] = ("team_draft", "balanced")
OUTCOMES: tuple[Outcome, ...] = ("A", "B", "tie", "none")
NO_TEAM = "-"
DEFAULT_LENGTH = 10


@dataclass(frozen=True)
class Interleaving:
    """One interleaved list: the documents in order and, per position, the team that placed it (``"A"``,
    ``"B"``, or ``"-"`` for the identical prefix). ``a`` and ``b`` are the input lists (balanced credit
    reads their ranks)."""

    method: Method
    docids: tuple[str, ...]
    teams: tuple[str, ...]
    a: tuple[str, ...] = ()
    b: tuple[str, ...] = ()
    prefix: int = 0

    def credit(self, clicks: Iterable[int]) -> Outcome:
        """The outcome of this impression for clicks on these 1-based positions (see the module's rules)."""
        if self.method == "balanced":
            return credit_balanced(self.docids, self.a, self.b, clicks)
        return credit_team_draft(self.teams, clicks)


class _NeedCoin(Exception):
    pass


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def common_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    """The length of the longest k with a[:k] == b[:k]."""
    k = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        k += 1
    return k


def _check(a: Sequence[str], b: Sequence[str], length: int) -> tuple[list[str], list[str]]:
    if length < 1:
        raise ValueError(f"length must be at least 1, not {length}")
    return _unique(a), _unique(b)


def _team_draft(
    a: Sequence[str], b: Sequence[str], length: int, coin: Callable[[], bool], identical_prefix: bool
) -> Interleaving:
    a, b = _check(a, b, length)
    shown: list[str] = []
    teams: list[str] = []
    seen: set[str] = set()
    prefix = min(common_prefix(a, b), length) if identical_prefix else 0
    for docid in a[:prefix]:
        shown.append(docid)
        teams.append(NO_TEAM)
        seen.add(docid)
    next_a = next_b = prefix
    size = {"A": 0, "B": 0}
    while len(shown) < length:
        while next_a < len(a) and a[next_a] in seen:
            next_a += 1
        while next_b < len(b) and b[next_b] in seen:
            next_b += 1
        a_left, b_left = next_a < len(a), next_b < len(b)
        if not (a_left or b_left):
            break
        # The coin is only asked for when both can pick and the teams are level (once per round).
        both = a_left and b_left
        a_turn = (size["A"] < size["B"] or (size["A"] == size["B"] and coin())) if both else a_left
        if a_turn:
            docid, team = a[next_a], "A"
        else:
            docid, team = b[next_b], "B"
        shown.append(docid)
        teams.append(team)
        seen.add(docid)
        size[team] += 1
    return Interleaving("team_draft", tuple(shown), tuple(teams), tuple(a), tuple(b), prefix)


def _balanced(a: Sequence[str], b: Sequence[str], length: int, coin: Callable[[], bool]) -> Interleaving:
    a, b = _check(a, b, length)
    a_first = coin()
    shown: list[str] = []
    teams: list[str] = []
    seen: set[str] = set()
    ka = kb = 0
    while len(shown) < length and (ka < len(a) or kb < len(b)):
        a_turn = kb >= len(b) or (ka < len(a) and (ka < kb or (ka == kb and a_first)))
        docid = a[ka] if a_turn else b[kb]
        if a_turn:
            ka += 1
        else:
            kb += 1
        if docid not in seen:
            shown.append(docid)
            teams.append("A" if a_turn else "B")
            seen.add(docid)
    return Interleaving("balanced", tuple(shown), tuple(teams), tuple(a), tuple(b), 0)


def interleave(
    a: Sequence[str],
    b: Sequence[str],
    *,
    method: Method = "team_draft",
    length: int = DEFAULT_LENGTH,
    rng: random.Random | None = None,
    identical_prefix: bool = True,
) -> Interleaving:
    """Interleave ranked lists `a` and `b` (docids, best first; repeats after the first are ignored) into
    at most `length` positions, the coins drawn from `rng` (a seeded ``random.Random`` makes it
    reproducible). `identical_prefix` applies to team draft only."""
    rng = rng or random.Random()  # noqa: S311 - a fair coin, not a secret

    def coin() -> bool:
        return rng.random() < 0.5

    if method == "team_draft":
        return _team_draft(a, b, length, coin, identical_prefix)
    if method == "balanced":
        return _balanced(a, b, length, coin)
    raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")


def all_interleavings(
    a: Sequence[str],
    b: Sequence[str],
    *,
    method: Method = "team_draft",
    length: int = DEFAULT_LENGTH,
    identical_prefix: bool = True,
) -> list[tuple[Fraction, Interleaving]]:
    """Every interleaving `interleave` can produce, with its exact probability (every sequence of coins
    the draft asks for, each coin fair). The probabilities sum to 1."""
    outcomes: list[tuple[Fraction, Interleaving]] = []
    pending: list[tuple[bool, ...]] = [()]
    while pending:
        coins = pending.pop()
        given = iter(coins)

        def coin(given: Iterable[bool] = given) -> bool:
            for value in given:
                return value
            raise _NeedCoin

        try:
            if method == "team_draft":
                result = _team_draft(a, b, length, coin, identical_prefix)
            elif method == "balanced":
                result = _balanced(a, b, length, coin)
            else:
                raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
        except _NeedCoin:
            pending += [(*coins, True), (*coins, False)]
            continue
        outcomes.append((Fraction(1, 2 ** len(coins)), result))
    return outcomes


def _positions(clicks: Iterable[int], n: int) -> list[int]:
    positions = sorted(set(clicks))
    for position in positions:
        if not 1 <= position <= n:
            raise ValueError(f"click on position {position}: the list shown has positions 1 to {n}")
    return positions


def _outcome(points_a: int, points_b: int, clicked: bool) -> Outcome:
    if not clicked:
        return "none"
    if points_a > points_b:
        return "A"
    if points_b > points_a:
        return "B"
    return "tie"


def credit_team_draft(teams: Sequence[str], clicks: Iterable[int]) -> Outcome:
    """Team-draft credit: one point per clicked position to its team, none for ``"-"`` (see the module)."""
    positions = _positions(clicks, len(teams))
    points_a = sum(1 for p in positions if teams[p - 1] == "A")
    points_b = sum(1 for p in positions if teams[p - 1] == "B")
    return _outcome(points_a, points_b, bool(positions))


def credit_balanced(
    docids: Sequence[str], a: Sequence[str], b: Sequence[str], clicks: Iterable[int]
) -> Outcome:
    """Balanced credit (Joachims): with d the lowest clicked document and k = min(rank_A(d), rank_B(d)),
    A's points are the clicked documents in A's top k, B's those in B's top k."""
    positions = _positions(clicks, len(docids))
    if not positions:
        return "none"
    rank_a = {d: i for i, d in enumerate(_unique(a), 1)}
    rank_b = {d: i for i, d in enumerate(_unique(b), 1)}
    clicked = {docids[p - 1] for p in positions}
    lowest = docids[positions[-1] - 1]
    k = min(rank_a.get(lowest, len(rank_a) + 1), rank_b.get(lowest, len(rank_b) + 1))
    points_a = sum(1 for d in clicked if rank_a.get(d, k + 1) <= k)
    points_b = sum(1 for d in clicked if rank_b.get(d, k + 1) <= k)
    return _outcome(points_a, points_b, True)


def outcome_probabilities(
    a: Sequence[str],
    b: Sequence[str],
    user: Callable[[Sequence[str]], Iterable[tuple[Fraction, Sequence[int]]]],
    *,
    method: Method = "team_draft",
    length: int = DEFAULT_LENGTH,
    identical_prefix: bool = True,
) -> dict[Outcome, Fraction]:
    """The exact probability of each outcome: every interleaving (``all_interleavings``) × every click
    pattern the `user` model gives for the list shown, as (probability, clicked 1-based positions)."""
    result: dict[Outcome, Fraction] = dict.fromkeys(OUTCOMES, Fraction(0))
    for p_list, shown in all_interleavings(
        a, b, method=method, length=length, identical_prefix=identical_prefix
    ):
        for p_clicks, clicks in user(shown.docids):
            result[shown.credit(clicks)] += p_list * Fraction(p_clicks)
    return result


# ------------------------------------------------------------------------------------------- statistics


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
        """``"A"``, ``"B"`` or ``"neither"`` (Δ_AB of 0 or undefined)."""
        delta = self.delta_ab
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
    # The largest c with 2·P(X ≤ c | 1/2) ≤ alpha: reject when min(wins) ≤ c.
    c = int(stats.binom.ppf(alpha / 2, n, 0.5))
    while c >= 0 and 2 * stats.binom.cdf(c, n, 0.5) > alpha:
        c -= 1
    while 2 * stats.binom.cdf(c + 1, n, 0.5) <= alpha:
        c += 1
    if c < 0:
        return 0.0
    return float(stats.binom.cdf(c, n, win_share) + stats.binom.sf(n - c - 1, n, win_share))


def plan_power(
    delta: float,
    *,
    tie_share: float = 0.0,
    click_rate: float = 1.0,
    alpha: float = 0.05,
    power: float = 0.8,
    max_decisive: int = 10_000_000,
) -> PowerPlan:
    """Impressions needed for the exact sign test to detect a true Δ_AB of `delta` (either sign) with
    probability `power` at level `alpha`, when a share `click_rate` of impressions has a click and a share
    `tie_share` of those ties. Among decisive impressions A then wins with probability
    1/2 + Δ_AB / (1 − tie_share). The smallest n whose exact power reaches `power` (searched from the
    normal approximation); impressions are assumed independent (a user's correlated impressions need
    more: the bootstrap interval shows it afterwards)."""
    if not 0 < abs(delta) < 0.5:
        raise ValueError("delta must be between -0.5 and 0.5, and not 0")
    if not 0 <= tie_share < 1:
        raise ValueError("tie_share must be at least 0 and below 1")
    if not 0 < click_rate <= 1:
        raise ValueError("click_rate must be above 0 and at most 1")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    if not 0 < power < 1:
        raise ValueError("power must be between 0 and 1")
    win_share = 0.5 + abs(delta) / (1 - tie_share)
    if win_share >= 1:
        raise ValueError("delta is too large for this tie_share: A would win every decisive impression")
    z_alpha, z_power = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    spread = math.sqrt(win_share * (1 - win_share))
    edge = win_share - 0.5
    guess = ((z_alpha * 0.5 + z_power * spread) / edge) ** 2 if edge > 0 else math.inf
    if not guess * 0.8 <= max_decisive:
        raise ValueError(f"more than {max_decisive:,} decisive impressions would be needed")
    n = max(1, int(guess * 0.8))
    # The exact power saw-tooths in n: from below the approximation, walk up to the first n that reaches it.
    achieved = sign_test_power(n, win_share, alpha)
    while n > 1 and achieved >= power:
        n = max(1, n // 2)
        achieved = sign_test_power(n, win_share, alpha)
    while achieved < power:
        n += 1 if n < 2000 else max(1, n // 2000)
        if n > max_decisive:
            raise ValueError(f"more than {max_decisive:,} decisive impressions would be needed")
        achieved = sign_test_power(n, win_share, alpha)
    clicked = math.ceil(n / (1 - tie_share))
    return PowerPlan(
        delta_ab=delta,
        win_share=win_share,
        decisive=n,
        clicked=clicked,
        impressions=math.ceil(clicked / click_rate),
        alpha=alpha,
        power=power,
        achieved_power=achieved,
    )

"""Interleaving two rankers' lists and crediting clicks (pure: no Django). Usable from a notebook.

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

The statistics of the preference (Δ_AB, the sign test, the user-clustered interval, the power planner)
are `online.preference`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

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

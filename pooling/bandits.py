"""The bandit choosers: runs as arms, MaxMean and Thompson sampling (Losada, Parapar & Barreiro 2016-17).

Pure (no Django); registered in :data:`pooling.choosers.CHOOSERS` as ``bandit-maxmean`` and
``bandit-thompson``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pooling.choosers import Chooser, _is_relevant, register


class _BanditChooser(Chooser):
    """Runs as arms (Losada, Parapar & Barreiro 2016-17).

    Pulling arm r judges r's best-ranked unjudged document within ``depth`` (the whole list when ``depth``
    is None); documents already judged are skipped at no cost. Arms with nothing left are out. The reward
    is 1 if the grade is ``>= relevance_level`` and 0 otherwise (unrateable = 0), and — as in Losada et
    al.'s formulation — it updates **only the pulled arm**, even when other runs retrieved the same
    document; those runs simply skip it later. External judgements reward no arm.
    """

    def _start(self) -> None:
        self._rel: dict[str, int] = dict.fromkeys(self._runs, 0)
        self._nonrel: dict[str, int] = dict.fromkeys(self._runs, 0)

    def _pick(self, arms: list[str]) -> str:
        raise NotImplementedError

    def _choose(self) -> tuple[str | None, str] | None:
        arms = self._live_runs()
        if not arms:
            return None
        arm = self._pick(arms)
        docid = self._next_unjudged(arm)
        assert docid is not None
        return arm, docid

    def _update(self, run: str | None, grade: int | None) -> None:
        assert run is not None
        if _is_relevant(grade, self.relevance_level):
            self._rel[run] += 1
        else:
            self._nonrel[run] += 1

    def _extra_state(self) -> dict[str, Any]:
        return {"rel": dict(self._rel), "nonrel": dict(self._nonrel)}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        if set(state["rel"]) != set(self._runs) or set(state["nonrel"]) != set(self._runs):
            raise ValueError("the state's runs differ from the ranked lists' runs")
        self._rel = {run: int(state["rel"][run]) for run in self._runs}
        self._nonrel = {run: int(state["nonrel"][run]) for run in self._runs}


@register
class MaxMeanChooser(_BanditChooser):
    """MaxMean bandit: pull the live arm maximising (1 + rel) / (2 + rel + nonrel).

    That is the posterior mean of a Beta(1, 1) prior updated with the arm's rewards. Exact ties (compared
    in integer arithmetic) are broken uniformly by the seeded generator: ``rng.integers(len(tied))`` over
    the tied arms in sorted name order; no random number is drawn when one arm leads.
    """

    strategy = "bandit-maxmean"

    def _pick(self, arms: list[str]) -> str:
        def beats(a: str, b: str) -> int:
            # sign of mean(a) - mean(b) without floating point
            left = (1 + self._rel[a]) * (2 + self._rel[b] + self._nonrel[b])
            right = (1 + self._rel[b]) * (2 + self._rel[a] + self._nonrel[a])
            return (left > right) - (left < right)

        tied = [arms[0]]
        for arm in arms[1:]:
            sign = beats(arm, tied[0])
            if sign > 0:
                tied = [arm]
            elif sign == 0:
                tied.append(arm)
        return tied[0] if len(tied) == 1 else tied[int(self._rng.integers(len(tied)))]


@register
class ThompsonChooser(_BanditChooser):
    """Thompson-sampling bandit: pull the live arm with the largest draw from Beta(1 + rel, 1 + nonrel).

    One vectorised ``rng.beta(a, b)`` call per choice over the live arms in sorted name order; ties
    (probability zero) go to the first.
    """

    strategy = "bandit-thompson"

    def _pick(self, arms: list[str]) -> str:
        a = np.array([1 + self._rel[arm] for arm in arms], dtype=float)
        b = np.array([1 + self._nonrel[arm] for arm in arms], dtype=float)
        return arms[int(np.argmax(self._rng.beta(a, b)))]

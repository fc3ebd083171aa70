"""Click simulators, pure numpy (no Django): the position-based and cascade users of the literature,
with RandTop-n and swap-k interventions. Used by the tests, the benchmark and the demo.

- PBM (Richardson et al. 2007; Chuklin et al. 2015): position k examined with probability θ_k, an examined
  document clicked with probability γ(grade); clicks are independent across positions.
- Cascade (Craswell et al. 2008): the user reads top down, clicks the first document found attractive
  (probability γ(grade)) and stops; nothing below the click is examined.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from online.propensity import Counts

#: θ of the known answers (issue 14): ten positions.
THETA = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06)
#: γ by grade 0..4 of the known answers.
GAMMA_BY_GRADE = (0.10, 0.16, 0.28, 0.52, 1.0)


@dataclass
class Sessions:
    """S simulated result pages: the query, the logger, the shown documents (indices into the query's
    candidates, K per page, position 1 first) and the clicks."""

    query: NDArray[np.int64]
    logger: NDArray[np.int64]
    shown: NDArray[np.int64]
    clicks: NDArray[np.bool_]
    n_docs: int

    def counts(self) -> Counts:
        """The PBM's sufficient statistics of these sessions (pair = query * n_docs + doc)."""
        s, k = self.shown.shape
        pair = (self.query[:, None] * self.n_docs + self.shown).ravel()
        position = np.tile(np.arange(1, k + 1), s)
        logger = np.repeat(self.logger, k)
        key = (pair * k + position - 1) * (int(self.logger.max()) + 1) + logger
        uniq, inv = np.unique(key, return_inverse=True)
        n_loggers = int(self.logger.max()) + 1
        cells_logger = uniq % n_loggers
        rest = uniq // n_loggers
        cells_pair, cells_pos = rest // k, rest % k + 1
        return Counts.from_cells(
            cells_pair,
            cells_pos,
            np.bincount(inv),
            np.bincount(inv, weights=self.clicks.ravel().astype(np.float64)),
            query=cells_pair // self.n_docs,
            logger=cells_logger,
        )


def pbm_clicks(
    rng: np.random.Generator, theta: Sequence[float], gamma: NDArray[np.float64]
) -> NDArray[np.bool_]:
    """Clicks of PBM users on pages whose shown documents have attractiveness `gamma` (S × K)."""
    examine = np.asarray(theta, dtype=np.float64)[: gamma.shape[1]]
    return rng.random(gamma.shape) < examine[None, :] * gamma


def cascade_clicks(rng: np.random.Generator, gamma: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Clicks of cascade users: at most one, on the first attractive document from the top."""
    attractive = rng.random(gamma.shape) < gamma
    first = np.argmax(attractive, axis=1)
    clicks = np.zeros_like(attractive)
    hit = attractive.any(axis=1)
    clicks[np.flatnonzero(hit), first[hit]] = True
    return clicks


def simulate(
    rng: np.random.Generator,
    *,
    rankings: Sequence[NDArray[np.int64]],
    gamma: NDArray[np.float64],
    sessions: int,
    theta: Sequence[float] = THETA,
    model: str = "pbm",
    intervention: str = "",
) -> Sessions:
    """Simulate `sessions` result pages. `rankings[l]` is logger l's ranking, Q × K document indices;
    `gamma[q, d]` is document d's attractiveness for query q. Each page picks a query and a logger
    uniformly. `intervention`: "randtop" shuffles the K shown uniformly; "swap" swaps position 1 with a
    uniformly drawn k in 1..K (k = 1: no swap, the control)."""
    ranks = np.stack([np.asarray(r, dtype=np.int64) for r in rankings])
    n_loggers, n_queries, k = ranks.shape
    query = rng.integers(0, n_queries, sessions)
    logger = rng.integers(0, n_loggers, sessions)
    shown = ranks[logger, query].copy()
    if intervention == "randtop":
        shown = np.take_along_axis(shown, rng.random((sessions, k)).argsort(axis=1), axis=1)
    elif intervention == "swap":
        other = rng.integers(0, k, sessions)
        rows = np.arange(sessions)
        first = shown[:, 0].copy()
        shown[:, 0] = shown[rows, other]
        shown[rows, other] = first
    elif intervention:
        raise ValueError(f"unknown intervention {intervention!r}")
    attractiveness = gamma[query[:, None], shown]
    if model == "pbm":
        clicks = pbm_clicks(rng, theta, attractiveness)
    elif model == "cascade":
        clicks = cascade_clicks(rng, attractiveness)
    else:
        raise ValueError(f"unknown click model {model!r}")
    return Sessions(query=query, logger=logger, shown=shown, clicks=clicks, n_docs=int(gamma.shape[1]))


def gamma_from_grades(
    grades: NDArray[np.int64], by_grade: Sequence[float] = GAMMA_BY_GRADE
) -> NDArray[np.float64]:
    """Attractiveness of each (query, document) from its grade."""
    return np.asarray(by_grade, dtype=np.float64)[grades]


def jsonl_lines(
    sim: Sessions,
    *,
    qids: Sequence[str],
    docids: Sequence[Sequence[str]],
    loggers: Sequence[str],
    users: int = 0,
    start: int = 0,
) -> Iterator[str]:
    """The sessions as lines of the impressions JSONL format (one page per line, `online.logformats`)."""
    for i in range(len(sim.query)):
        q = int(sim.query[i])
        names = docids[q]
        line = {
            "session": f"s{start + i}",
            "qid": qids[q],
            "ranker": loggers[int(sim.logger[i])],
            "docids": [names[int(d)] for d in sim.shown[i]],
            "clicks": [int(p) + 1 for p in np.flatnonzero(sim.clicks[i])],
        }
        if users:
            line["user"] = f"u{(start + i) % users}"
        yield json.dumps(line, separators=(",", ":"))

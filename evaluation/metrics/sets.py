"""Counts and set measures: computed on the evaluated list as a set, its order ignored (num_ret, num_rel,
num_rel_ret, num_nonrel_judged_ret, set_P, set_recall, set_relative_P, set_map, set_F, utility)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evaluation.metrics.ranked import Ranked, _safe_div


def num_ret(ranked: Ranked) -> np.ndarray:
    """Number of documents in the evaluated list (after the depth limit, and condensing if asked)."""
    return np.diff(ranked.offsets).astype(np.float64)


def num_rel(ranked: Ranked) -> np.ndarray:
    """R: judged documents of the topic with grade >= the relevance level, retrieved or not."""
    return ranked.num_rel.astype(np.float64)


def num_rel_ret(ranked: Ranked) -> np.ndarray:
    """Relevant documents (grade >= the level) in the evaluated list."""
    return ranked.count(ranked.relevant.topic)


def num_nonrel_judged_ret(ranked: Ranked) -> np.ndarray:
    """Judged non-relevant documents (0 <= grade < the level) in the evaluated list."""
    return ranked.count(ranked.nonrelevant.topic)


def set_P(ranked: Ranked) -> np.ndarray:
    """Set precision: relevant retrieved / retrieved (0 if nothing is retrieved)."""
    return _safe_div(num_rel_ret(ranked), num_ret(ranked))


def set_recall(ranked: Ranked) -> np.ndarray:
    """Set recall: relevant retrieved / R (0 if R = 0)."""
    return _safe_div(num_rel_ret(ranked), ranked.num_rel.astype(np.float64))


def set_relative_P(ranked: Ranked) -> np.ndarray:
    """Set relative precision: relevant retrieved / min(retrieved, R) (0 if either is 0)."""
    return _safe_div(num_rel_ret(ranked), np.minimum(num_ret(ranked), ranked.num_rel.astype(np.float64)))


def set_map(ranked: Ranked) -> np.ndarray:
    """Set map: relevant retrieved² / (retrieved · R) (0 if either is 0), i.e. set precision × set recall."""
    found = num_rel_ret(ranked)
    return _safe_div(found * found, num_ret(ranked) * ranked.num_rel)


def set_F(ranked: Ranked, beta: float = 1.0) -> np.ndarray:
    """Set F (trec_eval's set_F with parameter β, default 1): (β + 1)·P·R / (β·P + R) with P = set precision
    and R = set recall; 0 when nothing is retrieved, R = 0 or no relevant document is retrieved."""
    p, r = set_P(ranked), set_recall(ranked)
    return _safe_div((beta + 1.0) * p * r, beta * p + r)


def utility(ranked: Ranked, params: Sequence[float] = (1.0, -1.0, 0.0, 0.0)) -> np.ndarray:
    """Set utility (trec_eval's utility.p1,p2,p3,p4, default 1,-1,0,0): p1·relevant retrieved + p2·other
    retrieved + p3·relevant not retrieved + p4·(−retrieved − R + relevant retrieved), the last term with
    trec_eval's -N 0 (no collection size). A topic the run lacks (under -c) is 0, as trec_eval resets it."""
    p1, p2, p3, p4 = params  # four: `measures` checks a measure's parameters as it reads them
    found, ret, r = num_rel_ret(ranked), num_ret(ranked), ranked.num_rel.astype(np.float64)
    value = p1 * found + p2 * (ret - found) + p3 * (r - found) + p4 * (found - ret - r)
    return np.where(ranked.present, value, 0.0)

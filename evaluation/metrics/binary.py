"""Binary-relevance measures of the ranked list: a document is relevant (grade >= the relevance level) or
not, and its rank counts (P, recall, recip_rank, map, Rprec, bpref, infAP, iprec_at_recall, 11pt_avg,
Rprec_mult, map_cut, success, relative_P, binG); with the share of judged and unjudged documents at a
cutoff (judged, unj) and relstring, the labels of the top of each list."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from evaluation.metrics.ranked import UNJUDGED, UNPOOLED, Ranked, _safe_div

INFAP_EPSILON = 0.00001  # trec_eval's INFAP_EPSILON
#: trec_eval's recall fractions for iprec_at_recall and 11pt_avg.
IPREC_FRACTIONS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def P_k(ranked: Ranked, k: int) -> np.ndarray:
    """Precision at k: relevant documents among ranks 1..k, divided by k (by k even when fewer than k were
    retrieved). Unjudged documents count as non-relevant."""
    rel = ranked.relevant
    return ranked.count(rel.topic[rel.rank <= k]) / k


def recall_k(ranked: Ranked, k: int) -> np.ndarray:
    """Recall at k: relevant documents among ranks 1..k, divided by R (0 if R = 0)."""
    rel = ranked.relevant
    return _safe_div(ranked.count(rel.topic[rel.rank <= k]), ranked.num_rel)


def recip_rank(ranked: Ranked) -> np.ndarray:
    """Reciprocal rank: 1 / rank of the first relevant document, 0 if none is retrieved."""
    out = np.zeros(ranked.n_topics, dtype=np.float64)
    rel = ranked.relevant
    if len(rel.rows):
        first = np.flatnonzero(np.concatenate(([True], rel.topic[1:] != rel.topic[:-1])))
        out[rel.topic[first]] = 1.0 / rel.rank[first]
    return out


def map(ranked: Ranked) -> np.ndarray:  # noqa: A001 - trec_eval's name
    """Average precision: Σ over relevant retrieved documents of (relevant documents at or above it) / its
    rank, divided by R (0 if R = 0). Unretrieved relevant documents thus contribute 0."""
    rel = ranked.relevant
    precision = ranked.rank_among(rel) / rel.rank
    return _safe_div(ranked.count(rel.topic, precision), ranked.num_rel)


def Rprec(ranked: Ranked) -> np.ndarray:
    """R-precision: relevant documents among ranks 1..R, divided by R (0 if R = 0)."""
    rel = ranked.relevant
    r = ranked.num_rel
    return _safe_div(ranked.count(rel.topic[rel.rank <= r[rel.topic]]), r)


def bpref(ranked: Ranked) -> np.ndarray:
    """bpref (Buckley & Voorhees 2004, trec_eval's m_bpref.c): (1/R) Σ over relevant retrieved documents r
    of [1 − min(n_above(r), R) / min(N, R)], where n_above(r) counts judged non-relevant documents
    (0 <= grade < level) ranked above r and the term is 1 when n_above(r) = 0. Unjudged documents are
    skipped: they neither count nor shift anything. 0 if R = 0."""
    rel = ranked.relevant
    above = ranked.count_above(ranked.nonrelevant.rows, rel).astype(np.float64)
    r = ranked.num_rel[rel.topic].astype(np.float64)
    n = ranked.num_nonrel[rel.topic].astype(np.float64)
    term = np.ones(len(above))
    some = above > 0
    term[some] = 1.0 - np.minimum(above[some], r[some]) / np.minimum(n[some], r[some])
    return _safe_div(ranked.count(rel.topic, term), ranked.num_rel)


def infAP(ranked: Ranked) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam 2006), exactly as trec_eval's m_infap.c. For the relevant document at
    0-based position j (positions count every retrieved document), with rel, nonrel and unj the relevant,
    judged non-relevant and in-pool-unjudged (negative grade) documents above it and ε = 1e-5:
    term = 1 if j = 0, else 1/(j+1) + (j/(j+1)) · ((rel + nonrel + unj)/j) · ((rel + ε)/(rel + nonrel + 2ε)).
    infAP = Σ term / R (0 if R = 0). Documents absent from the qrels are skipped in the counts."""
    rel = ranked.relevant
    j = (rel.rank - 1).astype(np.float64)
    rel_above = (ranked.rank_among(rel) - 1).astype(np.float64)
    nonrel_above = ranked.count_above(ranked.nonrelevant.rows, rel)
    unj_above = ranked.count_above(np.flatnonzero(ranked.label == UNJUDGED), rel)
    term = np.ones(len(j))
    later = j > 0
    jl = j[later]
    ra = rel_above[later]
    na = nonrel_above[later].astype(np.float64)
    ua = unj_above[later].astype(np.float64)
    term[later] = 1.0 / (jl + 1.0) + (jl / (jl + 1.0)) * ((ra + na + ua) / jl) * (
        (ra + INFAP_EPSILON) / (ra + na + 2 * INFAP_EPSILON)
    )
    return _safe_div(ranked.count(rel.topic, term), ranked.num_rel)


def judged_k(ranked: Ranked, k: int) -> np.ndarray:
    """Judged at k: documents among ranks 1..k with a grade >= 0 in the qrels, divided by k. A negative
    qrels grade (in the pool, not judged) is NOT judged. Computed on the evaluated list, so under
    ``condensed`` it is the share of the k slots that judged documents fill."""
    judged = ranked.judged_rows
    return ranked.count(judged.topic[judged.rank <= k]) / k


def _interpolated_precision(ranked: Ranked, fractions: Iterable[float]) -> np.ndarray:
    """Interpolated precision (max precision at this or any later rank) at each recall fraction: an
    (n_topics, n_fractions) array. The fraction p of R relevant documents is the count c = floor(p·R + 0.9)
    (trec_eval 9.0.8 and 10 alike); the value is the highest precision at or after the
    c-th relevant retrieved document (c = 0: after the first), 0 if fewer than c were retrieved. An empty
    list (a topic the run lacks under -c, or nothing judged left under -J) gives NaN where c = 0, as
    trec_eval's 0/0 does."""
    suffix, first, found = ranked.interpolation
    r = ranked.num_rel.astype(np.float64)
    # trec_eval 10 scores a topic the run lacks (-c) on a one-document stand-in ranking that is not in the
    # pool: precision 0, not 0/0; only -J can leave that list (or any other) empty.
    empty = (np.diff(ranked.offsets) == 0) & (ranked.present | ranked.condensed)
    fractions = list(fractions)
    out = np.zeros((ranked.n_topics, len(fractions)), dtype=np.float64)
    for j, p in enumerate(fractions):
        c = fraction_count(p, r)
        ok = (found > 0) & (c <= found)
        out[ok, j] = suffix[first[ok] + np.maximum(c[ok] - 1, 0)]
        out[empty & (c == 0), j] = math.nan  # trec_eval divides 0 by 0 retrieved here
    return out


def fraction_count(p: float, r: np.ndarray) -> np.ndarray:
    """How many relevant documents a fraction p of R stands for: trec_eval's (long) (p * R + 0.9), in
    9.0.8 and 10 alike (m_iprec_at_recall.c, m_11pt_avg.c, m_Rprec_mult.c)."""
    return np.floor(p * r + 0.9).astype(np.int64)


def iprec_at_recall(ranked: Ranked, p: float) -> np.ndarray:
    """Interpolated precision at recall p (trec_eval's iprec_at_recall_p): with c = floor(p·R + 0.9)
    (trec_eval's (long) (p * R + 0.9)), the highest precision P@n over every rank n at or
    after the c-th relevant retrieved document (c = 0: the highest anywhere), 0 if fewer than c relevant
    documents are retrieved or R = 0; NaN where nothing is retrieved and c = 0 (trec_eval's 0/0)."""
    return _interpolated_precision(ranked, [p])[:, 0]


def eleven_pt_avg(ranked: Ranked, fractions: Iterable[float] = ()) -> np.ndarray:
    """11-point average (trec_eval's 11pt_avg): the mean of iprec_at_recall over the recall fractions
    (default 0.0, 0.1, ..., 1.0); NaN when nothing is retrieved (see iprec_at_recall)."""
    fractions = tuple(fractions) or IPREC_FRACTIONS
    return _interpolated_precision(ranked, fractions).mean(axis=1)


def _precision_at(ranked: Ranked, cut: np.ndarray) -> np.ndarray:
    """Per topic: relevant documents among ranks 1..cut[t], divided by cut[t] (0 where cut[t] = 0)."""
    rel = ranked.relevant
    within = ranked.count(rel.topic[rel.rank <= cut[rel.topic]])
    return _safe_div(within, cut.astype(np.float64))


def Rprec_mult(ranked: Ranked, p: float) -> np.ndarray:
    """R-precision at a multiple of R (trec_eval's Rprec_mult_p): P@c with c = floor(p·R + 0.9), counting
    the c slots even beyond the end of the list; 0 if c = 0."""
    return _precision_at(ranked, fraction_count(p, ranked.num_rel.astype(np.float64)))


def map_cut_k(ranked: Ranked, k: int) -> np.ndarray:
    """Average precision cut at k: Σ over relevant documents at ranks 1..k of P@rank, divided by R
    (0 if R = 0)."""
    rel = ranked.relevant
    precision = ranked.rank_among(rel) / rel.rank
    within = rel.rank <= k
    return _safe_div(ranked.count(rel.topic[within], precision[within]), ranked.num_rel)


def success_k(ranked: Ranked, k: int) -> np.ndarray:
    """Success at k: 1 if a relevant document is among ranks 1..k, else 0."""
    rel = ranked.relevant
    return (ranked.count(rel.topic[rel.rank <= k]) > 0).astype(np.float64)


def relative_P_k(ranked: Ranked, k: int) -> np.ndarray:
    """Relative precision at k: relevant documents among ranks 1..k, divided by min(k, R) (0 if R = 0)."""
    rel = ranked.relevant
    return _safe_div(ranked.count(rel.topic[rel.rank <= k]), np.minimum(ranked.num_rel, k).astype(np.float64))


def binG(ranked: Ranked) -> np.ndarray:
    """binG (trec_eval, experimental): Σ over relevant retrieved documents of 1 / log2(2 + n), n = the
    documents above it that are not relevant (unjudged ones included), divided by R (0 if none found)."""
    rel = ranked.relevant
    above = (rel.rank - ranked.rank_among(rel)).astype(np.float64)
    return _safe_div(ranked.count(rel.topic, 1.0 / np.log2(2.0 + above)), ranked.num_rel.astype(np.float64))


def unj_k(ranked: Ranked, k: int) -> np.ndarray:
    """Unjudged at k (trec_eval's unj): documents among ranks 1..k absent from the qrels or with a negative
    grade, divided by k (by k even when fewer were retrieved)."""
    judged = ranked.judged_rows  # the few judged rows: the retrieved top k less those
    top_k = np.minimum(np.diff(ranked.offsets), k)
    return (top_k - ranked.count(judged.topic[judged.rank <= k])) / k


def relstring(ranked: Ranked, n: int = 10) -> list[str]:
    """The labels of the first n documents of each list as one character each (trec_eval's relstring):
    the grade 0-9, '>' above 9, '-' absent from the qrels, '.' a negative grade."""
    n = max(n, 0)
    if n == 0 or not len(ranked.label):
        return [""] * ranked.n_topics
    # All topics at once: an (n_topics, n) matrix of characters, NUL past a list's end (a bytes_ value
    # ends at its first trailing NUL).
    starts = ranked.offsets[:-1]
    position = starts[:, None] + np.arange(n)
    labels = ranked.label[np.minimum(position, len(ranked.label) - 1)]
    chars = np.full(labels.shape, ord("<"), dtype=np.uint8)
    digits = (labels >= 0) & (labels <= 9)
    chars[digits] = (labels[digits] + ord("0")).astype(np.uint8)
    chars[labels > 9] = ord(">")
    chars[labels == UNPOOLED] = ord("-")
    chars[labels == UNJUDGED] = ord(".")
    chars[position >= ranked.offsets[1:, None]] = 0
    return [text.decode("ascii") for text in chars.view(f"S{n}").reshape(-1).tolist()]

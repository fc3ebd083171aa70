"""Graded measures: the gain of each document depends on its grade (ndcg, ndcg_cut, dcg, ideal_dcg, G,
ndcg_rel, Rndcg, rbp), with trec_eval's gain maps (``ndcg.1=3,2=9``) and its ideal ranking; and rbp_resid,
the RBP the unjudged documents could still add."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from evaluation.metrics.ranked import Gain, Ranked, Rows, _safe_div


def _dcg(ranked: Ranked, k: int | None, gain: Gain) -> np.ndarray:
    return _sum_to(ranked, *ranked.dcg_terms(gain), k)


def _ideal_dcg(ranked: Ranked, k: int | None, gain: Gain) -> np.ndarray:
    return _sum_to(ranked, *ranked.ideal_dcg_terms(gain), k)


def _sum_to(
    ranked: Ranked, topic: np.ndarray, rank: np.ndarray, terms: np.ndarray, k: int | None
) -> np.ndarray:
    """Per topic: the sum of the terms at ranks 1..k (all of them if k is None), in rank order."""
    if k is None:
        return ranked.count(topic, terms)
    within = rank <= k
    return ranked.count(topic[within], terms[within])


def ndcg(ranked: Ranked, gain: Gain = "linear", gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """nDCG over the whole list: DCG = Σ_i gain(grade_i) / log2(i + 1) over ranks i = 1, 2, ...; gain
    ``linear`` = the grade (trec_eval's), ``exp`` = 2^grade − 1; unjudged documents and grades <= 0 gain 0.
    Divided by the DCG of the ideal ranking — every judged document of the topic (grade >= 0, retrieved or
    not) by grade descending — or 0 if that is 0. Ties in the run were already broken by docid.

    ``gain_map`` is trec_eval's ``ndcg.1=3,2=9,4=4.5``: the gain of each listed grade (any real number,
    grade 0 included), every other grade >= 0 gaining its own value and unjudged documents 0; the ideal
    ranking then orders the judged documents by gain, descending, and stops at the first gain <= 0."""
    if gain_map is None:
        return _safe_div(_dcg(ranked, None, gain), _ideal_dcg(ranked, None, gain))
    return _ndcg_mapped(ranked, gain_map)


def _mapped_gains(grades: np.ndarray, gain_map: Mapping[int, float]) -> np.ndarray:
    out = np.where(grades >= 0, grades, 0).astype(np.float64)
    for grade, value in gain_map.items():
        out[grades == grade] = value
    return out


def _trec_level_order(levels: int, gain_map: Mapping[int, float]) -> list[int]:
    """The relevance levels from the highest gain down, as trec_eval's ideal ranking walks them.

    setup_gains (gain_init.c) lists the levels named by the map (in the order given), then the other
    levels 0..levels-1, and qsorts them with ``return (ptr1->gain - ptr2->gain)``: the difference is
    truncated to an int, so two gains less than 1 apart compare equal and keep the order the (glibc,
    merge sort) qsort leaves them in. This is that sort, step for step."""
    entries = [(g, float(v)) for g, v in gain_map.items()]
    named = {g for g, _ in entries}
    entries += [(g, float(g)) for g in range(levels) if g not in named]

    def msort(items: list[tuple[int, float]]) -> list[tuple[int, float]]:
        if len(items) <= 1:
            return items
        half = len(items) // 2
        left, right = msort(items[:half]), msort(items[half:])
        out: list[tuple[int, float]] = []
        while left and right:
            out.append(left.pop(0) if int(left[0][1] - right[0][1]) <= 0 else right.pop(0))
        return out + left + right

    return [g for g, _ in reversed(msort(entries))]


def _trec_ideal_gains(ranked: Ranked, gain_map: Mapping[int, float]) -> np.ndarray:
    """Per topic at ``Ranked.judged_offsets``: the gain of every judged document in trec_eval's ideal order
    (``_trec_level_order``), 0 from the first gain <= 0 on (trec_eval's ideal stops there)."""
    itopic = ranked.ideal_positions[0]
    grades = ranked.judged
    levels = np.zeros(ranked.n_topics, dtype=np.int64)
    has = np.diff(ranked.judged_offsets) > 0
    levels[has] = grades[ranked.judged_offsets[:-1][has]] + 1  # judged is by grade descending
    key = np.zeros(len(grades), dtype=np.int64)
    for n in np.unique(levels[itopic]).tolist():
        position = {g: i for i, g in enumerate(_trec_level_order(int(n), gain_map))}
        at = levels[itopic] == n
        key[at] = [position[g] for g in grades[at].tolist()]
    order = np.lexsort((key, itopic))
    ideal = _mapped_gains(grades[order], gain_map)
    stopped = _within_topic_cumsum(itopic, (ideal <= 0).astype(np.float64)) > 0
    return np.where(stopped, 0.0, ideal)


def _ndcg_mapped(ranked: Ranked, gain_map: Mapping[int, float]) -> np.ndarray:
    return _safe_div(*_dcg_pair(ranked, gain_map))


def dcg(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """DCG of the list (trec_eval's dcg): Σ_i gain(grade_i) / log2(i + 1), gains as in ``ndcg``."""
    return _dcg_pair(ranked, gain_map or {})[0]


def ideal_dcg(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """DCG of the ideal ranking (trec_eval's ideal_dcg): the judged documents by gain descending, positive
    gains only, gains as in ``ndcg``."""
    return _dcg_pair(ranked, gain_map or {})[1]


def _dcg_pair(ranked: Ranked, gain_map: Mapping[int, float]) -> tuple[np.ndarray, np.ndarray]:
    rows = np.flatnonzero(ranked.label >= 0)
    topic = ranked.topic_of(rows)
    rank = rows - ranked.offsets[topic] + 1
    found = ranked.count(topic, _mapped_gains(ranked.label[rows], gain_map) / np.log2(rank + 1.0))
    itopic = ranked.ideal_positions[0]
    ideal = _trec_ideal_gains(ranked, gain_map)
    position = np.arange(len(ideal)) - ranked.judged_offsets[itopic] + 1
    keep = ideal > 0
    idcg = ranked.count(itopic[keep], ideal[keep] / np.log2(position[keep] + 1.0))
    return found, idcg


def ndcg_cut_k(ranked: Ranked, k: int, gain: Gain = "linear") -> np.ndarray:
    """nDCG at k: as ``ndcg`` with both the list and the ideal ranking cut at rank k."""
    return _safe_div(_dcg(ranked, k, gain), _ideal_dcg(ranked, k, gain))


def _within_topic_cumsum(topic: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` within each topic (``topic`` sorted), inclusive."""
    total = np.cumsum(values)
    if not len(total):
        return total
    first = np.flatnonzero(np.concatenate(([True], topic[1:] != topic[:-1])))
    before = np.concatenate(([0.0], total))[first]
    return total - np.repeat(before, np.diff(np.append(first, len(total))))


def _ideal_prefix(ranked: Ranked, values: np.ndarray, topic: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Σ of ``values`` (one per judged-document row, ideal order) over ideal positions 1..k of ``topic``."""
    n_ideal = np.diff(ranked.judged_offsets)[topic]
    cut = np.minimum(k, n_ideal)
    running = np.append(np.cumsum(values), 0.0)
    start = np.concatenate(([0.0], running))[ranked.judged_offsets[topic]]
    at = running[np.maximum(ranked.judged_offsets[topic] + cut - 1, 0)]
    return np.where(cut > 0, at - start, 0.0)


@dataclass(frozen=True)
class _GainView:
    """The gains G, ndcg_rel and Rndcg see: ``rows``, the retrieved documents whose gain is not 0 (only those
    add a term), with their ``gain``; ``ideal``, per topic at ``Ranked.judged_offsets``, the gain of every
    judged document, descending."""

    rows: Rows
    gain: np.ndarray
    ideal: np.ndarray


def _gain_view(ranked: Ranked, gain_map: Mapping[int, float] | None) -> _GainView:
    """Gains as trec_eval's ``setup_gains`` gives them, for the metrics that take a ``rel_level=gain`` list
    (``-m NAME.1=3.5,2=9``; G, ndcg_rel, Rndcg): the gain of each listed grade (any real number, grade 0
    included), every other judged grade gaining its own value; unjudged documents gain 0 (unless the map
    names -1, absent from the qrels, or -2, a negative grade, as trec_eval's would). The ideal ranking
    orders the judged documents by gain, descending, as trec_eval sorts its levels (a comparison that
    truncates the difference of two gains to an integer: see ``_trec_level_order``)."""
    if not gain_map:
        pos = ranked.positive
        return _GainView(pos, ranked.label[pos.rows].astype(np.float64), ranked.judged.astype(np.float64))
    gains = _mapped_gains(ranked.label, gain_map)
    rows = ranked.select(gains != 0)
    return _GainView(rows, gains[rows.rows], _trec_ideal_gains(ranked, gain_map))


def G(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """G (trec_eval, experimental): Σ over retrieved documents with a gain g ≠ 0 at rank i of
    g / log2(2 + cost(i) − gained(i)), where gained(i) is the gain of ranks 1..i and cost(i) =
    Σ_{j<=i} max(ideal gain at rank j, 1) (the ideal ranking: every judged document by gain, descending; 1
    past its positive gains); divided by the sum of the positive gains of the judged documents (0 if that
    is 0). Gains are the grades by default; unjudged documents gain 0.

    ``gain_map`` is trec_eval's ``rel_level=gain`` list (``-m NAME.1=3.5,2=9``), read as ``_gain_view``
    says: the gains, and the ideal ranking they give."""
    view = _gain_view(ranked, gain_map)
    rows = view.rows
    gained = _within_topic_cumsum(rows.topic, view.gain)
    cost = _ideal_prefix(ranked, np.maximum(view.ideal, 1.0), rows.topic, rows.rank)
    cost += rows.rank - np.minimum(rows.rank, np.diff(ranked.judged_offsets)[rows.topic])  # 1 a rank beyond
    term = view.gain / np.log2(2.0 + cost - gained)
    itopic = ranked.ideal_positions[0]
    total_ideal = ranked.count(itopic, np.maximum(view.ideal, 0.0))
    return _safe_div(ranked.count(rows.topic, term), total_ideal)


def ndcg_rel(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """ndcg_rel (trec_eval, experimental): the mean, over the n judged documents of the topic with a gain
    > 0, of nDCG at each retrieved document with a gain > 0 — DCG of ranks 1..i (every gain ≠ 0 counts)
    over the ideal DCG of ranks 1..i (positive gains only) — where each of the n not matched by a
    retrieved one counts the nDCG of the whole list; 0 if that sum is not positive. Gains are the grades
    by default; unjudged documents gain 0.

    ``gain_map`` is trec_eval's ``rel_level=gain`` list (``-m NAME.1=3.5,2=9``), read as ``_gain_view``
    says: the gains, and the ideal ranking they give."""
    view = _gain_view(ranked, gain_map)
    rows = view.rows
    discounted = view.gain / np.log2(rows.rank + 1.0)
    dcg_here = _within_topic_cumsum(rows.topic, discounted)
    itopic, iposition = ranked.ideal_positions
    ideal_gain = np.maximum(view.ideal, 0.0)
    ideal_discounted = ideal_gain / np.log2(iposition + 1.0)
    gaining = view.gain > 0
    idcg_here = _ideal_prefix(ranked, ideal_discounted, rows.topic[gaining], rows.rank[gaining])
    n_positive = ranked.count(itopic[ideal_gain > 0])
    found = ranked.count(rows.topic[gaining])
    with np.errstate(divide="ignore", invalid="ignore"):  # trec_eval divides as C does
        total = ranked.count(rows.topic[gaining], dcg_here[gaining] / idcg_here)
    full_dcg = ranked.count(rows.topic, discounted)
    full_idcg = ranked.count(itopic, ideal_discounted)
    total += (n_positive - found) * _safe_div(full_dcg, full_idcg)
    return np.where(total > 0, _safe_div(total, n_positive), 0.0)


def rbp(ranked: Ranked, p: float = 0.9) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel 2008; trec_eval's rbp, ``-m rbp.p=0.95``): (1 − p) Σ_i g_i ·
    p^(i−1) over ranks i, with g = the grade, divided by the topic's highest judged grade when that is
    above 1 (trec_eval scales the gains into [0, 1]); unjudged documents gain 0."""
    pos = ranked.positive
    rows, topic, rank = pos.rows, pos.topic, pos.rank
    top = np.zeros(ranked.n_topics, dtype=np.float64)
    listed = np.diff(ranked.judged_offsets) > 0
    top[listed] = ranked.judged[ranked.judged_offsets[:-1][listed]]  # each topic's first: its highest grade
    scale = np.where(top > 1, top, 1.0)
    gains = ranked.label[rows] / scale[topic]
    return (1.0 - p) * ranked.count(topic, gains * _powers(ranked, p)[rank - 1])


def _powers(ranked: Ranked, p: float) -> np.ndarray:
    """p^0, p^1, ... up to the longest list, each the previous times p as trec_eval's loop computes them
    (``cur_p = cur_p * p``): np.power can differ in the last bit."""
    longest = int(np.diff(ranked.offsets).max(initial=0))
    return np.cumprod(np.concatenate(([1.0], np.full(longest, p))))


def rbp_resid(ranked: Ranked) -> np.ndarray:
    """RBP residual at p = 0.9 (trec_eval's rbp_resid): the RBP the unjudged documents could still add,
    p^n + (1 − p) Σ over unjudged documents (absent from the qrels or negative) of p^(rank−1), n = the
    length of the list; 0 if no document of the list is unjudged."""
    p = 0.9
    powers = _powers(ranked, p)
    lengths = np.diff(ranked.offsets)
    # Over every row, 0 for the judged ones: the same additions, in the same (rank) order, as over the
    # unjudged rows alone (x + 0.0 is x), without gathering the rows of (nearly) the whole run.
    if len(lengths) and np.all(lengths == lengths[0]):  # lists of one length (a run's usual 1,000)
        by_topic = ranked.label.reshape(len(lengths), int(lengths[0]))
        unjudged = np.where(by_topic < 0, powers[: int(lengths[0])], 0.0).reshape(-1)
    else:
        unjudged = np.where(ranked.label < 0, powers[ranked.row_rank - 1], 0.0)
    value = powers[lengths] + (1.0 - p) * ranked.count(ranked.row_topic, unjudged)
    return np.where(lengths - ranked.count(ranked.judged_rows.topic) > 0, value, 0.0)


def Rndcg(ranked: Ranked, gain_map: Mapping[int, float] | None = None) -> np.ndarray:
    """Rndcg (trec_eval, experimental): the mean of nDCG@b over the b at which the ideal ranking's gain
    changes — after each block of equal positive gains, the last one where the positive gains end — plus,
    when the list is longer than that + 1, the nDCG of the whole list; DCG counts every gain ≠ 0, the ideal
    DCG the positive ones. 0 if R = 0 (judged documents with a grade >= the relevance level); NaN (printed
    -nan, trec_eval's 0/0) if R > 0 but no judged document has a positive gain. Gains are the grades by
    default; unjudged documents gain 0.

    ``gain_map`` is trec_eval's ``rel_level=gain`` list (``-m NAME.1=3.5,2=9``), read as ``_gain_view``
    says: the gains, and the ideal ranking they give."""
    view = _gain_view(ranked, gain_map)
    pos = view.rows
    dcg_here = _within_topic_cumsum(pos.topic, view.gain / np.log2(pos.rank + 1.0))
    n_ret = np.diff(ranked.offsets)
    span = int(n_ret.max()) + 2 if len(n_ret) else 2
    keys = pos.topic.astype(np.int64) * span + pos.rank

    def dcg_at(t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """DCG of ranks 1..k of topic t: the running DCG at its last gaining document up to rank k."""
        i = np.searchsorted(keys, t.astype(np.int64) * span + np.minimum(k, span - 1), side="right") - 1
        ok = (i >= 0) & (pos.topic[np.maximum(i, 0)] == t) if len(keys) else np.zeros(len(t), bool)
        return np.where(ok, dcg_here[np.maximum(i, 0)] if len(keys) else 0.0, 0.0)

    ideal = np.maximum(view.ideal, 0.0)
    itopic, iposition = ranked.ideal_positions
    ideal_discounted = ideal / np.log2(iposition + 1.0)
    n_pos = ranked.count(itopic[ideal > 0]).astype(np.int64)
    # Boundaries: 1-based ideal positions b <= n_pos where the next ideal gain differs (or is 0).
    nxt = np.append(ideal[1:], 0.0)
    same_topic_next = np.append(itopic[1:] == itopic[:-1], False)
    b_rows = np.flatnonzero((ideal > 0) & ((nxt != ideal) | ~same_topic_next))
    bt, b = itopic[b_rows], iposition[b_rows]
    total = ranked.count(bt, dcg_at(bt, b) / _ideal_prefix(ranked, ideal_discounted, bt, b))
    count = ranked.count(bt)
    t_all = np.arange(ranked.n_topics)
    extra = (n_ret > n_pos + 1) & (n_pos > 0)
    full_ideal = _ideal_prefix(ranked, ideal_discounted, t_all, n_pos)
    total += np.where(extra, _safe_div(dcg_at(t_all, n_ret), full_ideal), 0.0)
    count += extra
    with np.errstate(invalid="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return np.where(ranked.num_rel > 0, mean, 0.0)

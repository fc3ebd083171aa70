"""Ranked lists and depth-k pools: trec_eval's order of a run's rows, the union of runs' first k documents.

Pure (no Django). Split out of :mod:`pooling.strategies`, which re-exports every name here; inputs as
described there: per topic ``ranked: dict[run, list[docid]]`` already in trec_eval order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from pooling import trec_io

Ranked = Mapping[str, Sequence[str]]
Provenance = list[tuple[str, int]]  # [(run, rank), ...] of one pooled document
Item = tuple[str, str]


# --------------------------------------------------------------------------------------------------------
# Run ordering (trec_eval's: score descending, ties by docid descending in byte order)


def trec_order(rows: Iterable[tuple[str, float]]) -> list[str]:
    """Return the docids of one run's rows for one topic in trec_eval 10 order.

    Order: score descending (as a double), ties broken by docid **descending** in the byte order of its
    UTF-8 encoding (trec_eval's ``strcmp(b, a)``), as :func:`pooling.trec_io.trec_order` defines it for
    every reader of runs. Rank 1 is the first element. A score that is not finite, or the same docid
    twice, raises ``ValueError`` (trec_eval stops on duplicate docs; the platform is stricter than its
    ``atof`` about scores).
    """
    docids: list[str] = []
    scores: list[float] = []
    seen: set[str] = set()
    for docid, score in rows:
        value = float(score)
        if not math.isfinite(value):
            raise ValueError(f"score of {docid!r} is not a finite number: {score!r}")
        if docid in seen:
            raise ValueError(f"duplicate docid {docid!r}")
        seen.add(docid)
        docids.append(docid)
        scores.append(value)
    encoded = [docid.encode("utf-8") for docid in docids]
    byte_rank = np.empty(len(docids), dtype=np.int64)  # each docid's place in byte order
    byte_rank[sorted(range(len(docids)), key=encoded.__getitem__)] = np.arange(len(docids))
    order = trec_io.trec_order(
        np.zeros(len(docids), dtype=np.intp), np.array(scores, dtype=np.float64), byte_rank, 1
    )
    return docids if order is None else [docids[i] for i in order.tolist()]


def rankings_by_topic(
    runs: Mapping[str, Iterable[tuple[str, str, float]]],
) -> dict[str, dict[str, list[str]]]:
    """Group runs' ``(qid, docid, score)`` rows into ``{qid: {run: ranked docids}}`` in trec_eval order.

    A run with no row for a topic is absent from that topic's dict (not present with an empty list).
    Topics and runs appear in sorted order. Errors as in :func:`trec_order`.
    """
    grouped: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for run in sorted(runs):
        for qid, docid, score in runs[run]:
            grouped.setdefault(qid, {}).setdefault(run, []).append((docid, score))
    return {
        qid: {run: trec_order(rows) for run, rows in sorted(grouped[qid].items())} for qid in sorted(grouped)
    }


# --------------------------------------------------------------------------------------------------------
# Depth-k pooling (TREC's union of every run's first k documents)


def _check_depth(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
        raise ValueError(f"depth must be a non-negative integer or None, got {k!r}")


def _truncated(ranked: Ranked, k: int | None) -> dict[str, list[str]]:
    """Each run's first ``k`` docids (all when ``k`` is None), runs in sorted order; duplicates raise."""
    _check_depth(k)
    out: dict[str, list[str]] = {}
    for run in sorted(ranked):
        docs = list(ranked[run])
        if len(set(docs)) != len(docs):
            raise ValueError(f"run {run!r} ranks the same docid twice")
        out[run] = docs if k is None else docs[:k]
    return out


def depth_k_pool(ranked: Ranked, k: int) -> dict[str, Provenance]:
    """Depth-k pool of one topic: ``{docid: [(run, rank), ...]}``.

    pool = ⋃ over runs r of the first ``k`` documents of r's list (a run shorter than ``k`` contributes
    all its documents). The provenance of a document is every ``(run, rank)`` with rank ≤ k (1-based)
    that put it in the pool, sorted by run name. Documents appear in order of first appearance when the
    runs are read in sorted name order, rank by rank; callers should not rely on that order.
    This is the reference implementation for the set-based SQL pool build.
    """
    if k is None:
        raise ValueError("depth_k_pool needs a depth k")
    pool: dict[str, list[tuple[str, int]]] = {}
    for run, docs in _truncated(ranked, k).items():
        for rank, docid in enumerate(docs, start=1):
            pool.setdefault(docid, []).append((run, rank))
    return pool


def depth_k_pool_by_topic(ranked_by_topic: Mapping[str, Ranked], k: int) -> dict[str, dict[str, Provenance]]:
    """:func:`depth_k_pool` for every topic: ``{qid: {docid: [(run, rank), ...]}}``."""
    return {qid: depth_k_pool(ranked_by_topic[qid], k) for qid in sorted(ranked_by_topic)}


def depth_order(ranked: Ranked, k: int | None) -> list[str]:
    """The baseline judging order "in depth-k order": every run's rank 1, then every run's rank 2, ...

    Within one rank the runs are taken in sorted name order; a document already listed is skipped. Only
    ranks ≤ ``k`` are used (every rank when ``k`` is None), so the result is exactly the depth-k pool.
    """
    lists = _truncated(ranked, k)
    order: list[str] = []
    seen: set[str] = set()
    longest = max((len(docs) for docs in lists.values()), default=0)
    for i in range(longest):
        for docs in lists.values():
            if i < len(docs) and docs[i] not in seen:
                seen.add(docs[i])
                order.append(docs[i])
    return order

"""The join of a run's rows to the qrels rows with the same (topic, docid), by their 64-bit keys, a
window of topics at a time: how ``rank_lists`` (``ranked.py``) labels every retrieved document."""

from __future__ import annotations

import numpy as np

from pooling.trec_io import KeyIndex, QrelsTable, RunTable

_JOIN_WINDOW = 1 << 16  # run and qrels rows joined at once: their hash table stays in cache
_JOIN_SLOTS_PER_KEY = 8  # most run rows are not in the qrels: a sparse table ends their probes at once


def _join(
    qrels: QrelsTable,
    run: RunTable,
    run_topic: np.ndarray,
    qrels_topic: np.ndarray,
    run_rows: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the run rows whose (topic, docid) the qrels have, and the matching qrels rows.

    The run is given grouped by topic: position i is row ``run_rows[i]`` of ``run`` (row i if None), of
    topic ``run_topic[i]`` (ascending). Rows are matched by their 64-bit key (see ``trec_io.hash_bytes``),
    a window of whole topics at a time: the qrels keys of those topics in an open-addressing hash table
    (``trec_io.KeyIndex``, small enough to stay in cache) probed by the run's keys of the same topics; a key
    match is confirmed by comparing topic and docid. If two qrels rows of a window share a key the join is
    done exactly with a dict instead.
    """
    none = (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))
    if not len(qrels) or not len(run_topic):
        return none
    n_topics = int(max(run_topic[-1], qrels_topic.max())) + 1
    qorder = (
        None if not np.any(qrels_topic[1:] < qrels_topic[:-1]) else np.argsort(qrels_topic, kind="stable")
    )
    qkeys = qrels.key if qorder is None else qrels.key[qorder]
    rkeys = run.key if run_rows is None else run.key[run_rows]
    topics = np.arange(n_topics + 1)
    r_bounds = np.searchsorted(run_topic, topics)
    q_bounds = np.searchsorted(qrels_topic if qorder is None else qrels_topic[qorder], topics)
    both = r_bounds + q_bounds
    positions: list[np.ndarray] = []
    sorted_rows: list[np.ndarray] = []
    t0 = 0
    while t0 < n_topics:
        t1 = max(int(np.searchsorted(both, both[t0] + _JOIN_WINDOW, side="right")) - 1, t0 + 1)
        ra, rb, qa, qb = int(r_bounds[t0]), int(r_bounds[t1]), int(q_bounds[t0]), int(q_bounds[t1])
        t0 = t1
        if ra == rb or qa == qb:
            continue
        index = KeyIndex(qkeys[qa:qb], slots_per_key=_JOIN_SLOTS_PER_KEY)
        if not index.unique:  # two qrels rows share a key
            rdocids = run.docid if run_rows is None else run.docid[run_rows]
            return _join_exact(run_topic, rdocids, qrels_topic, qrels.docid)
        found = index.lookup(rkeys[ra:rb])
        hit = np.flatnonzero(found >= 0)
        positions.append(hit + ra)
        sorted_rows.append(found[hit] + qa)
    if not positions:
        return none
    position = np.concatenate(positions)
    qrels_rows = np.concatenate(sorted_rows)
    if qorder is not None:
        qrels_rows = qorder[qrels_rows]
    rows = position if run_rows is None else run_rows[position]
    right = (run_topic[position] == qrels_topic[qrels_rows]) & (run.docid[rows] == qrels.docid[qrels_rows])
    return position[right], qrels_rows[right]


def _join_exact(
    run_topic: np.ndarray, run_docid: np.ndarray, qrels_topic: np.ndarray, qrels_docid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`_join` by a dict of (topic, docid), for qrels in which two rows share a key: the positions of the
    run rows (topics ``run_topic``, docids ``run_docid``) the qrels have, and the matching qrels rows."""
    index = {
        (t, d): i for i, (t, d) in enumerate(zip(qrels_topic.tolist(), qrels_docid.tolist(), strict=True))
    }
    found = np.array(
        [index.get(key, -1) for key in zip(run_topic.tolist(), run_docid.tolist(), strict=True)],
        dtype=np.intp,
    )
    position = np.flatnonzero(found >= 0)
    return position, found[position]

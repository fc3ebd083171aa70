"""``trec_order``: trec_eval's ranking of a run's rows (topic, score descending, docid descending)."""

from __future__ import annotations

import numpy as np


def trec_order(topic: np.ndarray, score: np.ndarray, docid: np.ndarray, n_topics: int) -> np.ndarray | None:
    """Permutation putting rows in trec_eval order: topic, score descending, docid descending (bytes);
    None if they are in that order already.

    This is the house's one definition of trec_eval's ranking (``strcmp(b, a)`` on ties): the importer,
    the metrics and the pooling strategies all call it. ``topic`` holds integer codes below ``n_topics``;
    ``docid`` is either the UTF-8 docids as a ``numpy.bytes_`` array (without NUL bytes, which numpy
    would drop at the end) or any integer array whose ascending order is the docids' byte order (e.g.
    positions in a byte-sorted catalogue)."""
    n = len(topic)
    if n == 0:
        return None
    order: np.ndarray | None = None
    # Most runs are written topic by topic, by score: check it in O(n) and only move whole topic blocks.
    same_topic = topic[1:] == topic[:-1]
    heads = np.flatnonzero(np.concatenate(([True], ~same_topic)))
    block_topic = topic[heads]
    if len(np.unique(block_topic)) == len(heads) and not np.any((score[1:] > score[:-1]) & same_topic):
        block_order = np.argsort(block_topic, kind="stable")
        if np.any(block_order[1:] < block_order[:-1]):
            lengths = np.diff(np.append(heads, n))
            starts, sizes = heads[block_order], lengths[block_order]
            # order = the blocks' row ranges end to end, as steps of 1 with a jump at each block's first
            # row, summed in place: one array of n (a repeat and an arange would be three).
            order = np.ones(n, dtype=np.intp)
            order[0] = starts[0]
            order[np.cumsum(sizes[:-1])] = starts[1:] - (starts[:-1] + sizes[:-1] - 1)
            np.cumsum(order, out=order)
        tie = (score[1:] == score[:-1]) & same_topic
        tie_pos = np.flatnonzero(tie)
        if order is not None and len(tie_pos):
            # Re-express the tied pairs in the block order (a pair never straddles two blocks).
            inverse = np.empty(n, dtype=np.intp)
            inverse[order] = np.arange(n)
            tie_pos = np.sort(inverse[tie_pos])
    else:
        # By score (unstable is fine: ties are settled below), then stably by topic (a radix sort).
        order = np.argsort(-score)
        key_dtype = np.int16 if n_topics < 2**15 else np.int64
        order = order[np.argsort(topic[order].astype(key_dtype), kind="stable")]
        s, t = score[order], topic[order]
        tie_pos = np.flatnonzero((s[1:] == s[:-1]) & (t[1:] == t[:-1]))
    if len(tie_pos):
        # Equal scores within a topic: docid descending. tie_pos[i] = p means rows p and p+1 are tied.
        if order is None:
            order = np.arange(n)
        positions = np.union1d(tie_pos, tie_pos + 1)
        rows = order[positions]
        continues = np.zeros(len(positions), dtype=bool)
        continues[np.searchsorted(positions, tie_pos + 1)] = True
        group = np.cumsum(~continues)
        _, doc_rank = np.unique(docid[rows], return_inverse=True)
        order[positions] = rows[np.lexsort((-doc_rank.reshape(-1), group))]
    return order

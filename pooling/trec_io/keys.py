"""Keys of rows: a 64-bit hash of byte strings (``hash_bytes``; (qid, docid) keys, used to join runs with
qrels and to find duplicates without sorting strings), the hash table of such keys (``KeyIndex``) and the
linear-time test for equal keys (``any_equal_keys``).
"""

from __future__ import annotations

import numpy as np

_MASK64 = (1 << 64) - 1
_FMIX1 = np.uint64(0xFF51AFD7ED558CCD)
_FMIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


def _fmix(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser (a bijection with full avalanche), on a uint64 array."""
    x = x ^ (x >> _S33)
    x *= _FMIX1
    x ^= x >> _S33
    x *= _FMIX2
    x ^= x >> _S33
    return x


def _word_offset(j: int) -> int:
    return (0x9E3779B97F4A7C15 * (j + 1)) & _MASK64


def hash_bytes(values: np.ndarray) -> np.ndarray:
    """64-bit hash of each byte string of a ``numpy.bytes_`` array, independent of the array's width.

    The string is zero-padded to whole 8-byte words w_j and hashed as Σ_j fmix(w_j + c_j) − fmix(c_j)
    (mod 2^64), so zero padding words add nothing. Equal strings have equal hashes; callers that rely on
    a match compare the strings themselves.
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    width = max(values.dtype.itemsize, 1)
    words = -(-width // 8)
    padded = np.ascontiguousarray(values, dtype=f"S{words * 8}")
    matrix = padded.view("<u8").reshape(n, words)
    out = np.zeros(n, dtype=np.uint64)
    for j in range(words):
        c = np.uint64(_word_offset(j))
        base = _fmix(np.array([c], dtype=np.uint64))[0]
        out += _fmix(matrix[:, j] + c)
        out -= base
    return out


def _qid_key(qids: np.ndarray) -> np.ndarray:
    """Per-qid uint64 (of the UTF-8 bytes) added to docid hashes, so the same docid under two topics has
    two keys."""
    return _fmix(hash_bytes(qids) ^ np.uint64(0x2545F4914F6CDD1D))


def _topic_key(topic_ids: list[str]) -> np.ndarray:
    if not topic_ids:
        return np.zeros(0, dtype=np.uint64)
    return _qid_key(np.array([t.encode("utf-8") for t in topic_ids], dtype=np.bytes_))


def _row_keys(topic_ids: list[str], topic: np.ndarray, docid: np.ndarray) -> np.ndarray:
    return hash_bytes(docid) + _topic_key(topic_ids)[topic]


class KeyIndex:
    """An open-addressing hash table from distinct 64-bit keys (``hash_bytes``) to their rows, built and
    probed with vectorised rounds. One 16-byte slot holds a key and its row, so a probe costs one cache
    miss. ``unique`` is False when two rows share a key: then the table is incomplete and the caller must
    match exactly instead.

    The table has at least ``slots_per_key`` slots a key (a power of two). A key that is absent probes
    until it meets an empty slot: when most keys looked up are absent (a run's documents in the qrels),
    a sparser table is faster, as long as it stays in cache."""

    def __init__(self, keys: np.ndarray, *, slots_per_key: int = 2) -> None:
        bits = max(4, int(len(keys) * slots_per_key - 1).bit_length())
        self.mask = (1 << bits) - 1
        self.shift = np.uint64(64 - bits)
        self.table = np.empty(1 << bits, dtype=[("key", "<u8"), ("row", "<i8")])  # empty while row = -1
        self.unique = True
        table_rows = self.table["row"]
        table_rows[:] = -1
        pending = np.arange(len(keys))
        slots = (keys >> self.shift).astype(np.intp)
        while len(pending):
            free = np.flatnonzero(table_rows[slots] == -1)
            table_rows[slots[free]] = pending[free]  # rows aiming at one free slot: one of them wins it
            placed = table_rows[slots] == pending
            self.table["key"][slots[placed]] = keys[pending[placed]]
            pending, slots = pending[~placed], slots[~placed]
            if len(pending) and np.any(self.table["key"][slots] == keys[pending]):
                self.unique = False  # two rows share a key
                return
            slots = (slots + 1) & self.mask

    def _slots(self, slots: np.ndarray) -> np.ndarray:
        """The table's slots at ``slots``, gathered as plain 16-byte values (a structured array's fancy
        indexing is several times slower)."""
        return self.table.view(np.complex128).take(slots).view(self.table.dtype)

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The row of each key (-1 where the table lacks it): ``probe`` for every key, as one array."""
        slots = (keys >> self.shift).astype(np.intp)
        probe = self._slots(slots)
        rows = probe["row"]
        hit = probe["key"] == keys  # a free slot's key is garbage, but its row is -1
        out = np.where(hit, rows, -1)
        more = np.flatnonzero(~hit & (rows >= 0))  # most keys are settled by the first probe
        if len(more):
            found, found_rows = self.probe(keys[more], None, (slots[more] + 1) & self.mask)
            out[more[found]] = found_rows
        return out

    def probe(
        self, keys: np.ndarray, active: np.ndarray | None = None, slots: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``keys`` found, their rows in the table's keys), for the positions ``active``
        (all by default), starting at ``slots`` (their home slots by default). Equal keys are found;
        equal strings are the caller's to confirm."""
        active = np.arange(len(keys)) if active is None else active
        if slots is None:
            slots = (keys[active] >> self.shift).astype(np.intp)
        found: list[np.ndarray] = []
        rows_found: list[np.ndarray] = []
        while len(active):
            probe = self._slots(slots)
            rows = probe["row"]
            occupied = rows >= 0
            hit = occupied & (probe["key"] == keys[active])
            found.append(active[hit])
            rows_found.append(rows[hit])
            more = occupied & ~hit  # probed an occupied slot of another key: go on probing
            active, slots = active[more], (slots[more] + 1) & self.mask
        if not found:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
        return np.concatenate(found), np.concatenate(rows_found)


_ROUND_MULTIPLIERS = tuple(
    np.uint64(c) for c in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)
)
_WINDOW_ROWS = 1 << 16  # rows checked together: their table (256 KiB) stays in cache


def _equal_keys_among(keys: np.ndarray) -> bool:
    """Whether two of ``keys`` are equal, in expected linear time: each round scatters the positions into
    a table by a hash of the key; a position that lost its slot is compared with the winner (equal keys
    aim at one slot, so one of them wins and the other finds it, or both lose and meet again in the next
    round, which takes only the losers, by another hash). The few left are sorted."""
    pending = keys
    round_ = 0
    while len(pending) > 4096:
        n = len(pending)
        bits = (n - 1).bit_length()
        slots = ((pending * _ROUND_MULTIPLIERS[round_ % 4]) >> np.uint64(64 - bits)).astype(np.intp)
        round_ += 1
        table = np.empty(1 << bits, dtype=np.int32)  # only written slots are read
        position = np.arange(n, dtype=np.int32)
        table[slots] = position
        winner = table[slots]
        lost = np.flatnonzero(winner != position)
        if np.any(pending[lost] == pending[winner[lost]]):
            return True
        pending = pending[lost]
    ordered = np.sort(pending)
    return bool(np.any(ordered[1:] == ordered[:-1]))


def any_equal_keys(keys: np.ndarray, topic: np.ndarray) -> bool:
    """Whether two rows have equal keys. Rows of different topics never share a (qid, docid), so when each
    topic's rows are consecutive (how runs are written) whole topics are checked a window at a time, in
    cache; otherwise all keys at once."""
    n = len(keys)
    if n < 2:
        return False
    heads = np.flatnonzero(topic[1:] != topic[:-1]) + 1
    block_topic = topic[np.concatenate(([0], heads))]
    if len(np.unique(block_topic)) != len(block_topic):  # a topic in two places
        return _equal_keys_among(keys)
    start = 0
    while start < n:
        # End at the first topic boundary at least a window further (a larger topic is a window alone).
        at = int(np.searchsorted(heads, start + _WINDOW_ROWS))
        end = int(heads[at]) if at < len(heads) else n
        if _equal_keys_among(keys[start:end]):
            return True
        start = end
    return False

"""``iter_run_by_topic``: a run's rows as chunks of whole topics, whatever the order of its lines, in flat
memory: groups of topics are spilled to temporary files (``_Spill``) and read back one at a time, qids
coded by their hashes on the way (``_QidCodes``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import numpy as np

from pooling.formats import Source, gzip_named
from pooling.trec_io.chunks import _RUN_LINES, _iter_rows
from pooling.trec_io.errors import ErrorLog
from pooling.trec_io.keys import KeyIndex, hash_bytes
from pooling.trec_io.streams import RunChunk

#: Rows per chunk ``iter_run_by_topic`` gives (whole topics; about what ``iter_run`` gives per chunk).
TOPIC_PIECE_ROWS = 1 << 16
#: File bytes per group of topics ``iter_run_by_topic`` holds at once (its rows take about as much).
TOPIC_GROUP_BYTES = 1 << 24


def _topic_groups(source: Source) -> int:
    """How many groups of topics ``iter_run_by_topic`` spreads a run over: one per TOPIC_GROUP_BYTES of
    the file (a compressed file counted four times its size), at most 256; 8 for a file object, whose
    size is not asked."""
    if not isinstance(source, str | os.PathLike):
        return 8
    try:
        size = os.stat(source).st_size
    except OSError:
        return 1
    if gzip_named(os.fspath(source)):
        size *= 4
    return max(1, min(256, -(-size // TOPIC_GROUP_BYTES)))


def iter_run_by_topic(
    source: Source, errors: ErrorLog, *, progress: Callable[[float], None] | None = None
) -> Iterator[RunChunk]:
    """The rows of a run as ``RunChunk``s of whole topics, whatever the order of the file's lines: each
    topic's rows in file order, about ``TOPIC_PIECE_ROWS`` rows a chunk, every topic in one chunk or in
    consecutive ones. Errors as in ``iter_run``.

    Memory stays flat: the topics are dealt into groups (``_topic_groups``: one per TOPIC_GROUP_BYTES of
    the file, by order of first appearance, round robin) and, while the file is read, each chunk's rows
    (a topic code, the docid, the score and the line) are appended to their group's temporary file; then
    the groups are read back one at a time, gathered by topic. Topics come group by group, each group's
    in the order they first appear (a file of one group: all topics in that order, nothing spilled).
    The cost is one write and one read of the rows through the page cache, about a tenth of parsing them.
    """
    groups = _topic_groups(source)
    codes = _QidCodes()
    parts: tuple[list[np.ndarray], ...] = ([], [], [], [])
    with _Spill() as spill:
        for chunk, lines, _values in _iter_rows(source, errors, _RUN_LINES, progress):
            code = np.repeat(codes.of(chunk.qid_heads), chunk.qid_lengths)
            line = lines.astype(np.int32) if len(lines) and lines[-1] < 2**31 else lines
            columns = (code, chunk.docid, chunk.value, line)
            if groups == 1:
                for part, column in zip(parts, columns, strict=True):
                    part.append(column)
                continue
            group = code % groups
            order = np.argsort(group.astype(np.int16), kind="stable")  # a radix sort
            bounds = np.searchsorted(group[order], np.arange(groups + 1))
            for g in np.flatnonzero(np.diff(bounds)).tolist():
                rows = order[bounds[g] : bounds[g + 1]]
                spill.write(g, [column[rows] for column in columns])
        if not errors.total and not errors.rows_seen:
            errors.add(None, "file is empty" if not errors.bytes_seen else "no run rows found")
        if not codes.qids:
            return
        qids = [qid.decode("utf-8", "replace") for qid in codes.qids]
        if groups == 1:
            yield from _gathered(qids, tuple(_joined(part) for part in parts))
            return
        for g in range(groups):
            group_columns = spill.read(g)
            if group_columns is not None:
                yield from _gathered(qids, group_columns)


class _QidCodes:
    """Integer codes for qids in the order the qids first appear, given the runs of equal qids of one
    chunk at a time (``of``). Vectorised: a qid is found by its 64-bit hash (``hash_bytes``) in a
    ``KeyIndex`` of the known qids' hashes, and every match is confirmed on the bytes; should two qids
    share a hash, codes are given through a dict from then on. ``qids[code]`` is the qid of a code."""

    _hash = staticmethod(hash_bytes)

    def __init__(self) -> None:
        self.qids: list[bytes] = []
        self._by_code = np.zeros(0, dtype="S1")  # the qid of each code
        self._hashes = np.zeros(0, dtype=np.uint64)  # the hash of each code
        self._index: KeyIndex | None = None
        self._exact: dict[bytes, int] | None = None

    def of(self, heads: np.ndarray) -> np.ndarray:
        """The code of each of ``heads`` (a ``numpy.bytes_`` array); new qids get the next codes."""
        if self._exact is None:
            codes = self._hashed(heads)
            if codes is not None:
                return codes
            self._exact = {qid: code for code, qid in enumerate(self.qids)}
        unique, first_at, inverse = np.unique(heads, return_index=True, return_inverse=True)
        local = np.empty(len(unique), dtype=np.int32)
        for j in np.argsort(first_at).tolist():  # codes in the order qids first appear
            qid = bytes(unique[j])
            if qid not in self._exact:
                self._exact[qid] = len(self.qids)
                self.qids.append(qid)
            local[j] = self._exact[qid]
        return local[inverse.reshape(-1)]

    def _hashed(self, heads: np.ndarray) -> np.ndarray | None:
        """``of`` by hashes; None (and nothing learnt) if two distinct qids share a hash."""
        hashes = self._hash(heads)
        unknown = np.full(len(heads), -1, dtype=np.int64)
        codes = unknown if self._index is None else self._index.lookup(hashes)
        new = np.flatnonzero(codes < 0)
        by_code, known = self._by_code, len(self.qids)
        if len(new):
            fresh, first_at, inverse = np.unique(hashes[new], return_index=True, return_inverse=True)
            order = np.argsort(first_at)  # codes in the order qids first appear
            fresh_codes = np.empty(len(fresh), dtype=np.int64)
            fresh_codes[order] = np.arange(known, known + len(fresh))
            codes[new] = fresh_codes[inverse.reshape(-1)]
            by_code = np.concatenate([by_code, heads[new[first_at[order]]]])
        if np.any(by_code[codes] != heads):
            return None  # two qids share a hash
        if len(new):
            self.qids.extend(by_code[known:].tolist())
            self._by_code = by_code
            self._hashes = np.concatenate([self._hashes, fresh[order]])
            self._index = KeyIndex(self._hashes)
        return codes.astype(np.int32)


class _Spill:
    """One temporary file per group of topics, each the group's rows chunk after chunk as the raw bytes of
    their four columns (topic code, docid, score, line); what each chunk's record holds is kept in memory,
    so that a group is read back straight into columns of its size. Files are created when first written
    and removed on exit."""

    def __init__(self) -> None:
        self.files: dict[int, Any] = {}
        self.records: dict[int, list[tuple[np.dtype[Any], ...]]] = {}  # per group: its records' dtypes
        self.rows: dict[int, list[int]] = {}  # per group: its records' rows
        self.stack = ExitStack()

    def __enter__(self) -> _Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.files.clear()
        self.stack.close()

    def write(self, group: int, columns: list[np.ndarray]) -> None:
        import tempfile  # here: the evaluate command, which never spills, starts without it

        if group not in self.files:
            spill = tempfile.TemporaryFile(prefix="run-by-topic-")  # noqa: SIM115  # closed by the stack
            self.files[group] = self.stack.enter_context(spill)
            self.records[group], self.rows[group] = [], []
        for column in columns:
            self.files[group].write(np.ascontiguousarray(column).data)
        self.records[group].append(tuple(column.dtype for column in columns))
        self.rows[group].append(len(columns[0]))

    def read(self, group: int) -> tuple[np.ndarray, ...] | None:
        """The group's columns (None if nothing was written to it); its file is then closed and removed."""
        f = self.files.pop(group, None)
        if f is None:
            return None
        records, rows = self.records.pop(group), self.rows.pop(group)
        total = sum(rows)
        dtypes = [max((record[c] for record in records), key=lambda d: d.itemsize) for c in range(4)]
        columns = tuple(np.empty(total, dtype=dtype) for dtype in dtypes)
        f.seek(0)
        start = 0
        for record, n in zip(records, rows, strict=True):
            for column, dtype in zip(columns, record, strict=True):
                narrower = dtype != column.dtype  # a docid or line narrower than the group's widest
                target = np.empty(n, dtype=dtype) if narrower else column[start : start + n]
                buffer = memoryview(target).cast("B")  # type: ignore[arg-type]  # numpy's stubs give ndarray __buffer__ on Python 3.12+ only
                if f.readinto(buffer) != n * dtype.itemsize:
                    raise OSError("a temporary file of a run's rows came back short")
                if narrower:
                    column[start : start + n] = target
            start += n
        f.close()
        return columns


def _gathered(qids: list[str], columns: tuple[np.ndarray, ...]) -> Iterator[RunChunk]:
    """The rows of some topics (columns: topic code, docid, score, line; each topic's rows in file order)
    as ``RunChunk``s of whole topics, by code."""
    code, docid, score, line = columns
    code = code.astype(np.int16 if len(qids) < 2**15 else np.int32, copy=False)  # int16: a radix sort
    present = np.unique(code)
    lengths = np.bincount(code, minlength=len(qids))[present]
    order = np.argsort(code, kind="stable")
    del code, columns
    line = line.astype(np.int64, copy=False)
    ends = np.cumsum(lengths)
    first = 0  # the first topic (of ``present``) of the next chunk
    while first < len(present):
        start = int(ends[first - 1]) if first else 0
        last = max(int(np.searchsorted(ends, start + TOPIC_PIECE_ROWS, side="right")), first + 1)
        rows = order[start : int(ends[last - 1])]
        docids = docid[rows]
        yield RunChunk(
            qids=[qids[c] for c in present[first:last].tolist()],
            qid_lengths=lengths[first:last],
            docid=docids,
            docid_hash=hash_bytes(docids),
            score=score[rows],
            line=line[rows],
        )
        first = last


def _joined(part: list[np.ndarray]) -> np.ndarray:
    """The arrays of ``part`` end to end (``part`` is emptied)."""
    joined = np.concatenate(part)
    part.clear()
    return joined

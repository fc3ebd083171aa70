"""Whole files read into tables: ``read_run`` and ``read_qrels`` (the chunks' columns copied, in file order,
into growing arrays; the topics coded; a (qid, docid) given twice reported with the other errors).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from pooling.formats import Source, source_name
from pooling.trec_io.chunks import _QRELS_LINES, _RUN_LINES, _Layout, _parsed_chunks
from pooling.trec_io.errors import _MAX_ERRORS, DUPLICATE_DOCID, DUPLICATE_JUDGEMENT, ErrorLog
from pooling.trec_io.keys import any_equal_keys
from pooling.trec_io.tables import QrelsTable, RunTable


class _Column:
    """An output column filled chunk by chunk into one preallocated array (grown if the estimate was short;
    a bytes column is widened if a longer value arrives)."""

    def __init__(self, capacity: int, dtype: npt.DTypeLike) -> None:
        self.data = np.empty(capacity, dtype=dtype)
        self.size = 0

    def append(self, values: np.ndarray) -> None:
        end = self.size + len(values)
        if values.dtype.kind == "S" and values.dtype.itemsize > self.data.dtype.itemsize:
            self.data = self.data.astype(values.dtype)
        if end > len(self.data):
            grown = np.empty(max(end, len(self.data) * 3 // 2), dtype=self.data.dtype)
            _copy(grown[: self.size], self.data[: self.size])
            self.data = grown
        _copy(self.data[self.size : end], values)
        self.size = end

    def result(self) -> np.ndarray:
        return self.data[: self.size]


def _copy(to: np.ndarray, values: np.ndarray) -> None:
    """``to[:] = values`` for 1-d arrays of one length. Bytes arrays go as their bytes: numpy assigns a
    ``numpy.bytes_`` array value by value (padding each), several times slower than one copy of the
    memory."""
    if to.dtype.kind != "S" or values.dtype.kind != "S" or not to.flags.c_contiguous:
        to[:] = values
        return
    n, width, given = len(to), to.dtype.itemsize, values.dtype.itemsize
    if given == width and values.flags.c_contiguous:
        to.view(np.uint8)[:] = values.view(np.uint8)
        return
    matrix = to.view(np.uint8).reshape(n, width)
    matrix[:, :given] = np.ascontiguousarray(values).view(np.uint8).reshape(n, given)
    matrix[:, given:] = 0  # a narrower value is zero-padded, as numpy pads it


@dataclass
class _Parsed:
    n_rows: int
    line_map: list[tuple[int, int, np.ndarray | None]]  # per chunk: first row, line offset, its lines
    qid_heads: np.ndarray  # the qid of each run of equal consecutive qids (bytes)
    qid_lengths: np.ndarray  # the length of each such run
    docid: np.ndarray  # bytes, width a multiple of 8
    key: np.ndarray  # hash of (qid, docid), see RunTable.key
    value: np.ndarray  # score (float64) or relevance (int64)
    first_row: bytes  # the first data line
    last_row: bytes  # the last data line
    any_bytes: bool

    def lines(self) -> np.ndarray:
        """The 1-based line number of every row, in row order."""
        parts = [np.zeros(0, dtype=np.int64)]
        ends = [start for start, _, _ in self.line_map[1:]] + [self.n_rows]
        for (start, offset, lines), end in zip(self.line_map, ends, strict=True):
            if lines is None:
                parts.append(np.arange(offset + 1, offset + 1 + end - start, dtype=np.int64))
            else:
                parts.append(lines.astype(np.int64) + offset)
        return np.concatenate(parts)

    def line_of(self, rows: np.ndarray) -> np.ndarray:
        """1-based line numbers of the given rows."""
        starts = np.array([start for start, _, _ in self.line_map], dtype=np.intp)
        which = np.searchsorted(starts, rows, side="right") - 1
        out = np.empty(len(rows), dtype=np.int64)
        for i, (row, chunk) in enumerate(zip(rows.tolist(), which.tolist(), strict=True)):
            start, offset, lines = self.line_map[chunk]
            out[i] = offset + (row - start + 1 if lines is None else int(lines[row - start]))
        return out


def _parse_file(path: Source, layout: _Layout, errors: ErrorLog) -> _Parsed:
    """The whole file parsed (``_parsed_chunks``), the chunks' results copied, in file order, into growing
    columns. Only the columns grow with the file, not the temporaries."""
    docid_col = key_col = value_col = None
    heads: list[np.ndarray] = []
    head_lengths: list[np.ndarray] = []
    line_map: list[tuple[int, int, np.ndarray | None]] = []
    any_bytes = False
    first_row_text = last_row_text = b""
    try:
        file_size = os.stat(path).st_size if isinstance(path, str | os.PathLike) else 0
    except OSError:
        file_size = 0
    for offset, size, chunk in _parsed_chunks(path, layout, errors):
        any_bytes = any_bytes or chunk.any_bytes
        if not chunk.n_rows:
            continue
        if docid_col is None:
            estimate = int(chunk.n_rows / max(size, 1) * file_size * 1.05) + 1024
            docid_col = _Column(estimate, chunk.docid.dtype)
            key_col = _Column(estimate, np.uint64)
            value_col = _Column(estimate, layout.value_dtype)
            first_row_text = chunk.first_row
        last_row_text = chunk.last_row
        line_map.append((docid_col.size, offset, chunk.lines))
        heads.append(chunk.qid_heads)
        head_lengths.append(chunk.qid_lengths)
        docid_col.append(chunk.docid)
        key_col.append(chunk.key)  # type: ignore[union-attr]  # set with docid_col above
        value_col.append(chunk.value)  # type: ignore[union-attr]  # set with docid_col above
    if docid_col is None:
        empty = np.zeros(0, dtype=np.int64)
        return _Parsed(
            0,
            [],
            np.zeros(0, "S1"),
            empty,
            np.zeros(0, "S8"),
            np.zeros(0, np.uint64),
            np.zeros(0, layout.value_dtype),
            b"",
            b"",
            any_bytes,
        )
    return _Parsed(
        n_rows=docid_col.size,
        line_map=line_map,
        qid_heads=np.concatenate(heads),
        qid_lengths=np.concatenate(head_lengths),
        docid=docid_col.result(),
        key=key_col.result(),  # type: ignore[union-attr]  # not None when docid_col is not
        value=value_col.result(),  # type: ignore[union-attr]  # not None when docid_col is not
        first_row=first_row_text,
        last_row=last_row_text,
        any_bytes=any_bytes,
    )


def _tag_of(first_row: bytes) -> str:
    """The sixth field (run tag) of a run line."""
    fields = first_row.decode("utf-8", "replace").split()
    return fields[5] if len(fields) > 5 else ""


def _topics(heads: np.ndarray, lengths: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Topic ids (sorted by bytes) and each row's code, from the runs of equal consecutive qids."""
    if not len(heads):
        return [], np.zeros(0, dtype=np.intp)
    unique, inverse = np.unique(heads, return_inverse=True)
    topic_ids = [value.decode("utf-8", "replace") for value in unique.tolist()]
    return topic_ids, np.repeat(inverse.reshape(-1).astype(np.int32), lengths)


def _duplicates(
    topic_ids: list[str],
    topic: np.ndarray,
    docid: np.ndarray,
    line_of: Callable[[np.ndarray], np.ndarray],
    keys: np.ndarray,
    errors: ErrorLog,
    message: str,
) -> None:
    """Report every (qid, docid) seen twice. ``any_equal_keys`` rules duplicates out in linear time (the
    common case); if it finds equal keys, they are sorted (numbers, not strings) and only equal keys are
    compared as strings."""
    if not any_equal_keys(keys, topic):
        return
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    same = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    for k in same.tolist():
        i, j = int(order[k]), int(order[k + 1])
        if topic[i] == topic[j] and docid[i] == docid[j]:
            line_i, line_j = line_of(np.array([i, j])).tolist()
            first, second = (line_i, line_j) if line_i < line_j else (line_j, line_i)
            text = message.format(
                qid=repr(topic_ids[int(topic[i])]),
                docid=repr(docid[i].decode("utf-8", "replace")),
                first=first,
            )
            errors.add(second, text)


_Table = TypeVar("_Table", RunTable, QrelsTable)


def _read_table(
    source: Source,
    max_errors: int,
    layout: _Layout,
    kind: str,
    duplicate: str,
    make: Callable[[_Parsed, dict[str, Any]], _Table],
) -> _Table:
    """What reading a run and reading qrels share: the file parsed (``layout``: the fields a line needs,
    the value's column, the fields' names for messages), an empty file refused, the table made by `make`
    from the parse and the columns every table takes from it, a docid given twice for a topic listed
    (message `duplicate`) with the other bad lines, and every error raised at once."""
    display = source_name(source)
    errors = ErrorLog(display, max_errors)
    parsed = _parse_file(source, layout, errors)
    if not errors.total and not parsed.n_rows:
        errors.add(None, "file is empty" if not parsed.any_bytes else f"no {kind} rows found")
    topic_ids, topic = _topics(parsed.qid_heads, parsed.qid_lengths)
    columns = {
        "topic_ids": topic_ids,
        "topic": topic,
        "docid": parsed.docid,
        "source": display,
        "_key": parsed.key,
        "_lines": parsed.lines,
    }
    table = make(parsed, columns)
    if not errors.stopped:  # duplicates among the good rows, listed with the other errors
        _duplicates(topic_ids, topic, parsed.docid, parsed.line_of, table.key, errors, duplicate)
    errors.raise_if_any()
    return table


def read_run(source: Source, *, name: str | None = None, max_errors: int = _MAX_ERRORS) -> RunTable:
    """Read a TREC run file (a path, or a binary file object with a ``name``) into a ``RunTable``; see
    ``pooling.trec_io``'s docstring for the format.

    Raises :class:`pooling.formats.FormatError` listing the bad lines as ``FILE:LINE: message`` (see
    ``ErrorLog`` for the bound): fewer than 6 fields, a score that is not a number or not finite, invalid
    UTF-8, a NUL byte, a line over the length limit, the same (qid, docid) twice, a damaged gzip stream, a
    missing file, an empty file or one without any row.
    """

    def table(parsed: _Parsed, columns: dict[str, Any]) -> RunTable:
        tag = name if name is not None else _tag_of(parsed.first_row)
        return RunTable(**columns, score=parsed.value, name=tag, last_tag=_tag_of(parsed.last_row))

    return _read_table(source, max_errors, _RUN_LINES, "run", DUPLICATE_DOCID, table)


def read_qrels(source: Source, *, max_errors: int = _MAX_ERRORS) -> QrelsTable:
    """Read a TREC qrels file (a path, or a binary file object with a ``name``) into a ``QrelsTable``
    (see ``pooling.trec_io``'s docstring for the format); ``line`` gives each row's line.

    Raises :class:`pooling.formats.FormatError` listing the bad lines as ``FILE:LINE: message``: fewer
    than 4 fields, a relevance that is not an integer, invalid UTF-8, a NUL byte, a line over the length
    limit, the same (qid, docid) twice, a damaged gzip stream, a missing file, an empty file or one without
    any row.
    """

    def table(parsed: _Parsed, columns: dict[str, Any]) -> QrelsTable:
        return QrelsTable(**columns, grade=parsed.value)

    return _read_table(source, max_errors, _QRELS_LINES, "qrels", DUPLICATE_JUDGEMENT, table)

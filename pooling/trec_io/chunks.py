"""A chunk of whole lines parsed into columns (``_parse_chunk``: fields split and gathered, docids hashed
and values parsed while the chunk is in cache), the layouts of run and qrels lines, and a file's chunks
parsed in file order, by a few threads when cores are idle (``_parsed_chunks``, ``_iter_rows``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np

from pooling.formats import Source, current_limits, line_too_long
from pooling.trec_io.blocks import _blocks, _chunks, _next_newline
from pooling.trec_io.errors import ErrorLog
from pooling.trec_io.fields import MAX_FIELD_BYTES, _drop_long_fields, _gather, _split, _utf8_errors
from pooling.trec_io.keys import _qid_key, hash_bytes
from pooling.trec_io.values import _parse_grades, _parse_scores

RUN_FIELDS = "qid Q0 docid rank score tag"
QRELS_FIELDS = "qid iter docid rel"


@dataclass
class _Chunk:
    n_lines: int
    lines: np.ndarray | None  # line numbers counted from 1 at the chunk's first line; None: row i is line i+1
    n_rows: int
    qid_heads: np.ndarray
    qid_lengths: np.ndarray
    docid: np.ndarray
    key: np.ndarray
    value: np.ndarray
    errors: ErrorLog
    any_bytes: bool
    first_row: bytes
    last_row: bytes


@dataclass(frozen=True, slots=True)
class _Layout:
    """A kind of file's lines: the fields a line needs, the value's column (qid and docid are fields 0
    and 2), the fields' names for messages, the value's name, parser and type, and whether a line may
    have no more fields than those (`exact`)."""

    min_fields: int
    value_column: int
    expected: str
    value_name: str
    parse_value: Callable[[np.ndarray, Any, ErrorLog, np.ndarray], np.ndarray]
    value_dtype: type
    exact: bool = False


def _parse_chunk(a: np.ndarray, padded: np.ndarray, layout: _Layout) -> _Chunk:
    """Parse one chunk of whole lines (numbered from 1 here); its fields are gathered, hashed and parsed
    while they are in cache. Runs in a worker thread: numpy releases the GIL in the heavy loops."""
    errors = ErrorLog("")
    top = int(a.max())
    if top >= 0x80:
        _utf8_errors(a.tobytes(), 1, errors)
    fields = _split(
        a, layout.min_fields, (0, 2, layout.value_column), 1, errors, layout.expected, exact=layout.exact
    )
    line_bytes = current_limits().line_bytes
    line_lengths = np.diff(fields.newlines, prepend=-1) - 1
    longest = int(line_lengths.max()) if len(line_lengths) else 0
    if longest > line_bytes:
        errors.add(int(np.flatnonzero(line_lengths > line_bytes)[0]) + 1, line_too_long(line_bytes))
    n = len(fields.lines)
    if n and longest > MAX_FIELD_BYTES:  # only a line this long can hold a field that long
        _drop_long_fields(fields, errors, ("qid", "docid", layout.value_name))
        n = len(fields.lines)
    size = len(a)
    docids = _gather(padded, size, fields.starts[1], fields.ends[1])
    lines: np.ndarray | None = None if fields.every_line else fields.lines  # type: ignore[assignment]  # an ndarray unless every_line
    if n:
        first_row = _line_text(a, int(fields.starts[0][0]))
        last_row = _line_text(a, int(fields.starts[0][-1]))
        qids = _gather(padded, size, fields.starts[0], fields.ends[0])
        raw = _gather(padded, size, fields.starts[2], fields.ends[2])
        value = layout.parse_value(raw, fields.lines, errors, fields.ends[2] - fields.starts[2])
        if errors.items:  # rows on a line with an error are left out (the file is bad anyway)
            row_lines = np.arange(1, n + 1) if lines is None else lines
            bad = np.array([line for line, _ in errors.items if line is not None], dtype=np.int64)
            keep = ~np.isin(row_lines, bad)
            if not keep.all():
                docids, qids, value, lines = docids[keep], qids[keep], value[keep], row_lines[keep]
                n = len(docids)
    key = hash_bytes(docids)
    if n:
        change = np.empty(n, dtype=bool)
        change[0] = True
        np.not_equal(qids[1:], qids[:-1], out=change[1:])
        heads = np.flatnonzero(change)
        qid_heads, qid_lengths = qids[heads], np.diff(np.append(heads, n))
        key += np.repeat(_qid_key(qid_heads), qid_lengths)
    else:
        qid_heads, qid_lengths, value = np.zeros(0, "S1"), np.zeros(0, np.int64), np.zeros(0)
        first_row = last_row = b""
    return _Chunk(
        fields.n_lines,
        lines,
        n,
        qid_heads,
        qid_lengths,
        docids,
        key,
        value,
        errors,
        top > 32,
        first_row,
        last_row,
    )


def _line_text(a: np.ndarray, start: int) -> bytes:
    return a[start : _next_newline(a, start, len(a))].tobytes()


def _workers() -> int:
    """Threads for parsing: the idle cores, at most 4. On a busy machine one thread is faster than several
    fighting over the GIL. Idle is counted from the tasks running now (Linux's /proc/loadavg, less this
    process's own thread), not from the load average, which lags by a minute: a command run just after
    another (a pipeline, a benchmark) would see the machine its predecessor left busy."""
    cpus = os.cpu_count() or 1
    return max(1, min(4, cpus, int(cpus - _busy_cores() + 0.5)))


def _busy_cores() -> float:
    """Cores other tasks keep busy now: the runnable tasks of /proc/loadavg besides the caller, or the
    one-minute load average where there is no /proc (it lags, but is what such a system offers)."""
    try:
        with open(_LOADAVG, encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
        return max(0, running - 1)
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0]
        except OSError:
            return (os.cpu_count() or 1) - 1.0  # nothing to go by: one thread


_LOADAVG = "/proc/loadavg"


def _parsed_chunks(
    path: Source, layout: _Layout, errors: ErrorLog, progress: Callable[[float], None] | None = None
) -> Iterator[tuple[int, int, _Chunk]]:
    """Parse the file block by block, each block chunk by chunk: qid (field 0), docid (field 2) and one value
    field of every data line. Chunks of a block are parsed by a few threads. Yields, in file order,
    (line offset, chunk bytes, chunk): line ``offset + k`` of the file is the chunk's line k (from 1). The
    chunk's errors are already in ``errors``, with file line numbers. Memory holds one block."""
    first_line = 1
    workers = _workers()
    with ExitStack() as stack:
        pool = None
        for buffer, size in _blocks(path, errors, progress):
            bounds = _chunks(buffer, size)
            if pool is None and workers > 1 and len(bounds) > 1:
                # Here: a busy machine's one thread, or a file of one chunk, starts no pool.
                from concurrent.futures import ThreadPoolExecutor

                pool = stack.enter_context(ThreadPoolExecutor(max_workers=workers))

            def work(bound: tuple[int, int], buffer: np.ndarray = buffer) -> _Chunk:
                start, end = bound
                return _parse_chunk(buffer[start:end], buffer[start:], layout)

            results = pool.map(work, bounds) if pool is not None and len(bounds) > 1 else map(work, bounds)
            for (start, end), chunk in zip(bounds, results, strict=True):
                offset = first_line - 1
                for line, message in chunk.errors.items:
                    errors.add(None if line is None else line + offset, message)
                errors.total += chunk.errors.total - len(chunk.errors.items)
                first_line += chunk.n_lines
                errors.lines_read = first_line - 1
                yield offset, end - start, chunk
                if errors.full:  # enough said: stop reading (the rest of the file is not read)
                    errors.stopped = True
                    return


def _iter_rows(
    source: Source, errors: ErrorLog, layout: _Layout, progress: Callable[[float], None] | None
) -> Iterator[tuple[_Chunk, np.ndarray, np.ndarray]]:
    """The parsed chunks that hold rows, with the file line of each row."""
    for offset, _size, chunk in _parsed_chunks(source, layout, errors, progress):
        errors.bytes_seen = errors.bytes_seen or chunk.any_bytes
        if not chunk.n_rows:
            continue
        errors.rows_seen = True
        if chunk.lines is None:
            line = np.arange(offset + 1, offset + 1 + chunk.n_rows, dtype=np.int64)
        else:
            line = chunk.lines.astype(np.int64) + offset
        yield chunk, line, chunk.value


_RUN_LINES = _Layout(6, 4, RUN_FIELDS, "score", _parse_scores, np.float64)
_QRELS_LINES = _Layout(4, 3, QRELS_FIELDS, "relevance", _parse_grades, np.int64, exact=True)

"""A chunk's lines split into fields as trec_eval splits them (``_split``: a fast path when every line has
exactly the expected fields, the general one for the rest), the UTF-8 check of a chunk, the limit on a
field's length (``MAX_FIELD_BYTES``) and the fields gathered into ``numpy.bytes_`` arrays (``_gather``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pooling.formats import nul_message
from pooling.trec_io.blocks import _PAD
from pooling.trec_io.errors import _MAX_ERRORS, ErrorLog


def _utf8_errors(chunk: bytes, first_line: int, errors: ErrorLog) -> None:
    """Report each line of the chunk that is not valid UTF-8 (only called if a byte >= 0x80 occurs)."""
    try:
        chunk.decode("utf-8")
        return
    except UnicodeDecodeError:
        pass
    for offset, raw in enumerate(chunk.split(b"\n")):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start]
            errors.add(
                first_line + offset, f"invalid UTF-8 (byte 0x{bad:02x} at byte column {exc.start + 1})"
            )
            if len(errors.items) >= _MAX_ERRORS:
                return


class _Consecutive:
    """Line numbers first, first + 1, ...: what ``lines[i]`` means when every line is a data row (built
    only when an error needs one)."""

    def __init__(self, first: int, n: int) -> None:
        self.first, self.n = first, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        return self.first + int(i)


@dataclass
class _Fields:
    n_lines: int  # lines in the chunk
    lines: np.ndarray | _Consecutive  # 1-based line number of each data row
    every_line: bool  # every line is a data row (then lines[i] = first_line + i)
    starts: list[np.ndarray]  # per requested column: byte offset of the field in the chunk
    ends: list[np.ndarray]
    newlines: np.ndarray  # byte offset of every line's newline


def _split(
    a: np.ndarray,
    min_fields: int,
    columns: tuple[int, ...],
    first_line: int,
    errors: ErrorLog,
    expected: str,
    *,
    exact: bool = False,
) -> _Fields:
    """Find the requested fields of every data line of ``a`` (a chunk ending with a newline). A line with
    fewer than ``min_fields`` fields is an error; one with more is too if ``exact`` (trec_eval ignores
    what follows a run line's tag but refuses a qrels line with anything after its relevance).

    Fields are separated as trec_eval separates them, by C's ``isspace``: space, ``\\t``, ``\\n``,
    ``\\v``, ``\\f``, ``\\r``. Other control bytes belong to the field they are in; a NUL byte is an
    error on its line (trec_eval's files "may contain no NULL characters")."""
    ws = a <= 32
    ws_pos = np.flatnonzero(ws)
    values = a[ws_pos]
    odd = (values < 9) | ((values > 13) & (values < 32))  # control bytes that C's isspace does not take
    nul_pos = None
    if odd.any():
        nul_pos = ws_pos[values == 0]
        ws[ws_pos[odd]] = False
        ws_pos, values = ws_pos[~odd], values[~odd]
    is_newline = values == 10
    del values
    n_lines = int(np.count_nonzero(is_newline))

    # Fast path: every line has exactly min_fields fields separated by single whitespace bytes, no comments.
    if (
        nul_pos is None
        and len(ws_pos) == min_fields * n_lines
        and is_newline[min_fields - 1 :: min_fields].all()
        and not ws[0]
        and not np.any(ws[1:] & ws[:-1])  # no two whitespace bytes in a row: no empty field
    ):
        grid = ws_pos.reshape(n_lines, min_fields)
        line_starts = np.empty(n_lines, dtype=np.intp)
        line_starts[0] = 0
        line_starts[1:] = grid[:-1, -1] + 1
        if not np.any(a[line_starts] == 35):
            lines: np.ndarray | _Consecutive = _Consecutive(first_line, n_lines)
            starts = [line_starts if c == 0 else grid[:, c - 1] + 1 for c in columns]
            ends = [grid[:, c] for c in columns]
            return _Fields(n_lines, lines, True, starts, ends, grid[:, -1])

    # General path: any whitespace, comments, blank lines, extra fields, short lines.
    newlines = ws_pos[is_newline]
    del ws_pos, is_newline
    prev = np.empty_like(ws)
    prev[0] = True
    prev[1:] = ws[:-1]
    tok_start = np.flatnonzero(~ws & prev)
    tok_end = np.flatnonzero(ws & ~prev)
    del prev
    tok_line = np.searchsorted(newlines, tok_start)
    counts = np.bincount(tok_line, minlength=n_lines)
    first_tok = np.cumsum(counts) - counts
    has_tokens = counts > 0
    comment = np.zeros(n_lines, dtype=bool)
    comment[has_tokens] = a[tok_start[first_tok[has_tokens]]] == 35
    if nul_pos is not None and len(nul_pos):
        nul_line = np.searchsorted(newlines, nul_pos)
        first_nul = np.flatnonzero(np.concatenate(([True], nul_line[1:] != nul_line[:-1])))
        line_starts = np.concatenate(([0], newlines[:-1] + 1))
        for idx, pos in zip(nul_line[first_nul].tolist(), nul_pos[first_nul].tolist(), strict=True):
            errors.add(first_line + idx, nul_message(pos - int(line_starts[idx]) + 1))
        comment[nul_line] = True  # not a data line: its error is reported
    wrong = has_tokens & ~comment & ((counts != min_fields) if exact else (counts < min_fields))
    for idx in np.flatnonzero(wrong)[:_MAX_ERRORS].tolist():
        errors.add(first_line + idx, f"expected {min_fields} fields '{expected}', found {int(counts[idx])}")
    errors.total += max(0, int(np.count_nonzero(wrong)) - _MAX_ERRORS)
    data = np.flatnonzero(has_tokens & ~comment & ~wrong)
    base = first_tok[data]
    lines = (data + first_line).astype(np.int64)
    starts = [tok_start[base + c] for c in columns]
    ends = [tok_end[base + c] for c in columns]
    return _Fields(n_lines, lines, False, starts, ends, newlines)


#: The longest qid, docid or value a line may have: the columns are fixed-width arrays, so one longer
#: field would widen a whole chunk (and the database keeps docids of 255 characters at most).
MAX_FIELD_BYTES = 1024


def _drop_long_fields(fields: _Fields, errors: ErrorLog, names: tuple[str, str, str]) -> None:
    """Report the rows with a gathered field over MAX_FIELD_BYTES and leave them out of ``fields``."""
    too_long = np.zeros(len(fields.lines), dtype=bool)
    for name, starts, ends in zip(names, fields.starts, fields.ends, strict=True):
        long = np.flatnonzero(ends - starts > MAX_FIELD_BYTES)
        for i in long[:_MAX_ERRORS].tolist():
            errors.add(int(fields.lines[i]), f"{name} longer than {MAX_FIELD_BYTES:,} bytes")
        too_long[long] = True
    if too_long.any():
        keep = ~too_long
        lines = np.asarray([fields.lines[i] for i in range(len(keep))] if fields.every_line else fields.lines)
        fields.lines = lines[keep]
        fields.every_line = False
        fields.starts = [starts[keep] for starts in fields.starts]
        fields.ends = [ends[keep] for ends in fields.ends]


def _gather(padded: np.ndarray, size: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The tokens [starts, ends) of ``padded`` as a ``numpy.bytes_`` array (one bulk copy)."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype="S1")
    lengths = ends - starts
    width = int(lengths.max())
    if width <= _PAD:
        # Every offset of the chunk as the start of a width-byte item: one copy of an item per token
        # (numpy copies a uint8 matrix's rows byte by byte).
        items = np.ndarray((size,), dtype=f"V{width}", buffer=padded, strides=(1,))
        matrix = items[starts].view(np.uint8).reshape(n, width)
    else:
        matrix = padded[np.minimum(starts[:, None] + np.arange(width), len(padded) - 1)]
    if int(lengths.min()) != width:
        matrix *= np.arange(width) < lengths[:, None]
    return np.ascontiguousarray(matrix).view(f"S{width}").reshape(n)

"""The value column parsed: scores (fixed-format decimals with exact integer arithmetic, the rest by numpy's
strtod; a score that is not a finite number is an error) and integer grades.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pooling.trec_io.errors import _MAX_ERRORS, ErrorLog

_POW10 = 10.0 ** np.arange(16)


def _uniform_decimals(raw: np.ndarray) -> np.ndarray | None:
    """Parse a chunk of scores written in one fixed format (``[-]ddd.dddddd``: same width, the point in the
    same column, at most 15 digits) with integer arithmetic; None if the chunk is not like that.

    Exact: the digits form an integer below 2^53 and 10^k (k <= 15) is exact, so their quotient is the
    correctly rounded double, i.e. what strtod returns (Clinger's fast path)."""
    n, width = len(raw), raw.dtype.itemsize
    if n == 0 or width > 17:
        return None
    m = raw.view(np.uint8).reshape(n, width)
    negative = bool(m[0, 0] == 45)
    if negative and not np.all(m[:, 0] == 45):
        return None
    digits = m - np.uint8(48)
    first = 1 if negative else 0
    dots = np.flatnonzero(m[0, first:] == 46) + first
    if len(dots) > 1:
        return None
    point = int(dots[0]) if len(dots) else -1
    columns = [j for j in range(first, width) if j != point]
    if not columns or len(columns) > 15 or (point >= 0 and not np.all(m[:, point] == 46)):
        return None
    if np.any(digits[:, columns] > 9):
        return None
    mantissa = np.zeros(n, dtype=np.int64)
    for j in columns:
        mantissa *= 10
        mantissa += digits[:, j]
    values = mantissa / _POW10[width - point - 1 if point >= 0 else 0]
    return -values if negative else values


def _fast_scores(raw: np.ndarray, lengths: np.ndarray) -> np.ndarray | None:
    """``_uniform_decimals`` on each group of scores of one width (a chunk usually has one to three)."""
    n, width = len(raw), raw.dtype.itemsize
    if n == 0 or width > 17:
        return None
    matrix = raw.view(np.uint8).reshape(n, width)
    first, last = int(lengths.min()), int(lengths.max())
    if first == last:
        return _uniform_decimals(raw)
    if last - first > 3:
        return None
    out = np.empty(n, dtype=np.float64)
    for length in range(first, last + 1):
        rows = np.flatnonzero(lengths == length)
        if not len(rows):
            continue
        group = np.ascontiguousarray(matrix[rows, :length]).view(f"S{length}").reshape(len(rows))
        values = _uniform_decimals(group)
        if values is None:
            return None
        out[rows] = values
    return out


def _parse_scores(raw: np.ndarray, lines: Any, errors: ErrorLog, lengths: np.ndarray) -> np.ndarray:
    fast = _fast_scores(raw, lengths)
    if fast is not None:
        return fast
    text = raw
    underscore = np.char.find(raw, b"_") >= 0  # Python's float takes "1_000"; trec_eval's strtod does not
    if underscore.any():
        for i in np.flatnonzero(underscore)[:_MAX_ERRORS].tolist():
            errors.add(int(lines[i]), f"score '{raw[i].decode('utf-8', 'replace')}' is not a number")
        text = raw.copy()
        text[underscore] = b"0"
    try:
        scores = text.astype(np.float64)
    except ValueError:
        scores = np.zeros(len(raw), dtype=np.float64)
        for i, token in enumerate(text.tolist()):
            try:
                scores[i] = float(token)
            except ValueError:
                errors.add(int(lines[i]), f"score '{token.decode('utf-8', 'replace')}' is not a number")
    bad = np.flatnonzero(~np.isfinite(scores))
    for i in bad[:_MAX_ERRORS].tolist():
        errors.add(int(lines[i]), f"score '{raw[i].decode('utf-8', 'replace')}' is not a finite number")
    errors.total += max(0, len(bad) - _MAX_ERRORS)
    return scores


def _parse_grades(raw: np.ndarray, lines: Any, errors: ErrorLog, lengths: np.ndarray) -> np.ndarray:
    grades = np.zeros(len(raw), dtype=np.int64)
    if not len(raw):
        return grades
    # Only [+-]digits is an integer: Python's int() would also take "1_0" and numpy " 1".
    matrix = raw.view(np.uint8).reshape(len(raw), raw.dtype.itemsize)
    digit = (matrix >= 48) & (matrix <= 57)
    sign = (matrix[:, 0] == 43) | (matrix[:, 0] == 45)
    lengths = np.count_nonzero(matrix, axis=1)
    ok_chars = digit | (matrix == 0)
    ok_chars[:, 0] |= sign
    valid = ok_chars.all(axis=1) & (lengths > sign.astype(np.intp))
    if valid.all():
        if matrix.shape[1] <= 18:  # below 10^18: the digits' integer fits int64
            # Digit by digit (numpy's conversion of bytes_ to integers goes through Python's int).
            for j in range(matrix.shape[1]):
                column = matrix[:, j]
                grades = np.where(digit[:, j], grades * 10 + (column - 48), grades)
            return np.where(matrix[:, 0] == 45, -grades, grades)
        try:
            return raw.astype(np.int64)
        except (ValueError, OverflowError):
            valid[:] = True
    for i, token in enumerate(raw.tolist()):
        text = token.decode("utf-8", "replace")
        try:
            if not valid[i]:
                raise ValueError(text)
            grades[i] = int(text)
        except (ValueError, OverflowError):
            errors.add(int(lines[i]), f"relevance '{text}' is not an integer")
    return grades

"""Fast readers of TREC run and qrels files for evaluation (pure: no Django).

The readers parse a whole file into numpy arrays in bulk: the bytes are read in chunks of whole lines, the
field boundaries are found with vectorised comparisons, and each field is gathered into a fixed-width
bytes array (``numpy.bytes_``) in one copy. Python does per-line work only for lines that are wrong, so a
5,000,000-line run is read in about a second. Errors still name the line: ``FILE:LINE: message``.

Formats (SPEC §3, as trec_eval reads them):

- run: ``qid Q0 docid rank score tag``; fields are separated by any run of whitespace (any byte <= 0x20
  separates fields); at least 6 fields, those after the sixth are ignored; the rank column is ignored;
  lines whose first field starts with ``#`` and blank lines are skipped. A score that is not a finite
  number is an error, and so is the same (qid, docid) twice ("duplicate docs").
- qrels: ``qid iter docid rel``; at least 4 fields, later ones ignored; ``rel`` is an integer, negative
  allowed (negative means "in the pool, not judged"); the same (qid, docid) twice is an error.

A file whose first bytes are the gzip magic number is decompressed transparently. Text must be UTF-8.
Document ids are kept as UTF-8 bytes, so that comparing them is trec_eval's ``strcmp`` (byte order).
"""

from __future__ import annotations

import gzip
import math
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = [
    "QrelsTable",
    "RunTable",
    "TrecFormatError",
    "hash_bytes",
    "read_qrels",
    "read_run",
]

_CHUNK_BYTES = 1 << 20  # 1 MiB of whole lines per parsing step: temporaries stay in cache and are reused
_PAD = 64  # zero bytes after each chunk, so short tokens can be gathered with a strided view
_MAX_ERRORS = 50
_GZIP_MAGIC = b"\x1f\x8b"

RUN_FIELDS = "qid Q0 docid rank score tag"
QRELS_FIELDS = "qid iter docid rel"


class TrecFormatError(ValueError):
    """A run or qrels file is malformed. ``errors`` lists every problem found as ``FILE:LINE: message``."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


# ---------------------------------------------------------------------------------------------------------
# Hashing of byte strings (used to join runs with qrels and to find duplicates without sorting strings)

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


def _topic_key(topic_ids: list[str]) -> np.ndarray:
    """Per-topic uint64 mixed into row keys, so that the same docid under two topics has two keys."""
    if not topic_ids:
        return np.zeros(0, dtype=np.uint64)
    encoded = np.array([t.encode("utf-8") for t in topic_ids], dtype=np.bytes_)
    return _fmix(hash_bytes(encoded) ^ np.uint64(0x2545F4914F6CDD1D))


def _row_keys(topic_ids: list[str], topic: np.ndarray, docid: np.ndarray) -> np.ndarray:
    return hash_bytes(docid) + _topic_key(topic_ids)[topic]


# ---------------------------------------------------------------------------------------------------------
# Tables


def _as_bytes_array(values: list[bytes]) -> np.ndarray:
    if not values:
        return np.zeros(0, dtype="S1")
    return np.array(values, dtype=np.bytes_)


@dataclass(eq=False)
class RunTable:
    """A run held as arrays, one row per (qid, docid, score).

    ``topic_ids[topic[i]]`` is the qid of row i, ``docid[i]`` its docid as UTF-8 bytes and ``score[i]`` its
    score. Rows are in file order. ``name`` is the run tag (sixth field of the first row) or the name given.
    """

    topic_ids: list[str]
    topic: np.ndarray
    docid: np.ndarray
    score: np.ndarray
    name: str = ""
    source: str = "<dict>"
    _key: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.score)

    @property
    def key(self) -> np.ndarray:
        """uint64 hash of each row's (qid, docid); equal pairs have equal keys (see ``hash_bytes``)."""
        if self._key is None:
            self._key = _row_keys(self.topic_ids, self.topic, self.docid)
        return self._key

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], *, name: str = "") -> RunTable:
        """Build from ``{qid: {docid: score}}`` (pytrec_eval's layout). A non-finite score is a ValueError."""
        if isinstance(run, RunTable):
            return run
        topic_ids: list[str] = []
        codes: list[int] = []
        docids: list[bytes] = []
        scores: list[float] = []
        for qid, docs in run.items():
            code = len(topic_ids)
            topic_ids.append(str(qid))
            for docid, score in docs.items():
                value = float(score)
                if not math.isfinite(value):
                    raise ValueError(
                        f"score {score!r} of qid {qid!r}, docid {docid!r} is not a finite number"
                    )
                codes.append(code)
                docids.append(str(docid).encode("utf-8"))
                scores.append(value)
        return cls(
            topic_ids=topic_ids,
            topic=np.array(codes, dtype=np.intp),
            docid=_as_bytes_array(docids),
            score=np.array(scores, dtype=np.float64),
            name=name,
        )

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, every topic of the table included."""
        out: dict[str, dict[str, float]] = {t: {} for t in self.topic_ids}
        for code, docid, score in zip(
            self.topic.tolist(), self.docid.tolist(), self.score.tolist(), strict=True
        ):
            out[self.topic_ids[code]][docid.decode("utf-8")] = score
        return out


@dataclass(eq=False)
class QrelsTable:
    """Qrels held as arrays, one row per judged (qid, docid): ``grade[i]`` is the integer label.

    A negative grade means "in the pool but not judged" (trec_eval's convention): such a document is not
    judged, neither relevant nor non-relevant.
    """

    topic_ids: list[str]
    topic: np.ndarray
    docid: np.ndarray
    grade: np.ndarray
    source: str = "<dict>"
    _key: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.grade)

    @property
    def key(self) -> np.ndarray:
        """uint64 hash of each row's (qid, docid), comparable with ``RunTable.key``."""
        if self._key is None:
            self._key = _row_keys(self.topic_ids, self.topic, self.docid)
        return self._key

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]]) -> QrelsTable:
        """Build from ``{qid: {docid: grade}}``. A grade that is not an integer is a ValueError."""
        if isinstance(qrels, QrelsTable):
            return qrels
        topic_ids: list[str] = []
        codes: list[int] = []
        docids: list[bytes] = []
        grades: list[int] = []
        for qid, docs in qrels.items():
            if not docs:
                continue  # a qrels file cannot hold a topic without lines: neither does the table
            code = len(topic_ids)
            topic_ids.append(str(qid))
            for docid, grade in docs.items():
                if isinstance(grade, bool) or int(grade) != grade:
                    raise ValueError(f"grade {grade!r} of qid {qid!r}, docid {docid!r} is not an integer")
                codes.append(code)
                docids.append(str(docid).encode("utf-8"))
                grades.append(int(grade))
        return cls(
            topic_ids=topic_ids,
            topic=np.array(codes, dtype=np.intp),
            docid=_as_bytes_array(docids),
            grade=np.array(grades, dtype=np.int64),
        )

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: grade}}``, every topic of the table included."""
        out: dict[str, dict[str, int]] = {t: {} for t in self.topic_ids}
        for code, docid, grade in zip(
            self.topic.tolist(), self.docid.tolist(), self.grade.tolist(), strict=True
        ):
            out[self.topic_ids[code]][docid.decode("utf-8")] = grade
        return out


# ---------------------------------------------------------------------------------------------------------
# Reading


class _Errors:
    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[tuple[int, str]] = []
        self.total = 0

    def add(self, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.items) < _MAX_ERRORS:
            self.items.append((line or 0, message))

    def raise_if_any(self) -> None:
        if not self.total:
            return
        ordered = sorted(self.items, key=lambda item: item[0])
        lines = [f"{self.source}:{ln}: {msg}" if ln else f"{self.source}: {msg}" for ln, msg in ordered]
        if self.total > len(ordered):
            lines.append(f"{self.source}: ... and {self.total - len(ordered)} more errors")
        raise TrecFormatError(lines)


def _gzip_failure_line(path: Path) -> int:
    """The line being read when a gzip stream fails (counted again in small steps, on the error path)."""
    lines = 0
    try:
        with gzip.open(path, "rb") as stream:
            while block := stream.read1(1 << 16):
                lines += block.count(b"\n")
    except (OSError, EOFError, zlib.error):
        pass
    return lines + 1


def _load(path: Path, errors: _Errors) -> np.ndarray | None:
    """The file's bytes (decompressed if gzip), ending with a newline, followed by _PAD zero bytes."""
    try:
        with path.open("rb") as probe:
            magic = probe.read(2)
    except FileNotFoundError:
        errors.add(None, "no such file")
        return None
    except OSError as exc:
        errors.add(None, f"cannot read: {exc.strerror or exc}")
        return None
    if magic == _GZIP_MAGIC:
        try:
            with gzip.open(path, "rb") as stream:
                data = stream.read()
        except EOFError:
            errors.add(_gzip_failure_line(path), "truncated gzip file (the compressed data ends early)")
            return None
        except (gzip.BadGzipFile, zlib.error) as exc:
            errors.add(_gzip_failure_line(path), f"corrupt gzip file: {exc}")
            return None
        size = len(data)
        buffer = np.zeros(size + 1 + _PAD, dtype=np.uint8)
        buffer[:size] = np.frombuffer(data, dtype=np.uint8)
        del data
    else:
        size = path.stat().st_size
        buffer = np.zeros(size + 1 + _PAD, dtype=np.uint8)
        with path.open("rb") as stream:
            size = stream.readinto(memoryview(buffer)[:size])
    if size and buffer[size - 1] != 10:
        buffer[size] = 10
        size += 1
    return buffer[: size + _PAD]


def _next_newline(buffer: np.ndarray, pos: int, size: int) -> int:
    """Offset of the first newline at or after ``pos`` (``size`` if none), searching in growing windows."""
    window = 1 << 12
    while pos < size:
        found = np.flatnonzero(buffer[pos : min(pos + window, size)] == 10)
        if len(found):
            return pos + int(found[0])
        pos += window
        window *= 4
    return size


def _chunks(buffer: np.ndarray) -> Iterator[tuple[int, int]]:
    """(start, end) byte offsets of consecutive pieces of whole lines of about _CHUNK_BYTES each."""
    size = len(buffer) - _PAD
    start = 0
    while start < size:
        end = min(start + _CHUNK_BYTES, size)
        if end < size:
            end = min(_next_newline(buffer, end - 1, size) + 1, size)
        yield start, end
        start = end


def _utf8_errors(chunk: bytes, first_line: int, errors: _Errors) -> None:
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


@dataclass
class _Fields:
    n_lines: int  # lines in the chunk
    lines: np.ndarray  # 1-based line number of each data row
    starts: list[np.ndarray]  # per requested column: byte offset of the field in the chunk
    ends: list[np.ndarray]


def _split(
    a: np.ndarray, min_fields: int, columns: tuple[int, ...], first_line: int, errors: _Errors, expected: str
) -> _Fields:
    """Find the requested fields of every data line of ``a`` (a chunk ending with a newline)."""
    ws = a <= 32
    ws_pos = np.flatnonzero(ws)
    is_newline = a[ws_pos] == 10
    n_lines = int(np.count_nonzero(is_newline))

    # Fast path: every line has exactly min_fields fields separated by single whitespace bytes, no comments.
    if (
        len(ws_pos) == min_fields * n_lines
        and is_newline[min_fields - 1 :: min_fields].all()
        and not ws[0]
        and not np.any(ws[1:] & ws[:-1])  # no two whitespace bytes in a row: no empty field
    ):
        grid = ws_pos.reshape(n_lines, min_fields)
        line_starts = np.empty(n_lines, dtype=np.intp)
        line_starts[0] = 0
        line_starts[1:] = grid[:-1, -1] + 1
        if not np.any(a[line_starts] == 35):
            lines = np.arange(first_line, first_line + n_lines, dtype=np.int64)
            starts = [line_starts if c == 0 else grid[:, c - 1] + 1 for c in columns]
            ends = [grid[:, c] for c in columns]
            return _Fields(n_lines, lines, starts, ends)

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
    short = has_tokens & ~comment & (counts < min_fields)
    for idx in np.flatnonzero(short)[:_MAX_ERRORS].tolist():
        errors.add(first_line + idx, f"expected {min_fields} fields '{expected}', found {int(counts[idx])}")
    errors.total += max(0, int(np.count_nonzero(short)) - _MAX_ERRORS)
    data = np.flatnonzero(has_tokens & ~comment & (counts >= min_fields))
    base = first_tok[data]
    lines = (data + first_line).astype(np.int64)
    starts = [tok_start[base + c] for c in columns]
    ends = [tok_end[base + c] for c in columns]
    return _Fields(n_lines, lines, starts, ends)


def _gather(padded: np.ndarray, size: int, starts: np.ndarray, ends: np.ndarray, align: bool) -> np.ndarray:
    """The tokens [starts, ends) of ``padded`` as a ``numpy.bytes_`` array (one bulk copy). With ``align``
    the width is a multiple of 8, so that ``hash_bytes`` reads the array without copying it."""
    n = len(starts)
    if n == 0:
        return np.zeros(0, dtype="S8" if align else "S1")
    lengths = ends - starts
    width = int(lengths.max())
    if align:
        width = -(-width // 8) * 8
    if width <= _PAD:
        view = as_strided(padded, shape=(size, width), strides=(1, 1), writeable=False)
        matrix = view[starts]
    else:
        matrix = padded[np.minimum(starts[:, None] + np.arange(width), len(padded) - 1)]
    if int(lengths.min()) != width:
        matrix *= np.arange(width) < lengths[:, None]
    return np.ascontiguousarray(matrix).view(f"S{width}").reshape(n)


def _read_columns(
    path: Path, min_fields: int, columns: tuple[int, ...], expected: str, errors: _Errors
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray | None, bool]:
    """Parse the file; return (line numbers, one bytes array per column, the bytes, whether any byte is
    not whitespace)."""
    buffer = _load(path, errors)
    if buffer is None:
        return np.zeros(0, dtype=np.int64), [np.zeros(0, dtype="S1") for _ in columns], None, False
    lines_parts: list[np.ndarray] = []
    col_parts: list[list[np.ndarray]] = [[] for _ in columns]
    any_bytes = False
    first_line = 1
    for start, end in _chunks(buffer):
        a = buffer[start:end]
        top = int(a.max())
        any_bytes = any_bytes or top > 32
        if top >= 0x80:
            _utf8_errors(a.tobytes(), first_line, errors)
        fields = _split(a, min_fields, columns, first_line, errors, expected)
        first_line += fields.n_lines
        padded = buffer[start:]
        for j in range(len(columns)):
            aligned = columns[j] == 2  # the docid column, hashed next
            col_parts[j].append(_gather(padded, end - start, fields.starts[j], fields.ends[j], aligned))
        lines_parts.append(fields.lines)
    if not lines_parts:
        return np.zeros(0, dtype=np.int64), [np.zeros(0, dtype="S1") for _ in columns], buffer, any_bytes
    lines = np.concatenate(lines_parts) if len(lines_parts) > 1 else lines_parts[0]
    cols = [np.concatenate(parts) if len(parts) > 1 else parts[0] for parts in col_parts]
    if len(col_parts[0]) > 1 and 2 in columns:
        docids = cols[columns.index(2)]
        width = -(-docids.dtype.itemsize // 8) * 8
        if width != docids.dtype.itemsize:
            cols[columns.index(2)] = docids.astype(f"S{width}")
    return lines, cols, buffer, any_bytes


def _first_tag(buffer: np.ndarray | None, line: int) -> str:
    """The sixth field (run tag) of the given line."""
    if buffer is None:
        return ""
    size = len(buffer) - _PAD
    start = 0
    for _ in range(line - 1):
        start = _next_newline(buffer, start, size) + 1
    end = _next_newline(buffer, start, size)
    fields = buffer[start:end].tobytes().decode("utf-8", "replace").split()
    return fields[5] if len(fields) > 5 else ""


def _topics(qids: np.ndarray, errors: _Errors, lines: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Codes for the qid column: runs of equal qids are found first, so only their heads are sorted."""
    n = len(qids)
    if n == 0:
        return [], np.zeros(0, dtype=np.intp)
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(qids[1:], qids[:-1], out=change[1:])
    heads = np.flatnonzero(change)
    unique, inverse = np.unique(qids[heads], return_inverse=True)
    topic_ids: list[str] = []
    for value in unique.tolist():
        try:
            topic_ids.append(value.decode("utf-8"))
        except UnicodeDecodeError:
            topic_ids.append(value.decode("utf-8", "replace"))
    lengths = np.diff(np.append(heads, n))
    return topic_ids, np.repeat(inverse.astype(np.intp), lengths)


def _duplicates(
    topic_ids: list[str],
    topic: np.ndarray,
    docid: np.ndarray,
    lines: np.ndarray,
    keys: np.ndarray,
    errors: _Errors,
    message: str,
) -> None:
    """Report every (qid, docid) seen twice. Keys are sorted (numbers, not strings); only equal keys are
    compared as strings."""
    sorted_keys = np.sort(keys)
    if not np.any(sorted_keys[1:] == sorted_keys[:-1]):
        return
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    same = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    for k in same.tolist():
        i, j = int(order[k]), int(order[k + 1])
        if topic[i] == topic[j] and docid[i] == docid[j]:
            first, second = (i, j) if lines[i] < lines[j] else (j, i)
            text = message.format(
                qid=topic_ids[int(topic[i])],
                docid=docid[i].decode("utf-8", "replace"),
                first=int(lines[first]),
            )
            errors.add(int(lines[second]), text)


def _source_name(path: str | Path) -> str:
    return str(path)


def read_run(path: str | Path, *, name: str | None = None) -> RunTable:
    """Read a TREC run file into a ``RunTable`` (see the module docstring for the format).

    Raises ``TrecFormatError`` listing every bad line as ``FILE:LINE: message`` (at most 50, then a count):
    fewer than 6 fields, a score that is not a number or not finite, invalid UTF-8, the same (qid, docid)
    twice, a damaged gzip stream, an empty file or one without any row.
    """
    path = Path(path)
    source = _source_name(path)
    errors = _Errors(source)
    lines, (qids, docids, scores_raw), buffer, any_bytes = _read_columns(
        path, 6, (0, 2, 4), RUN_FIELDS, errors
    )
    if not errors.total and not len(lines):
        errors.add(None, "file is empty" if not any_bytes else "no run rows found")
    scores = _parse_scores(scores_raw, lines, errors)
    topic_ids, topic = _topics(qids, errors, lines)
    errors.raise_if_any()
    table = RunTable(
        topic_ids=topic_ids,
        topic=topic,
        docid=docids,
        score=scores,
        name=name if name is not None else _first_tag(buffer, int(lines[0])),
        source=source,
    )
    _duplicates(
        topic_ids,
        topic,
        docids,
        lines,
        table.key,
        errors,
        "duplicate docs: docid '{docid}' for qid '{qid}' (first at line {first})",
    )
    errors.raise_if_any()
    return table


def _parse_scores(raw: np.ndarray, lines: np.ndarray, errors: _Errors) -> np.ndarray:
    try:
        scores = raw.astype(np.float64)
    except ValueError:
        scores = np.zeros(len(raw), dtype=np.float64)
        for i, token in enumerate(raw.tolist()):
            try:
                scores[i] = float(token)
            except ValueError:
                errors.add(int(lines[i]), f"score '{token.decode('utf-8', 'replace')}' is not a number")
    bad = np.flatnonzero(~np.isfinite(scores))
    for i in bad[:_MAX_ERRORS].tolist():
        errors.add(int(lines[i]), f"score '{raw[i].decode('utf-8', 'replace')}' is not a finite number")
    errors.total += max(0, len(bad) - _MAX_ERRORS)
    return scores


def _parse_grades(raw: np.ndarray, lines: np.ndarray, errors: _Errors) -> np.ndarray:
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


def read_qrels(path: str | Path) -> QrelsTable:
    """Read a TREC qrels file into a ``QrelsTable`` (see the module docstring for the format).

    Raises ``TrecFormatError`` listing every bad line as ``FILE:LINE: message``: fewer than 4 fields, a
    relevance that is not an integer, invalid UTF-8, the same (qid, docid) twice, a damaged gzip stream, an
    empty file or one without any row.
    """
    path = Path(path)
    source = _source_name(path)
    errors = _Errors(source)
    lines, (qids, docids, grades_raw), _, any_bytes = _read_columns(path, 4, (0, 2, 3), QRELS_FIELDS, errors)
    if not errors.total and not len(lines):
        errors.add(None, "file is empty" if not any_bytes else "no qrels rows found")
    grades = _parse_grades(grades_raw, lines, errors)
    topic_ids, topic = _topics(qids, errors, lines)
    errors.raise_if_any()
    table = QrelsTable(topic_ids=topic_ids, topic=topic, docid=docids, grade=grades, source=source)
    _duplicates(
        topic_ids,
        topic,
        docids,
        lines,
        table.key,
        errors,
        "duplicate judgement for qid '{qid}', docid '{docid}' (first at line {first})",
    )
    errors.raise_if_any()
    return table

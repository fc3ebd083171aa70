"""The one reader of TREC run and qrels files (pure: no Django): imports, judgement imports, evaluation,
the benchmarks and the notebooks all read runs and qrels here.

The readers parse a file into numpy arrays in bulk. The bytes stream through one reusable 8 MiB buffer;
each 1 MiB chunk of whole lines is split with vectorised comparisons (a fast path when every line has
exactly the expected fields separated by single spaces or tabs), each needed field is gathered into a
fixed-width bytes array (``numpy.bytes_``) in one copy, docids are hashed and scores parsed while the
chunk is in cache (fixed-format decimals with exact integer arithmetic, the rest by numpy's strtod), and
chunks go to a few threads when cores are idle. Only the output columns grow with the file
(``read_run``, ``read_qrels``); ``iter_run`` and ``iter_qrels`` stream, holding one block. Python does
per-line work only for lines that are wrong, so a 5,000,000-line run is read in about a second.
Duplicates are ruled out in linear time (``any_equal_keys``); ``iter_run_by_topic`` keeps memory flat
for runs whose topics are interleaved by spilling groups of topics to temporary files.

Longer than 400 lines: it is the one home of "how a run or qrels file is read" (streaming, splitting,
gathering, hashing, score parsing, the tables and the streaming readers), whose stages share private
helpers and the error log. A split by stage (hashing and ``KeyIndex`` apart, say) is not done yet.

Files are opened by ``pooling.formats.open_binary`` (a path, or a binary file object with a ``name``;
gzip by magic bytes or a ``.gz`` name), and problems are ``pooling.formats.FormatError``s listing
``LineError``s (``FILE:LINE: message``), exactly as for topics and documents: ``file not found``,
``truncated gzip file ...`` on the line being read, ``invalid UTF-8 ...``, a NUL byte, a line over the
length limit (``pooling.formats.limits``); reading stops after ``max_errors`` errors (50) with
``stopped reading after N errors``.

Formats, as trec_eval 10 reads them:

- Fields are separated by runs of whitespace as C's ``isspace`` knows it, which is what trec_eval's
  parser uses: space, ``\\t``, ``\\v``, ``\\f``, ``\\r`` (and ``\\n`` ends the line). Other control
  bytes are part of a field; a NUL byte is an error ("File may contain no NULL characters").
- run: ``qid Q0 docid rank score tag``; at least 6 fields, those after the sixth are ignored; the rank
  column is ignored; lines whose first field starts with ``#`` and blank lines are skipped. A score that
  is not a finite number is an error, and so is the same (qid, docid) twice (trec_eval's "duplicate
  docs"). The ranked list is :func:`trec_order`'s.
- qrels: ``qid iter docid rel``; at least 4 fields, later ones ignored; ``rel`` is an integer, negative
  allowed (negative means "in the pool, not judged"); the same (qid, docid) twice is an error.

Text must be UTF-8. Document ids are kept as UTF-8 bytes, so that comparing them is trec_eval's
``strcmp`` (byte order).
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

from pooling.formats import (
    FormatError,
    LineError,
    SizeLimitReached,
    Source,
    current_limits,
    line_too_long,
    nul_message,
    open_binary,
    source_name,
)

__all__ = [
    "ErrorLog",
    "QrelsChunk",
    "QrelsTable",
    "RunChunk",
    "RunTable",
    "iter_qrels",
    "iter_run_by_topic",
    "KeyIndex",
    "any_equal_keys",
    "hash_bytes",
    "iter_run",
    "trec_order",
    "read_qrels",
    "read_run",
]

_CHUNK_BYTES = 1 << 20  # 1 MiB of whole lines per parsing step: temporaries stay in cache and are reused
_BLOCK_BYTES = 1 << 23  # the file is read 8 MiB at a time into one reusable buffer
_PAD = 64  # zero bytes after each chunk, so short tokens can be gathered with a strided view
_MAX_ERRORS = 50

RUN_FIELDS = "qid Q0 docid rank score tag"
QRELS_FIELDS = "qid iter docid rel"


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


# ---------------------------------------------------------------------------------------------------------
# Tables


def _as_bytes_array(values: list[bytes]) -> np.ndarray:
    if not values:
        return np.zeros(0, dtype="S1")
    return np.array(values, dtype=np.bytes_)


@dataclass(eq=False)
class _Rows:
    """What a ``RunTable`` and a ``QrelsTable`` share: rows of (topic code, docid) and one value each
    (``_values``), the file they were read from, the key of each row and its file line, both computed
    when first asked. The subclass adds the value column after ``docid``; the rest is by keyword."""

    topic_ids: list[str]
    topic: np.ndarray
    docid: np.ndarray
    source: str = field(default="<dict>", kw_only=True)
    _key: np.ndarray | None = field(default=None, repr=False, kw_only=True)
    _lines: Callable[[], np.ndarray] | np.ndarray | None = field(default=None, repr=False, kw_only=True)

    def _values(self) -> np.ndarray:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._values())

    @property
    def line(self) -> np.ndarray:
        """The file line of each row (read from a file), computed when first asked; -1 otherwise."""
        if self._lines is None:
            return np.full(len(self), -1, dtype=np.int64)
        if not isinstance(self._lines, np.ndarray):
            self._lines = self._lines()
        return self._lines

    @property
    def key(self) -> np.ndarray:
        """uint64 hash of each row's (qid, docid); equal pairs have equal keys, in a run as in qrels (see
        ``hash_bytes``)."""
        if self._key is None:
            self._key = _row_keys(self.topic_ids, self.topic, self.docid)
        return self._key

    def _to_dict(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {t: {} for t in self.topic_ids}
        for code, docid, value in zip(
            self.topic.tolist(), self.docid.tolist(), self._values().tolist(), strict=True
        ):
            out[self.topic_ids[code]][docid.decode("utf-8")] = value
        return out


_V = TypeVar("_V")


def _nested_rows(
    nested: Mapping[str, Mapping[str, Any]], check: Callable[[str, str, Any], _V], *, empty_topics: bool
) -> tuple[list[str], np.ndarray, np.ndarray, list[_V]]:
    """The columns of ``{qid: {docid: value}}`` (pytrec_eval's layout), in its order: the qids, each row's
    topic code and docid (UTF-8 bytes), and the value ``check(qid, docid, value)`` gives (a ValueError for
    a bad one). A topic without documents is kept only with ``empty_topics``."""
    topic_ids: list[str] = []
    codes: list[int] = []
    docids: list[bytes] = []
    values: list[_V] = []
    for qid, docs in nested.items():
        if not docs and not empty_topics:
            continue
        code = len(topic_ids)
        topic_ids.append(str(qid))
        for docid, value in docs.items():
            values.append(check(qid, docid, value))
            codes.append(code)
            docids.append(str(docid).encode("utf-8"))
    return topic_ids, np.array(codes, dtype=np.intp), _as_bytes_array(docids), values


def _finite_score(qid: str, docid: str, score: Any) -> float:
    value = float(score)
    if not math.isfinite(value):
        raise ValueError(f"score {score!r} of qid {qid!r}, docid {docid!r} is not a finite number")
    return value


def _integer_grade(qid: str, docid: str, grade: Any) -> int:
    if isinstance(grade, bool) or int(grade) != grade:
        raise ValueError(f"grade {grade!r} of qid {qid!r}, docid {docid!r} is not an integer")
    return int(grade)


@dataclass(eq=False)
class RunTable(_Rows):
    """A run held as arrays, one row per (qid, docid, score).

    ``topic_ids[topic[i]]`` is the qid of row i, ``docid[i]`` its docid as UTF-8 bytes and ``score[i]`` its
    score. Rows are in file order. ``name`` is the run tag (sixth field of the first row) or the name given.
    """

    score: np.ndarray
    name: str = ""

    def _values(self) -> np.ndarray:
        return self.score

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], *, name: str = "") -> RunTable:
        """Build from ``{qid: {docid: score}}`` (pytrec_eval's layout). A non-finite score is a ValueError."""
        if isinstance(run, RunTable):
            return run
        topic_ids, topic, docid, scores = _nested_rows(run, _finite_score, empty_topics=True)
        return cls(topic_ids, topic, docid, np.array(scores, dtype=np.float64), name=name)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, every topic of the table included."""
        return self._to_dict()


@dataclass(eq=False)
class QrelsTable(_Rows):
    """Qrels held as arrays, one row per judged (qid, docid): ``grade[i]`` is the integer label.

    A negative grade means "in the pool but not judged" (trec_eval's convention): such a document is not
    judged, neither relevant nor non-relevant.
    """

    grade: np.ndarray

    def _values(self) -> np.ndarray:
        return self.grade

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]]) -> QrelsTable:
        """Build from ``{qid: {docid: grade}}``. A grade that is not an integer is a ValueError."""
        if isinstance(qrels, QrelsTable):
            return qrels
        # a qrels file cannot hold a topic without lines: neither does the table
        topic_ids, topic, docid, grades = _nested_rows(qrels, _integer_grade, empty_topics=False)
        return cls(topic_ids, topic, docid, np.array(grades, dtype=np.int64))

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: grade}}``, every topic of the table included."""
        return self._to_dict()


# ---------------------------------------------------------------------------------------------------------
# Reading


class ErrorLog:
    """The problems found in one file, each ``FILE:LINE: message`` (a :class:`pooling.formats.LineError`).

    At most ``max_errors`` are listed: once that many are recorded the reader stops reading, and
    :meth:`raise_if_any` ends the list with ``stopped reading after N errors`` on the line after the last
    one listed (as the other readers of ``pooling.formats`` do). Errors found once the whole file was read
    (duplicates) that go beyond the limit are counted in a last ``... and N more`` error. Callers (the
    importer) may add their own errors.
    """

    def __init__(self, source: str, max_errors: int = _MAX_ERRORS) -> None:
        if max_errors < 1:
            raise ValueError("max_errors must be at least 1")
        self.source = source
        self.max_errors = max_errors
        self.items: list[tuple[int | None, str]] = []
        self.total = 0
        self.stopped = False  # reading stopped at max_errors
        self.lines_read = 0
        self.rows_seen = self.bytes_seen = False  # for "file is empty" / "no rows found"

    def add(self, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.items) < max(self.max_errors, _MAX_ERRORS):
            self.items.append((line, message))

    @property
    def full(self) -> bool:
        return self.total >= self.max_errors

    def errors(self) -> list[LineError]:
        """The errors in line order (file-level ones last), bounded as the class says."""
        ordered = sorted(self.items, key=lambda item: math.inf if item[0] is None else item[0])
        shown = [LineError(self.source, line, message) for line, message in ordered[: self.max_errors]]
        last = shown[-1].line if shown else None
        if self.stopped and last is not None and (self.total > len(shown) or last < self.lines_read):
            shown.append(LineError(self.source, last + 1, f"stopped reading after {self.max_errors} errors"))
        elif self.total > len(shown):
            shown.append(LineError(self.source, None, f"... and {self.total - len(shown)} more"))
        return shown

    def raise_if_any(self) -> None:
        """Raise :class:`pooling.formats.FormatError` with :meth:`errors`, if anything was recorded."""
        if self.total:
            raise FormatError(self.errors())


def _failure_line(lines_done: int, buffer: np.ndarray, size: int) -> int | None:
    """The line being read when a stream broke: after the complete lines read so far (None: none was)."""
    complete = lines_done + int(np.count_nonzero(buffer[:size] == 10))
    return complete + 1 if complete else None


class _Partial(Exception):
    """A read that broke after ``size`` bytes had been put in the buffer."""

    def __init__(self, size: int, cause: BaseException) -> None:
        self.size, self.cause = size, cause


def _fill(stream: Any, view: memoryview, gzipped: bool) -> int:
    """Read into ``view`` as much as the stream gives (0 at its end). A gzip stream is read a piece at a
    time, so that when it breaks the bytes decoded before are in the buffer (``_Partial``): the line
    that broke can be named."""
    if not gzipped:
        return stream.readinto(view)
    size = 0
    try:
        while size < len(view):
            data = stream.read1(len(view) - size)
            if not data:
                break
            view[size : size + len(data)] = data
            size += len(data)
    except (EOFError, OSError, zlib.error) as exc:
        raise _Partial(size, exc) from None
    return size


def _blocks(
    source: Source, errors: ErrorLog, progress: Callable[[float], None] | None = None
) -> Iterator[tuple[np.ndarray, int]]:
    """Stream the file through one reusable buffer: yield (buffer, end) where buffer[:end] holds whole lines
    (the last ends with a newline) followed by at least _PAD readable bytes. The buffer is overwritten by
    the next block, so whatever the consumer keeps must be copied out of it. ``progress`` gets the
    fraction of the (compressed) file read so far, after each block. A file problem is recorded in
    ``errors`` (and ends the blocks)."""
    try:
        opened = open_binary(source)
    except FormatError as exc:
        for error in exc.errors:
            errors.add(error.line, error.message)
        return
    stream, raw = opened.stream, opened.raw
    size = 1
    if not isinstance(source, str | os.PathLike):
        progress = None  # a file object's position cannot be asked
    elif progress:
        size = max(os.stat(source).st_size, 1)
    buffer = np.empty(_BLOCK_BYTES + _PAD, dtype=np.uint8)
    carry = 0
    limit = current_limits()
    data_bytes = 0  # decompressed bytes read
    lines_done = 0  # lines in the blocks yielded so far
    try:
        while True:
            if carry > limit.line_bytes:  # no line end in that many bytes: never hold more
                errors.add(lines_done + 1, line_too_long(limit.line_bytes))
                return
            if len(buffer) - _PAD - carry < _BLOCK_BYTES // 2:  # a line longer than a block: grow
                grown = np.empty(2 * len(buffer), dtype=np.uint8)
                grown[:carry] = buffer[:carry]
                buffer = grown
            try:
                read = _fill(
                    stream,
                    memoryview(buffer)[carry : len(buffer) - _PAD],  # type: ignore[arg-type]  # numpy's stubs give ndarray __buffer__ on Python 3.12+ only
                    opened.gzip,
                )
            except _Partial as broke:
                line = _failure_line(lines_done, buffer, carry + broke.size)
                end = _last_newline(buffer, carry + broke.size) + 1
                if end:  # the whole lines decoded before the stream broke are read like any others
                    buffer[end : end + _PAD] = 0
                    yield buffer, end
                if isinstance(broke.cause, EOFError):
                    errors.add(line, "truncated gzip file (the compressed data ends early)")
                else:
                    errors.add(line, f"corrupt gzip file: {broke.cause}")
                return
            except OSError as exc:
                errors.add(None, f"cannot read file: {exc}")
                return
            data_bytes += read
            if limit.total_bytes is not None and data_bytes > limit.total_bytes:
                raise SizeLimitReached(source_name(source), limit.total_bytes)
            total = carry + read
            if read == 0:
                if carry:
                    buffer[carry] = 10
                    buffer[carry + 1 : carry + 1 + _PAD - 1] = 0
                    yield buffer, carry + 1
                return
            if progress:
                progress(min(raw.tell() / size, 1.0))
            end = _last_newline(buffer, total) + 1
            if end == 0:
                carry = total
                continue
            yield buffer, end
            lines_done += int(np.count_nonzero(buffer[:end] == 10))
            carry = total - end
            buffer[:carry] = buffer[end:total].copy()
    finally:
        opened.close()


def _last_newline(buffer: np.ndarray, size: int) -> int:
    """Offset of the last newline before ``size`` (-1 if none), searching backwards in growing windows."""
    window = 1 << 12
    end = size
    while end > 0:
        start = max(0, end - window)
        found = np.flatnonzero(buffer[start:end] == 10)
        if len(found):
            return start + int(found[-1])
        end = start
        window *= 4
    return -1


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


def _chunks(buffer: np.ndarray, size: int) -> list[tuple[int, int]]:
    """(start, end) byte offsets of consecutive pieces of whole lines of about _CHUNK_BYTES each."""
    bounds = []
    start = 0
    while start < size:
        end = min(start + _CHUNK_BYTES, size)
        if end < size:
            end = min(_next_newline(buffer, end - 1, size) + 1, size)
        bounds.append((start, end))
        start = end
    return bounds


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
    a: np.ndarray, min_fields: int, columns: tuple[int, ...], first_line: int, errors: ErrorLog, expected: str
) -> _Fields:
    """Find the requested fields of every data line of ``a`` (a chunk ending with a newline).

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
    short = has_tokens & ~comment & (counts < min_fields)
    for idx in np.flatnonzero(short)[:_MAX_ERRORS].tolist():
        errors.add(first_line + idx, f"expected {min_fields} fields '{expected}', found {int(counts[idx])}")
    errors.total += max(0, int(np.count_nonzero(short)) - _MAX_ERRORS)
    data = np.flatnonzero(has_tokens & ~comment & (counts >= min_fields))
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


@dataclass(frozen=True, slots=True)
class _Layout:
    """A kind of file's lines: the fields a line needs, the value's column (qid and docid are fields 0
    and 2), the fields' names for messages, the value's name, parser and type."""

    min_fields: int
    value_column: int
    expected: str
    value_name: str
    parse_value: Callable[[np.ndarray, Any, ErrorLog, np.ndarray], np.ndarray]
    value_dtype: type


def _parse_chunk(a: np.ndarray, padded: np.ndarray, layout: _Layout) -> _Chunk:
    """Parse one chunk of whole lines (numbered from 1 here); its fields are gathered, hashed and parsed
    while they are in cache. Runs in a worker thread: numpy releases the GIL in the heavy loops."""
    errors = ErrorLog("")
    top = int(a.max())
    if top >= 0x80:
        _utf8_errors(a.tobytes(), 1, errors)
    fields = _split(a, layout.min_fields, (0, 2, layout.value_column), 1, errors, layout.expected)
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
        first_row = b""
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


def _parse_file(path: Source, layout: _Layout, errors: ErrorLog) -> _Parsed:
    """The whole file parsed (``_parsed_chunks``), the chunks' results copied, in file order, into growing
    columns. Only the columns grow with the file, not the temporaries."""
    docid_col = key_col = value_col = None
    heads: list[np.ndarray] = []
    head_lengths: list[np.ndarray] = []
    line_map: list[tuple[int, int, np.ndarray | None]] = []
    any_bytes = False
    first_row_text = b""
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
    the module docstring for the format.

    Raises :class:`pooling.formats.FormatError` listing the bad lines as ``FILE:LINE: message`` (see
    ``ErrorLog`` for the bound): fewer than 6 fields, a score that is not a number or not finite, invalid
    UTF-8, a NUL byte, a line over the length limit, the same (qid, docid) twice, a damaged gzip stream, a
    missing file, an empty file or one without any row.
    """

    def table(parsed: _Parsed, columns: dict[str, Any]) -> RunTable:
        tag = name if name is not None else _tag_of(parsed.first_row)
        return RunTable(**columns, score=parsed.value, name=tag)

    return _read_table(source, max_errors, _RUN_LINES, "run", DUPLICATE_DOCID, table)


#: The one message for a docid given twice for a topic in a run (trec_eval: "duplicate docs").
DUPLICATE_DOCID = "duplicate docid {docid} for qid {qid} (first at line {first})"


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


@dataclass
class RunChunk:
    """About a megabyte of a run file's rows, in file order (``iter_run``). ``qids`` are the runs of equal
    consecutive qids with their ``qid_lengths``; ``docid`` (UTF-8 bytes), ``docid_hash`` (``hash_bytes``
    of the docid alone), ``score`` and ``line`` (the file line) have one entry per row."""

    qids: list[str]
    qid_lengths: np.ndarray
    docid: np.ndarray
    docid_hash: np.ndarray
    score: np.ndarray
    line: np.ndarray


def iter_run(
    source: Source, errors: ErrorLog, *, progress: Callable[[float], None] | None = None
) -> Iterator[RunChunk]:
    """Stream a run file as ``RunChunk``s: memory holds one 8 MiB block, whatever the file's size.

    The format is ``read_run``'s. Bad lines are left out of the chunks and recorded in ``errors`` (an
    ``ErrorLog`` for the file, which the caller may add its own errors to and raise with
    ``errors.raise_if_any()``); reading stops at the log's ``max_errors``; an empty file or one without
    rows is recorded at the end. Duplicates are not checked: that needs the whole of each topic, the
    caller's job. ``progress`` gets the fraction of the file read.
    """
    for chunk, lines, _values in _iter_rows(source, errors, _RUN_LINES, progress):
        yield RunChunk(
            qids=[head.decode("utf-8", "replace") for head in chunk.qid_heads.tolist()],
            qid_lengths=chunk.qid_lengths,
            docid=chunk.docid,
            docid_hash=chunk.key - np.repeat(_qid_key(chunk.qid_heads), chunk.qid_lengths),
            score=chunk.value,
            line=lines,
        )
    if not errors.total and not errors.rows_seen:
        errors.add(None, "file is empty" if not errors.bytes_seen else "no run rows found")


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
    if str(source).endswith(".gz"):
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


@dataclass
class QrelsChunk:
    """About a megabyte of a qrels file's rows, in file order (``iter_qrels``): the qid, docid, grade and
    file line of each row."""

    qid: list[str]
    docid: list[str]
    grade: np.ndarray
    line: np.ndarray


def iter_qrels(
    source: Source, errors: ErrorLog, *, progress: Callable[[float], None] | None = None
) -> Iterator[QrelsChunk]:
    """Stream a qrels file as ``QrelsChunk``s (the format is ``read_qrels``'s), as ``iter_run`` streams a
    run: bad lines left out and recorded in ``errors``; the same (qid, docid) twice is recorded too, on
    the line of the second (only the pairs are kept, not the rows)."""
    seen: dict[tuple[str, str], int] = {}
    for chunk, lines, _values in _iter_rows(source, errors, _QRELS_LINES, progress):
        qids = np.repeat(chunk.qid_heads, chunk.qid_lengths)
        qid = [value.decode("utf-8", "replace") for value in qids.tolist()]
        docid = [value.decode("utf-8", "replace") for value in chunk.docid.tolist()]
        keep = []
        for i, (pair, line) in enumerate(zip(zip(qid, docid, strict=True), lines.tolist(), strict=True)):
            first = seen.setdefault(pair, line)
            if first != line:
                errors.add(
                    line, DUPLICATE_JUDGEMENT.format(qid=repr(pair[0]), docid=repr(pair[1]), first=first)
                )
            else:
                keep.append(i)
        if len(keep) < len(qid):
            qid, docid = [qid[i] for i in keep], [docid[i] for i in keep]
            chunk.value, lines = chunk.value[keep], lines[keep]
        yield QrelsChunk(qid=qid, docid=docid, grade=chunk.value, line=lines)
    if not errors.total and not errors.rows_seen:
        errors.add(None, "file is empty" if not errors.bytes_seen else "no qrels rows found")


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


_RUN_LINES = _Layout(6, 4, RUN_FIELDS, "score", _parse_scores, np.float64)
_QRELS_LINES = _Layout(4, 3, QRELS_FIELDS, "relevance", _parse_grades, np.int64)


def read_qrels(source: Source, *, max_errors: int = _MAX_ERRORS) -> QrelsTable:
    """Read a TREC qrels file (a path, or a binary file object with a ``name``) into a ``QrelsTable``
    (see the module docstring for the format); ``line`` gives each row's line.

    Raises :class:`pooling.formats.FormatError` listing the bad lines as ``FILE:LINE: message``: fewer
    than 4 fields, a relevance that is not an integer, invalid UTF-8, a NUL byte, a line over the length
    limit, the same (qid, docid) twice, a damaged gzip stream, a missing file, an empty file or one without
    any row.
    """

    def table(parsed: _Parsed, columns: dict[str, Any]) -> QrelsTable:
        return QrelsTable(**columns, grade=parsed.value)

    return _read_table(source, max_errors, _QRELS_LINES, "qrels", DUPLICATE_JUDGEMENT, table)


#: The one message for a (qid, docid) judged twice in a qrels file.
DUPLICATE_JUDGEMENT = "duplicate judgement for qid {qid}, docid {docid} (first at line {first})"

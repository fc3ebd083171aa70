"""Pure, streaming readers for the platform's topics and documents files, and what every reader of the
house shares: how a file is opened (:func:`open_binary`), its errors (:class:`LineError`,
:class:`FormatError`) and the limits a file must keep to (:func:`limits`). Runs and qrels have one reader
of their own, vectorised, in ``pooling.trec_io``, which uses these.

Longer than 400 lines: the topics and documents readers (three formats each) and what every reader
shares; a split (the shared opening, errors and limits apart from the two readers) is not done yet.

No Django here: every reader takes a path (``str`` or ``os.PathLike``) or an already-open *binary* file
object with a ``name`` (an upload), and yields entries one by one, so memory does not grow with the file
(only the sets needed to detect duplicates do: qids for topics, docids for documents).

Error semantics, shared by every reader:

- A reader yields every good entry as it streams and records each bad line as a :class:`LineError`
  (``FILE:LINE: message``). After the last entry, if anything was wrong, it raises :class:`FormatError`
  carrying all the errors. Callers consume inside one database transaction, so that exception rolls back
  everything: one bad line anywhere stores nothing.
- After ``max_errors`` errors the reader stops reading; one more error, ``stopped reading after N
  errors``, names the line where it stopped (a line adds at most one error, except in TREC SGML
  files, where a block can add two).
- Fatal problems are errors too: file not found (``path: file not found``), a truncated or corrupt gzip
  stream (named with the line being read when it broke, or file-level if no line was read), an empty file
  (``path: file is empty``: no non-blank line at all) or a file without a single entry
  (``path: no ... found``, e.g. only comments).
- Invalid UTF-8 is reported on its line (``path:7: invalid UTF-8 (byte 0xff at byte column 12)``), and
  reading goes on with the next line.
- A UTF-8 byte-order mark at the start of the file is dropped; ``\\r\\n`` line ends are accepted.
- A NUL byte (raw, or ``\\u0000`` in a JSON string) is an error on its line: trec_eval's files may not
  hold one, and PostgreSQL cannot store one in text.

Limits (:func:`limits`, set by the caller for a scope; the defaults suit a notebook): a line longer than
``line_bytes`` (1 MiB by default) is an error on its line and reading stops there, so no line is ever
held whole beyond that; after ``total_bytes`` bytes of (decompressed) data the reader raises
:class:`SizeLimitReached`, which is not a file error: the caller decides (the web request's check hands
the file to its job). Both bound what a small gzip file can expand to.

Identifiers (qids and docids) must be non-empty and contain no whitespace: runs and qrels are
whitespace-separated, so such an identifier could never be matched.

``.gz`` files are read transparently (recognised by their magic bytes, or by the ``.gz`` suffix).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO, Any, TypeVar

_Parsed = TypeVar("_Parsed")

__all__ = [
    "DocumentEntry",
    "FormatError",
    "Limits",
    "LineError",
    "SizeLimitReached",
    "Source",
    "TopicEntry",
    "current_limits",
    "guess_format",
    "open_binary",
    "limits",
    "open_lines",
    "read_documents",
    "read_topics",
    "source_name",
]

#: A path, or an already-open binary file object (ideally with a ``name``, used in error messages).
Source = str | os.PathLike[str] | IO[bytes]

#: How many errors ``str(FormatError)`` shows before "... and N more".
SHOWN_ERRORS = 20

_BLOCK_SIZE = 1 << 16

DOCUMENT_FORMATS = ("jsonl", "tsv", "trec")
TOPIC_FORMATS = ("jsonl", "tsv", "trec")


# --------------------------------------------------------------------------------------------- errors


@dataclass(frozen=True)
class LineError:
    """One problem in one file: ``line`` is 1-based, or ``None`` for a problem with the whole file."""

    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        if self.line is None:
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}: {self.message}"


class FormatError(ValueError):
    """A file could not be read completely and correctly; ``errors`` lists every problem recorded.

    ``str(exc)`` is the errors, one per line, the first 20 followed by ``... and N more``.
    """

    def __init__(self, errors: Iterable[LineError]) -> None:
        self.errors: list[LineError] = list(errors)
        super().__init__(self._render())

    def _render(self) -> str:
        lines = [str(error) for error in self.errors[:SHOWN_ERRORS]]
        if len(self.errors) > SHOWN_ERRORS:
            lines.append(f"... and {len(self.errors) - SHOWN_ERRORS} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._render()

    def __reduce__(self) -> tuple[Any, ...]:
        # Keeps the structured errors when pickled (e.g. by a task queue).
        return (type(self), (self.errors,))


# -------------------------------------------------------------------------------------------- limits


@dataclass(frozen=True)
class Limits:
    """How much a reader may take in: ``line_bytes`` per line, ``total_bytes`` (decompressed) per file
    (None: no limit)."""

    line_bytes: int = 1 << 20
    total_bytes: int | None = None


_LIMITS: ContextVar[Limits] = ContextVar("reader_limits", default=Limits())  # noqa: B039 (frozen)


def current_limits() -> Limits:
    """The limits in force for readers in this context (see :func:`limits`)."""
    return _LIMITS.get()


@contextmanager
def limits(*, line_bytes: int | None = None, total_bytes: int | None = None) -> Iterator[Limits]:
    """Within the block, every reader (these and ``pooling.trec_io``) keeps to these limits; a value not
    given keeps the one in force."""
    current = _LIMITS.get()
    new = Limits(
        line_bytes=current.line_bytes if line_bytes is None else line_bytes,
        total_bytes=current.total_bytes if total_bytes is None else total_bytes,
    )
    token = _LIMITS.set(new)
    try:
        yield new
    finally:
        _LIMITS.reset(token)


class SizeLimitReached(Exception):  # noqa: N818 (a stop, not an error in the file)
    """A reader read ``limit`` bytes of (decompressed) data and stopped; nothing is known to be wrong."""

    def __init__(self, path: str, limit: int) -> None:
        self.path, self.limit = path, limit
        super().__init__(f"{path}: more than {limit:,} bytes of data (decompressed); not read further")


def line_too_long(limit: int) -> str:
    """The message for a line over the limit (the same in every reader)."""
    return f"line longer than the limit of {limit:,} bytes"


def nul_message(column: int) -> str:
    """The message for a NUL byte in a line (the same in every reader)."""
    return f"NUL byte at byte column {column} (text may not contain NUL)"


# -------------------------------------------------------------------------------------------- entries


@dataclass(frozen=True, slots=True)
class TopicEntry:
    """One topic; ``line`` is where it starts (the ``<top>`` line for TREC topic files)."""

    qid: str
    query: str
    description: str
    narrative: str
    segments: tuple[str, ...]
    line: int


@dataclass(frozen=True, slots=True)
class DocumentEntry:
    """One document; ``line`` is where it starts (the ``<DOC>`` line for TREC SGML)."""

    docid: str
    title: str
    text: str
    url: str
    metadata: dict[str, Any]
    line: int


# -------------------------------------------------------------------------------------------- helpers


def source_name(source: Source) -> str:
    """The name used in error messages: the path, or the file object's ``name`` (``<stream>`` if none)."""
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return str(name) if name not in (None, "") else "<stream>"


def guess_format(path: str, kind: str) -> str:
    """The format of a documents or topics file from its extension, ``.gz`` stripped first.

    - documents: ``.jsonl``/``.json`` → ``"jsonl"``; ``.tsv``/``.txt`` → ``"tsv"``; ``.trec``/``.sgml``/
      ``.xml`` and anything else (classic collection files often have no extension) → ``"trec"``.
    - topics: ``.jsonl``/``.json`` → ``"jsonl"``; ``.tsv`` → ``"tsv"``; anything else → ``"trec"``.
    - run, qrels: always ``"trec"`` (there is only one format, read by ``pooling.trec_io``).
    """
    name = source_name(path).lower()
    if name.endswith(".gz"):
        name = name[: -len(".gz")]
    ext = os.path.splitext(name)[1]
    if kind == "documents":
        if ext in (".jsonl", ".json"):
            return "jsonl"
        if ext in (".tsv", ".txt"):
            return "tsv"
        return "trec"
    if kind == "topics":
        if ext in (".jsonl", ".json"):
            return "jsonl"
        if ext == ".tsv":
            return "tsv"
        return "trec"
    if kind in ("run", "qrels"):
        return "trec"
    raise ValueError(f"unknown kind {kind!r}; expected documents, topics, run or qrels")


class _ReadAdapter(io.RawIOBase):
    """Turns any object with ``read(n) -> bytes`` into a raw stream, so it can be buffered and peeked.

    Closing the adapter does not close the wrapped object: the caller owns it.
    """

    def __init__(self, fileobj: IO[bytes]) -> None:
        self._fileobj = fileobj

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._fileobj.read(len(buffer))
        if not data:
            return 0
        if isinstance(data, str):
            raise TypeError("the readers need a binary file object (open it with 'rb')")
        size = len(data)
        buffer[:size] = data
        return size


@dataclass
class Opened:
    """A file opened for reading by :func:`open_binary`: ``stream`` gives its bytes (decompressed),
    ``raw`` is the file as stored (its ``tell()`` is how far reading has come), ``close()`` closes what
    was opened here (never a file object the caller passed)."""

    stream: Any
    raw: Any
    gzip: bool
    owned: IO[bytes] | None

    def close(self) -> None:
        if self.stream is not self.raw:
            self.stream.close()
        if self.owned is not None:
            self.owned.close()


def open_binary(source: Source) -> Opened:
    """Open a path, or take an already-open binary file object, for every reader of this package (the
    TREC run and qrels readers of ``pooling.trec_io`` included): one way to open, to decompress and to
    name a file problem.

    A gzip stream (magic bytes, or a ``.gz`` name) is decompressed. A file that cannot be read raises
    :class:`FormatError` with one file-level error: ``file not found``, ``is a directory, not a file``,
    ``cannot open file: ...`` or ``cannot read file: ...``. A text-mode file object is a ``TypeError``.
    """
    name = source_name(source)

    def problem(message: str) -> FormatError:
        return FormatError([LineError(name, None, message)])

    owned: IO[bytes] | None = None
    if isinstance(source, str | os.PathLike):
        try:
            owned = open(source, "rb")  # noqa: SIM115 (closed by Opened.close)
        except FileNotFoundError:
            raise problem("file not found") from None
        except IsADirectoryError:
            raise problem("is a directory, not a file") from None
        except OSError as exc:
            raise problem(f"cannot open file: {exc.strerror or exc}") from None
        buffered: Any = owned
    else:
        if isinstance(source, io.TextIOBase):
            raise TypeError("the readers need a binary file object (open it with 'rb')")
        buffered = io.BufferedReader(_ReadAdapter(source))
    try:
        is_gzip = buffered.peek(2)[:2] == b"\x1f\x8b" or name.lower().endswith(".gz")
    except OSError as exc:
        if owned is not None:
            owned.close()
        raise problem(f"cannot read file: {exc}") from None
    stream = gzip.GzipFile(fileobj=buffered, mode="rb") if is_gzip else buffered
    return Opened(stream, buffered, is_gzip, owned)


def open_lines(
    path_or_file: Source, *, errors: list[LineError] | None = None, max_errors: int | None = None
) -> Generator[tuple[int, str], None, bool]:
    """Yield ``(line_number, text)`` for each line of a file, 1-based, without its line end.

    The generator's return value (``yield from``) is True when it read to the end of the file, False
    when it stopped early (a fatal problem, or ``max_errors``).

    Reads a path or a binary file object (not closed afterwards), gunzips transparently (gzip magic bytes
    or a ``.gz`` name), decodes each line strictly as UTF-8, drops a leading byte-order mark and the
    ``\\n``/``\\r\\n`` line end.

    Problems: with ``errors=None`` the first problem raises :class:`FormatError`. With a list, problems are
    appended to it instead: an invalid UTF-8 line is reported and skipped, and a fatal problem (missing
    file, corrupt or truncated gzip, read error) is reported and ends the iteration. With ``max_errors``,
    the iteration also ends, with a ``stopped reading after N errors`` error naming the next line, once
    ``errors`` holds that many (readers add their own errors to the same list).
    """
    name = source_name(path_or_file)

    def fail(line: int | None, message: str) -> None:
        error = LineError(name, line, message)
        if errors is None:
            raise FormatError([error])
        errors.append(error)

    try:
        opened = open_binary(path_or_file)
    except FormatError as exc:
        fail(None, exc.errors[0].message)
        return False
    stream, is_gzip = opened.stream, opened.gzip
    lineno = 0
    try:
        # Read in blocks of whole lines and decode a block at a time: far fewer objects per line than
        # iterating line by line (which matters for 10^7-line runs), still bounded memory.
        tail: list[bytes] = []  # the start of a line that continues in the next block
        tail_size = total = 0
        limit = _LIMITS.get()
        while True:
            try:
                # read1: at most one underlying read, so the data decoded before a truncated gzip
                # stream breaks is not lost with the exception.
                chunk = stream.read1(_BLOCK_SIZE)
            except EOFError:
                fail(lineno + 1 if lineno else None, "truncated gzip file (the compressed data ends early)")
                return False
            except (OSError, zlib.error) as exc:
                what = "corrupt gzip file" if is_gzip else "cannot read file"
                fail(lineno + 1 if lineno else None, f"{what}: {exc}")
                return False
            if chunk:
                total += len(chunk)
                if limit.total_bytes is not None and total > limit.total_bytes:
                    raise SizeLimitReached(name, limit.total_bytes)
                cut = chunk.rfind(b"\n")
                if cut < 0:
                    tail.append(chunk)
                    tail_size += len(chunk)
                    if tail_size > limit.line_bytes:  # never hold more of one line than the limit
                        fail(lineno + 1, line_too_long(limit.line_bytes))
                        return False
                    continue
                tail.append(chunk[:cut])
                block = b"".join(tail)
                tail = [chunk[cut + 1 :]] if cut + 1 < len(chunk) else []
                tail_size = len(tail[0]) if tail else 0
            elif tail:
                block, tail = b"".join(tail), []  # a last line without a line end
            else:
                return True
            if lineno == 0 and block.startswith(b"\xef\xbb\xbf"):
                block = block[3:]  # a UTF-8 byte-order mark
                if not block and not chunk:
                    return True  # nothing but the mark
            if len(block) > limit.line_bytes:
                long = next(
                    (i for i, raw in enumerate(block.split(b"\n")) if len(raw) > limit.line_bytes), None
                )
                if long is not None:
                    fail(lineno + long + 1, line_too_long(limit.line_bytes))
                    return False
            try:
                lines: list[str] | list[bytes] = block.decode("utf-8").split("\n")
            except UnicodeDecodeError:
                lines = block.split(b"\n")  # decoded line by line, to name the bad ones
            has_nul = b"\x00" in block
            stopped = yield from _numbered(lines, lineno, name, errors, max_errors, fail, has_nul)
            if stopped:
                return False
            lineno += len(lines)
            if not chunk:
                return True
    finally:
        opened.close()


# The per-line loops live in small functions of their own: besides being clearer, this keeps
# tracemalloc (whose cost per allocation grows with the offset in the function's bytecode) usable on
# multi-million-line files.


def _numbered(
    lines: list[str] | list[bytes],
    lineno: int,
    name: str,
    errors: list[LineError] | None,
    max_errors: int | None,
    fail: Callable[[int | None, str], None],
    has_nul: bool = False,
) -> Generator[tuple[int, str], None, bool]:
    """Yield ``(number, text)`` for the lines after ``lineno``, without a trailing ``\\r``.

    ``bytes`` lines (from a block that is not valid UTF-8) are decoded one by one and the invalid ones
    reported and skipped; with ``has_nul`` (the block holds a NUL byte), lines with a NUL are reported and
    skipped. Returns True, without yielding the line, when ``errors`` already holds ``max_errors`` errors.
    """
    for line in lines:
        lineno += 1
        if errors is not None and max_errors is not None and len(errors) >= max_errors:
            errors.append(LineError(name, lineno, f"stopped reading after {max_errors} errors"))
            return True
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                fail(lineno, f"invalid UTF-8 (byte 0x{line[exc.start]:02x} at byte column {exc.start + 1})")
                continue
        if has_nul and "\x00" in line:
            fail(lineno, nul_message(len(line[: line.index("\x00")].encode("utf-8")) + 1))
            continue
        yield lineno, (line[:-1] if line.endswith("\r") else line)
    return False


_Entry = TypeVar("_Entry", TopicEntry, DocumentEntry)


class _Reader:
    """Error bookkeeping shared by the readers."""

    def __init__(self, source: Source, max_errors: int) -> None:
        if max_errors < 1:
            raise ValueError("max_errors must be at least 1")
        self.source = source
        self.path = source_name(source)
        self.max_errors = max_errors
        self.errors: list[LineError] = []
        self.entries = 0
        self.content = False  # a non-blank line was seen
        self.complete = False  # the file was read to its end

    def lines(self) -> Iterator[tuple[int, str]]:
        self.complete = yield from open_lines(self.source, errors=self.errors, max_errors=self.max_errors)

    def tab_fields(self) -> Iterator[tuple[int, list[str]]]:
        """``(number, fields)`` of each non-blank line, split on tabs as they stand (no unescaping)."""
        for lineno, line in self.lines():
            if line.strip():
                self.content = True
                yield lineno, line.split("\t")

    def first_of_each(self, entries: Iterable[_Entry], key: str, what: str) -> Iterator[_Entry]:
        """The ``entries`` whose ``key`` (qid, docid) has not come before, counted; a repeated one is an
        error on its line. At the end, :meth:`finish` with ``what`` the file holds."""
        seen: dict[str, int] = {}
        for entry in entries:
            value = getattr(entry, key)
            if value in seen:
                self.error(entry.line, f"duplicate {key} {value!r} (first at line {seen[value]})")
                continue
            seen[value] = entry.line
            self.entries += 1
            yield entry
        self.finish(what)

    def error(self, line: int | None, message: str) -> None:
        self.errors.append(LineError(self.path, line, message))

    def finish(self, what: str) -> None:
        """Raise the errors, if any; a file without a single entry is an error too."""
        if not self.errors and self.entries == 0:
            self.error(None, f"no {what} found" if self.content else "file is empty")
        if self.errors:
            raise FormatError(self.errors)


_WHITESPACE = re.compile(r"\s")


def _id_problem(value: str, what: str) -> str | None:
    if not value:
        return f"{what} is empty"
    if _WHITESPACE.search(value):
        return f"{what} {value!r} contains whitespace"
    return None


# ---------------------------------------------------------------------------------------------- JSONL


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


_DIGITS = bytes(1 if 48 <= i <= 57 else 0 for i in range(256))  # bytes.translate: ASCII digits to 1
_LONG_NUMBER = b"\x01" * 19
_UNREAD = object()


def _json_objects(reader: _Reader) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON object of each non-blank line; a line that is not valid JSON or not an object is an error."""
    import json  # here, not at the top: reading a run or qrels (``evaluate`` on files) needs no JSON

    import orjson

    for lineno, line in reader.lines():
        # orjson (several times faster) parses the lines it reads exactly as the json module does; the
        # rest go to the json module, whose results and messages are the reader's: what orjson refuses
        # (a blank line, bad JSON, NaN, 1e400, lone surrogates, deep nesting) and any line with a run of
        # 19 digits (orjson reads integers past 64 bits as floats).
        value: Any = _UNREAD
        if line.encode().translate(_DIGITS).find(_LONG_NUMBER) < 0:
            try:  # noqa: SIM105 (a with-block per line costs more than the parse)
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                pass
        if value is _UNREAD:
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                reader.content = True
                reader.error(lineno, f"invalid JSON: {exc.msg} (column {exc.colno})")
                continue
            except RecursionError:
                reader.content = True
                reader.error(lineno, "invalid JSON: nested too deeply")
                continue
        reader.content = True
        if not isinstance(value, dict):
            reader.error(lineno, f"expected a JSON object, found {_json_type(value)}")
            continue
        if "\\u0000" in line and _holds_nul(value):  # the escape is rare: only then look deeper
            reader.error(lineno, "NUL character (\\u0000) in a JSON string (text may not contain NUL)")
            continue
        yield lineno, value


def _json_parsed(
    reader: _Reader, parse: Callable[[int, dict[str, Any]], _Parsed]
) -> Iterator[tuple[int, _Parsed]]:
    """(line number, `parse(line number, object)`) for each JSON object of `reader`'s file; an object
    `parse` finds invalid (`_Invalid`) is an error on its line, and passed over."""
    for lineno, obj in _json_objects(reader):
        try:
            parsed = parse(lineno, obj)
        except _Invalid as exc:
            reader.error(lineno, str(exc))
            continue
        yield lineno, parsed


def _holds_nul(value: Any) -> bool:
    """Whether a parsed JSON value has a NUL character in any string (keys included)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any("\x00" in key or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


class _Invalid(Exception):
    """A field of a JSON object is unusable; the message says which and why."""


def _json_id(obj: dict[str, Any], keys: tuple[str, ...], what: str) -> str:
    """The identifier under the first present key: a string, or an integer (converted with ``str``)."""
    for key in keys:
        if key in obj and obj[key] is not None:
            value = obj[key]
            break
    else:
        raise _Invalid(f"missing required field {keys[0]!r}")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise _Invalid(f"field {key!r} must be a string, found {_json_type(value)}")
    problem = _id_problem(value, what)
    if problem:
        raise _Invalid(problem)
    return value


def _json_text(obj: dict[str, Any], keys: tuple[str, ...]) -> str:
    """The optional string under the first present key; missing or null is ``""``."""
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _Invalid(f"field {key!r} must be a string, found {_json_type(value)}")
        return value
    return ""


# --------------------------------------------------------------------------------------------- topics


def read_topics(path: Source, *, format: str | None = None, max_errors: int = 50) -> Iterator[TopicEntry]:
    """Yield the topics of a TREC topic file, a TSV file or a JSONL file (``format`` from the extension
    when not given, see :func:`guess_format`). A qid and a non-empty query are required; a qid appearing
    twice is an error.

    - ``trec``: ``<top> <num> Number: 301 <title> … <desc> Description: … <narr> Narrative: … </top>``,
      inner tags usually not closed (a section runs until the next tag). Tag names are case-insensitive.
      The prefixes ``Number:``, ``Topic:`` (TREC-1/2 titles), ``Description:`` and ``Narrative:`` are
      removed, whitespace is collapsed to single spaces, other sections (``<dom>``, ``<con>``, ``<fac>``,
      ``<smry>``…) are ignored, and an all-digit qid loses its leading zeros (TREC-1/2 topics are numbered
      ``051`` while their qrels and runs say ``51``). Segments are empty. ``<top>`` opened and not closed
      (at the end of the file or before the next ``<top>``) is an error on the line where it opened;
      non-blank text outside ``<top>…</top>`` is an error.
    - ``tsv``: ``qid<TAB>query`` or ``qid<TAB>query<TAB>segments`` with the segments comma-separated
      (``head,navigational``); qid and query are stripped of surrounding whitespace. Any other number of
      fields is an error. There is no header line.
    - ``jsonl``: one object per line, ``{"qid", "query", "description", "narrative", "segments"}``; qid a
      string (an integer is accepted and converted), query a non-empty string, description and narrative
      optional strings (null = ""), segments an optional array of non-empty strings. Other keys are
      ignored.
    """
    format = format or guess_format(source_name(path), "topics")
    if format not in TOPIC_FORMATS:
        raise ValueError(f"unknown topics format {format!r}; expected one of {', '.join(TOPIC_FORMATS)}")
    reader = _Reader(path, max_errors)
    parse = {"trec": _trec_topics, "tsv": _tsv_topics, "jsonl": _jsonl_topics}[format]
    yield from reader.first_of_each(parse(reader), "qid", "topics")


def _tsv_topics(reader: _Reader) -> Iterator[TopicEntry]:
    for lineno, parts in reader.tab_fields():
        if len(parts) not in (2, 3):
            reader.error(
                lineno,
                f"expected 2 or 3 tab-separated fields 'qid<TAB>query[<TAB>segments]', found {len(parts)}",
            )
            continue
        qid, query = parts[0].strip(), parts[1].strip()
        problem = _id_problem(qid, "qid")
        if problem is None and not query:
            problem = f"topic {qid!r} has an empty query"
        if problem:
            reader.error(lineno, problem)
            continue
        segments = tuple(s.strip() for s in parts[2].split(",") if s.strip()) if len(parts) == 3 else ()
        yield TopicEntry(qid, query, "", "", segments, lineno)


def _jsonl_topics(reader: _Reader) -> Iterator[TopicEntry]:
    for lineno, obj in _json_objects(reader):
        try:
            qid = _json_id(obj, ("qid",), "qid")
            query = _json_text(obj, ("query",)).strip()
            if not query:
                raise _Invalid(
                    f"topic {qid!r} has no query"
                    if "query" not in obj
                    else f"topic {qid!r} has an empty query"
                )
            description = _json_text(obj, ("description",)).strip()
            narrative = _json_text(obj, ("narrative",)).strip()
            raw_segments = obj.get("segments")
            if raw_segments is None:
                segments: tuple[str, ...] = ()
            elif isinstance(raw_segments, list) and all(
                isinstance(s, str) and s.strip() for s in raw_segments
            ):
                segments = tuple(s.strip() for s in raw_segments)
            else:
                raise _Invalid("field 'segments' must be an array of non-empty strings")
        except _Invalid as exc:
            reader.error(lineno, str(exc))
            continue
        yield TopicEntry(qid, query, description, narrative, segments, lineno)


_TOP_TAG = re.compile(r"<(/?)top\s*>", re.IGNORECASE)
_ANY_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z][\w.-]*)[^>]*>")
_TOPIC_PREFIXES = {
    "num": re.compile(r"^number\s*:\s*", re.IGNORECASE),
    "title": re.compile(r"^topic\s*:\s*", re.IGNORECASE),
    "desc": re.compile(r"^description\s*:\s*", re.IGNORECASE),
    "narr": re.compile(r"^narrative\s*:\s*", re.IGNORECASE),
}
_SPACES = re.compile(r"\s+")


def _blocks(reader: _Reader, tag: re.Pattern[str], label: str) -> Iterator[tuple[int, str]]:
    """The text inside each ``<X>…</X>`` block of an SGML-ish file, with the line where it opened.

    ``tag`` matches the opening and closing tag, group 1 being ``/`` for a closing one. Blocks may start
    and end anywhere on a line. Non-blank text outside blocks, a block opened inside an open block, a
    stray closing tag and a block still open at the end of the file are errors.
    """
    opened: int | None = None
    parts: list[str] = []
    for lineno, line in reader.lines():
        if line.strip():
            reader.content = True
        outside_text = False
        position = 0
        for match in tag.finditer(line):
            chunk = line[position : match.start()]
            position = match.end()
            closing = bool(match.group(1))
            if opened is None:
                outside_text = outside_text or bool(chunk.strip())
                if closing:
                    reader.error(lineno, f"</{label}> without a matching <{label}>")
                else:
                    opened, parts = lineno, []
                continue
            parts.append(chunk)
            if closing:
                yield opened, "".join(parts)
                opened, parts = None, []
            else:
                reader.error(
                    opened, f"<{label}> opened here is not closed before the <{label}> on line {lineno}"
                )
                opened, parts = lineno, []
        rest = line[position:]
        if opened is None:
            outside_text = outside_text or bool(rest.strip())
        else:
            parts.append(rest)
            parts.append("\n")
        if outside_text:
            reader.error(lineno, f"text outside <{label}> … </{label}>")
    if opened is not None and reader.complete:
        reader.error(opened, f"<{label}> opened here is never closed (end of file)")


def _trec_topics(reader: _Reader) -> Iterator[TopicEntry]:
    for line, block in _blocks(reader, _TOP_TAG, "top"):
        sections: dict[str, list[str]] = {}
        current: str | None = None
        position = 0
        for match in _ANY_TAG.finditer(block):
            if current is not None:
                sections.setdefault(current, []).append(block[position : match.start()])
            current = None if match.group(1) else match.group(2).lower()
            position = match.end()
        if current is not None:
            sections.setdefault(current, []).append(block[position:])

        def section(name: str, sections: dict[str, list[str]] = sections) -> str:
            value = _SPACES.sub(" ", " ".join(sections.get(name, []))).strip()
            prefix = _TOPIC_PREFIXES.get(name)
            return prefix.sub("", value) if prefix else value

        if "num" not in sections:
            reader.error(line, "topic has no <num>")
            continue
        qid = section("num")
        problem = _id_problem(qid, "qid")
        if problem:
            reader.error(line, problem)
            continue
        if qid.isdigit() and qid.isascii():
            qid = qid.lstrip("0") or "0"
        query = section("title")
        if not query:
            reader.error(line, f"topic {qid!r} has no <title> (empty query)")
            continue
        yield TopicEntry(qid, query, section("desc"), section("narr"), (), line)


# ------------------------------------------------------------------------------------------ documents


def read_documents(
    path: Source, *, format: str | None = None, max_errors: int = 50
) -> Iterator[DocumentEntry]:
    """Yield the documents of a JSONL, TSV or TREC SGML file (``format`` from the extension when not
    given, see :func:`guess_format`). A docid is required, non-empty, without whitespace, and unique in
    the file.

    - ``jsonl``: one object per line, ``{"docid", "title", "text", "url", "metadata"}``. The docid is a
      string; an integer is accepted and converted with ``str`` (some collections number their
      documents). Pyserini's and ir_datasets' spellings are accepted when ``docid``/``text`` are absent:
      ``doc_id`` or ``id`` for the docid, ``contents`` or ``body`` for the text. title, text and url are
      optional strings (null = ""), metadata an optional object (null = {}); any other key is kept in
      metadata (unless metadata already has that key). A line that is not a JSON object is an error.
    - ``tsv``: ``docid<TAB>title<TAB>text``, exactly 3 fields (title and text may be empty, the docid is
      stripped of surrounding spaces). No header line, no unescaping.
    - ``trec``: TREC SGML as the classic collections ship it, read document by document:
      ``<DOC> <DOCNO>id</DOCNO> … <TEXT>…</TEXT> … </DOC>`` (tags case-insensitive). The title is the
      first of ``<HEADLINE>``, ``<TITLE>``, ``<HEAD>``, ``<HL>`` present (all occurrences of that tag
      joined). The text is every ``<TEXT>`` section joined by a blank line; without any ``<TEXT>``, it is
      everything in the document except DOCNO, DOCHDR and the title. In title and text, SGML comments and
      tags are removed, entities unescaped (``&amp;`` → ``&``) and whitespace collapsed to single spaces.
      The url is ``<URL>`` if present; metadata is empty. A missing or repeated ``<DOCNO>``, a ``<DOC>``
      not closed (at the end of the file or before the next ``<DOC>``; reported on the line where it
      opened) and non-blank text outside ``<DOC>…</DOC>`` are errors.
    """
    format = format or guess_format(source_name(path), "documents")
    if format not in DOCUMENT_FORMATS:
        raise ValueError(
            f"unknown documents format {format!r}; expected one of {', '.join(DOCUMENT_FORMATS)}"
        )
    reader = _Reader(path, max_errors)
    parse = {"trec": _trec_documents, "tsv": _tsv_documents, "jsonl": _jsonl_documents}[format]
    yield from reader.first_of_each(parse(reader), "docid", "documents")


def _tsv_documents(reader: _Reader) -> Iterator[DocumentEntry]:
    for lineno, parts in reader.tab_fields():
        if len(parts) != 3:
            reader.error(
                lineno, f"expected 3 tab-separated fields 'docid<TAB>title<TAB>text', found {len(parts)}"
            )
            continue
        docid = parts[0].strip(" ")
        problem = _id_problem(docid, "docid")
        if problem:
            reader.error(lineno, problem)
            continue
        yield DocumentEntry(docid, parts[1], parts[2], "", {}, lineno)


_DOCUMENT_KEYS = {"docid", "doc_id", "id", "title", "text", "contents", "body", "url", "metadata"}


def _jsonl_documents(reader: _Reader) -> Iterator[DocumentEntry]:
    for lineno, obj in _json_objects(reader):
        try:
            docid = _json_id(obj, ("docid", "doc_id", "id"), "docid")
            title = _json_text(obj, ("title",))
            text = _json_text(obj, ("text", "contents", "body"))
            url = _json_text(obj, ("url",))
            metadata = obj.get("metadata")
            if metadata is None:
                metadata = {}
            elif not isinstance(metadata, dict):
                raise _Invalid(f"field 'metadata' must be an object, found {_json_type(metadata)}")
        except _Invalid as exc:
            reader.error(lineno, str(exc))
            continue
        extra = {
            key: value for key, value in obj.items() if key not in _DOCUMENT_KEYS and key not in metadata
        }
        if extra:
            metadata = {**metadata, **extra}
        yield DocumentEntry(docid, title, text, url, metadata, lineno)


_DOC_TAG = re.compile(r"<(/?)doc(?:\s[^>]*)?>", re.IGNORECASE)
_DOCNO = re.compile(r"<docno(?:\s[^>]*)?>(.*?)</docno\s*>", re.IGNORECASE | re.DOTALL)
_DOCHDR = re.compile(r"<dochdr(?:\s[^>]*)?>.*?(?:</dochdr\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_TEXT = re.compile(r"<text(?:\s[^>]*)?>(.*?)(?:</text\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_URL = re.compile(r"<url(?:\s[^>]*)?>(.*?)</url\s*>", re.IGNORECASE | re.DOTALL)
_TITLES = tuple(
    re.compile(rf"<{tag}(?:\s[^>]*)?>(.*?)</{tag}\s*>", re.IGNORECASE | re.DOTALL)
    for tag in ("headline", "title", "head", "hl")
)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MARKUP = re.compile(r"<[^>]*>")


def _plain(markup: str) -> str:
    """Tags and comments removed, entities unescaped, whitespace collapsed."""
    import html  # here, not at the top: only documents have markup

    return _SPACES.sub(" ", html.unescape(_MARKUP.sub(" ", _COMMENT.sub(" ", markup)))).strip()


def _trec_documents(reader: _Reader) -> Iterator[DocumentEntry]:
    for line, block in _blocks(reader, _DOC_TAG, "DOC"):
        numbers = _DOCNO.findall(block)
        if not numbers:
            reader.error(line, "document has no <DOCNO>")
            continue
        if len(numbers) > 1:
            reader.error(line, f"document has {len(numbers)} <DOCNO> elements")
            continue
        docid = _plain(numbers[0])
        problem = _id_problem(docid, "docid")
        if problem:
            reader.error(line, problem)
            continue
        title, title_pattern = "", None
        for pattern in _TITLES:
            titles = pattern.findall(block)
            if titles:
                title, title_pattern = _plain(" ".join(titles)), pattern
                break
        url_match = _URL.search(block)
        url = _plain(url_match.group(1)) if url_match else ""
        sections = _TEXT.findall(block)
        if sections:
            text = "\n\n".join(part for part in (_plain(section) for section in sections) if part)
        else:  # no <TEXT>: everything but the number, the HTTP header, the URL and the title
            body = _URL.sub(" ", _DOCHDR.sub(" ", _DOCNO.sub(" ", block)))
            text = _plain(title_pattern.sub(" ", body) if title_pattern else body)
        yield DocumentEntry(docid, title, text, url, {}, line)

"""How every reader of the house opens a file and reads it: :func:`source_name` (the name in error
messages), :func:`open_binary` (a path or a binary file object, gzip by magic bytes or a ``.gz`` name),
:func:`open_lines` (numbered UTF-8 lines, streamed in blocks of ``_BLOCK_SIZE`` bytes, each bad line
reported) and the limits a file must keep to (:func:`limits`, :func:`current_limits`,
:class:`SizeLimitReached`).
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO, Any

from pooling.formats.errors import FormatError, LineError, line_too_long, nul_message

#: A path, or an already-open binary file object (ideally with a ``name``, used in error messages).
Source = str | os.PathLike[str] | IO[bytes]

_BLOCK_SIZE = 1 << 16


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


def source_name(source: Source) -> str:
    """The name used in error messages: the path, or the file object's ``name`` (``<stream>`` if none)."""
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return str(name) if name not in (None, "") else "<stream>"


def gzip_named(name: str) -> bool:
    """Whether a file's name says it is gzipped: it ends in ``.gz``, in any case (the one rule of a
    ``.gz`` name: :func:`open_binary` decompresses such a file, :func:`without_gz` drops the suffix)."""
    return name.lower().endswith(".gz")


def without_gz(name: str) -> str:
    """``name`` less its ``.gz`` suffix (any case, :func:`gzip_named`): the name of what the gzipped file
    holds, whose extension tells its format (``format_guess``) and its run's name (``check_run_name``)."""
    return name[: -len(".gz")] if gzip_named(name) else name


def client_name(path: str | os.PathLike[str]) -> str:
    """The name a client (a page, the API, a job's errors or parameters) is given for a file the server
    stored or read: the file's own name, never the folders it is kept in (an upload is stored under the
    name its user gave it, a release's file under its name in the release). The one rule for every message
    and field that names such a file; the path itself stays with the code that opens it (:func:`open_path`
    names the file it opens by this name, so the readers' errors do too)."""
    return os.path.basename(os.fspath(path))


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


def open_path(path: str | os.PathLike[str], name: str | None = None) -> io.BufferedReader:
    """Open a file to read its bytes, or a :class:`FormatError` with its one file-level problem, named
    ``name`` (the path by default): ``file not found``, ``is a directory, not a file`` or ``cannot open
    file: ...``. The file opened carries ``name`` as its own, so a reader given it names its lines that way
    (a file the server stored, read for a client, is opened as its :func:`client_name`). The one way every
    import opens a path (:func:`open_binary` for the readers of this package, ``pooling.imports`` for its
    progress-counting reader)."""

    def problem(message: str) -> FormatError:
        return FormatError([LineError(name or str(path), None, message)])

    try:
        opened = open(path, "rb")  # noqa: SIM115 (the caller closes it)
        if name is not None:
            opened.raw.name = name  # type: ignore[attr-defined]  # FileIO's name, what `source_name` reads
        return opened
    except FileNotFoundError:
        raise problem("file not found") from None
    except IsADirectoryError:
        raise problem("is a directory, not a file") from None
    except OSError as exc:
        raise problem(f"cannot open file: {exc.strerror or exc}") from None


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
        owned = open_path(source, name)  # closed by Opened.close
        buffered: Any = owned
    else:
        if isinstance(source, io.TextIOBase):
            raise TypeError("the readers need a binary file object (open it with 'rb')")
        buffered = io.BufferedReader(_ReadAdapter(source))
    try:
        is_gzip = buffered.peek(2)[:2] == b"\x1f\x8b" or gzip_named(name)
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

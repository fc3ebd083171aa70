"""The file streamed through one reusable buffer as blocks of whole lines (``_blocks``: a damaged gzip
stream, an unreadable file or a line over the length limit recorded on its line), the newline searches,
and a block's cut into chunks of about a megabyte (``_chunks``).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from pooling.formats import (
    FormatError,
    SizeLimitReached,
    Source,
    current_limits,
    line_too_long,
    open_binary,
    source_name,
)
from pooling.trec_io.errors import ErrorLog

_CHUNK_BYTES = 1 << 20  # 1 MiB of whole lines per parsing step: temporaries stay in cache and are reused
_BLOCK_BYTES = 1 << 23  # the file is read 8 MiB at a time into one reusable buffer
_PAD = 64  # zero bytes after each chunk, so short tokens can be gathered with a strided view
_BOM = b"\xef\xbb\xbf"


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
    bom_checked = False  # whether the file's first bytes were looked at for a byte-order mark
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
            if not bom_checked:  # a UTF-8 byte-order mark is dropped, as every reader of the house does
                if total < len(_BOM) and read:
                    carry = total
                    continue
                bom_checked = True
                if total >= len(_BOM) and bytes(buffer[: len(_BOM)]) == _BOM:
                    buffer[: total - len(_BOM)] = buffer[len(_BOM) : total].copy()
                    total -= len(_BOM)
                    if read == 0:
                        carry = total
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

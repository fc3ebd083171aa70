"""A file written with its SHA-256 computed on the way (`HashedFile`), so that nothing reads it back to
hash it, and whose `append_file` adds another file's bytes through the kernel while a thread hashes them.
A release writes its files through it (`release_files`), and its manifest reports the hashes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import Any


class HashedFile:
    """A file written as UTF-8 text (no newline translation) whose SHA-256 is computed as it is written,
    so nothing reads the file back to hash it. Use as a context manager; `hexdigest` once it is closed.
    With `hashed=False` (a release's second process, whose files only feed `append_file`) nothing is
    hashed and `hexdigest` is ""."""

    def __init__(self, path: Path, *, hashed: bool = True) -> None:
        self.name = path.name
        self.file = open(path, "wb")  # noqa: SIM115  # closed by __exit__
        self.digest = hashlib.sha256() if hashed else None

    def write(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8"))

    def write_bytes(self, data: bytes) -> None:
        if self.digest is not None:
            self.digest.update(data)
        self.file.write(data)

    def append_file(self, path: Path) -> None:
        """Add the bytes of the file at `path` to this one (and to its hash): the kernel copies them
        (`os.copy_file_range`, no pass through Python's buffers) while a thread reads and hashes them a
        MiB at a time (reading and hashing let go of the GIL), so the two overlap; a copy through Python
        where the kernel cannot (another system, another file system). Memory: a MiB, whatever the size."""
        self.file.flush()
        with open(path, "rb") as part:
            size = os.fstat(part.fileno()).st_size
            hashing: threading.Thread | None = None
            failed: list[BaseException] = []  # what the hashing thread raised
            if self.digest is not None and size:
                hashing = threading.Thread(target=_hash_file, args=(self.digest, part.fileno(), size, failed))
                hashing.start()
            try:
                _copy_bytes(part.fileno(), self.file.fileno(), size)
            finally:
                if hashing is not None:
                    hashing.join()
            if failed:  # the hash would not be the file's: fail the release rather than describe it wrong
                raise failed[0]
        self.file.seek(0, os.SEEK_END)  # the buffered writer's position after the bytes the kernel wrote

    def hexdigest(self) -> str:
        return "" if self.digest is None else self.digest.hexdigest()

    def __enter__(self) -> HashedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()


def _hash_file(digest: Any, source: int, size: int, failed: list[BaseException]) -> None:
    """Add the first `size` bytes of the file descriptor `source` to `digest`, read by offset (`pread`:
    its position, which the copy moves, is left alone); an error goes to `failed` (this runs in a
    thread of its own, whose exceptions nobody would see)."""
    try:
        offset = 0
        while offset < size:
            chunk = os.pread(source, min(size - offset, 1 << 20), offset)
            if not chunk:
                raise OSError(f"the file ended {size - offset} bytes short of its size")
            digest.update(chunk)
            offset += len(chunk)
    except BaseException as exc:
        failed.append(exc)


def _copy_bytes(source: int, target: int, size: int) -> None:
    """`size` bytes from the file descriptor `source` to `target`, each from its own position."""
    left = size
    kernel_copy = getattr(os, "copy_file_range", None)  # Linux's; absent elsewhere
    with contextlib.suppress(OSError):  # refused between these two (another file system, ...)
        while kernel_copy is not None and left > 0:
            copied = kernel_copy(source, target, left)
            if not copied:
                break
            left -= copied
    while left > 0:
        chunk = os.read(source, min(left, 1 << 20))
        if not chunk:
            raise OSError(f"the file ended {left} bytes short of its size")
        view = memoryview(chunk)
        while view:
            view = view[os.write(target, view) :]
        left -= len(chunk)

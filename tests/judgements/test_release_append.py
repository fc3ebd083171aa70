"""`hashed_files.HashedFile.append_file`: how a release's first process adds the second's files to its
own (the kernel copies, a thread hashes). Whichever way the bytes go, the file and its SHA-256 are those
of writing everything through `write_bytes`."""

from __future__ import annotations

import hashlib
import os

import pytest

from judgements import hashed_files


def _written(tmp_path, parts):
    """A HashedFile that got `parts[0]` written and each later part appended from a file of its own."""
    target = tmp_path / "target.txt"
    with hashed_files.HashedFile(target) as file:
        file.write_bytes(parts[0])
        for index, part in enumerate(parts[1:]):
            source = tmp_path / f"part-{index}"
            source.write_bytes(part)
            file.append_file(source)
        file.write_bytes(b"tail\n")  # written after: lands after the appended bytes
    return target.read_bytes(), file.hexdigest()


PARTS = [b"301 0 doc-a 1\n" * 1000, os.urandom(3 << 20), b"", "é\n".encode() * 70_001]


def _expected():
    data = b"".join(PARTS) + b"tail\n"
    return data, hashlib.sha256(data).hexdigest()


def test_appended_files_are_the_bytes_and_hash_of_writing_them(tmp_path):
    assert _written(tmp_path, PARTS) == _expected()


@pytest.mark.parametrize("fails_after", [0, 1])
def test_a_copy_the_kernel_refuses_goes_through_python(tmp_path, monkeypatch, fails_after):
    """copy_file_range refused at once (another file system, EXDEV), or after a first piece: the rest
    is copied by reading and writing, from where the kernel stopped."""
    calls = []
    real = os.copy_file_range

    def copy_file_range(source, target, count, *args):
        calls.append(count)
        if len(calls) > fails_after:
            raise OSError(18, "Invalid cross-device link")
        return real(source, target, min(count, 4096), *args)

    monkeypatch.setattr(os, "copy_file_range", copy_file_range)
    assert _written(tmp_path, PARTS) == _expected()
    assert calls  # the kernel's copy was tried


def test_without_copy_file_range(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "copy_file_range")
    assert _written(tmp_path, PARTS) == _expected()


def test_an_unhashed_file_has_no_digest_and_its_bytes(tmp_path):
    """The second process's files (hashed when appended, not when written)."""
    with hashed_files.HashedFile(tmp_path / "part", hashed=False) as file:
        file.write("qid 0 d 1\n")
    assert file.hexdigest() == ""
    assert (tmp_path / "part").read_bytes() == b"qid 0 d 1\n"


def test_a_failed_hash_fails_the_append(tmp_path, monkeypatch):
    """The thread that hashes cannot read the part: the append raises (a release never describes its
    files with a hash that is not theirs)."""

    def pread(*args):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "pread", pread)
    with pytest.raises(OSError, match="Input/output"):
        _written(tmp_path, PARTS)

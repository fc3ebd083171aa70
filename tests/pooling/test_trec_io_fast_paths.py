"""pooling.trec_io: a sparser KeyIndex (slots_per_key) finds the same rows, present and absent keys alike;
bytes columns filled chunk by chunk keep every value, narrower ones zero-padded; grades parsed as int does."""

from __future__ import annotations

import numpy as np

from pooling import trec_io


def test_it_finds_the_same_rows_in_a_sparse_table_as_in_a_dense_one() -> None:
    rng = np.random.default_rng(9)
    keys = np.unique(rng.integers(0, 2**63, 5000, dtype=np.uint64))
    rng.shuffle(keys)
    wanted = np.concatenate([keys[::3], rng.integers(0, 2**63, 20000, dtype=np.uint64)])
    expected = {int(k): i for i, k in enumerate(keys.tolist())}
    for slots_per_key in (2, 8, 16):
        index = trec_io.KeyIndex(keys, slots_per_key=slots_per_key)
        assert index.unique
        assert len(index.table) >= slots_per_key * len(keys)
        assert index.lookup(wanted).tolist() == [expected.get(int(k), -1) for k in wanted.tolist()]


def test_it_fills_a_bytes_column_with_wider_and_narrower_values() -> None:
    column = trec_io.readers._Column(2, "S3")
    parts = [
        np.array([b"abc", b"d"]),
        np.array([b"e"], dtype="S1"),
        np.array([b"fghij", b""]),
        np.array([b"k"]),
    ]
    for part in parts:
        column.append(part)
    assert column.result().tolist() == [b"abc", b"d", b"e", b"fghij", b"", b"k"]
    assert column.result().dtype == np.dtype("S5")


def test_it_parses_relevance_grades_digit_by_digit_as_int_does() -> None:
    texts = [b"0", b"3", b"-1", b"+7", b"007", b"-0", b"123456789012345678", b"-99999999999999999", b"12"]
    errors = trec_io.ErrorLog("qrels")
    grades = trec_io.values._parse_grades(np.array(texts), list(range(1, 10)), errors, np.zeros(0))
    assert grades.tolist() == [int(t) for t in texts]
    assert errors.items == []
    grades = trec_io.values._parse_grades(np.array([b"1", b"1x", b"2"]), [1, 2, 3], errors, np.zeros(0))
    assert grades.tolist() == [1, 0, 2]  # the bad line has no grade (and the file is refused)
    assert errors.items == [(2, "relevance '1x' is not an integer")]


def test_parse_threads_follow_the_tasks_running_now(tmp_path, monkeypatch) -> None:
    """A read started right after another busy command sees a high load average for a minute though the
    cores are idle now: the threads follow the runnable tasks of /proc/loadavg (less the reader's own)."""
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(trec_io.chunks, "_LOADAVG", str(loadavg))
    monkeypatch.setattr(trec_io.chunks.os, "getloadavg", lambda: (5.0, 5.0, 5.0))
    monkeypatch.setattr(trec_io.chunks.os, "cpu_count", lambda: 2)
    loadavg.write_text("5.00 5.00 5.00 1/140 4242\n")  # only the reader runs: both cores idle
    assert trec_io.chunks._workers() == 2
    loadavg.write_text("0.10 0.10 0.10 3/140 4242\n")  # two other tasks running now: none idle
    assert trec_io.chunks._workers() == 1
    loadavg.unlink()  # no /proc: the load average is all there is
    assert trec_io.chunks._workers() == 1

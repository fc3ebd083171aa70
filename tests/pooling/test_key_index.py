"""pooling.trec_io.KeyIndex: a sparser table (slots_per_key) finds the same rows, present and absent keys
alike; and bytes columns filled chunk by chunk keep every value, narrower ones zero-padded."""

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
    column = trec_io._Column(2, "S3")
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

"""How run rows are read in bulk and stored: trec_io.iter_run, the importer's ranking across chunks, the
document catalogue, and (PostgreSQL) one partition per run with its BRIN index."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from pooling import deletion, formats, imports, runrows, trec_io
from pooling import errors as pooling_errors
from pooling.models import Collection, Document, Run, RunRow, Topic
from tests.conftest import require_services
from tests.factories import make_collection, make_run

# Docids whose byte order differs from a naive order: upper before lower case, non-ASCII after ASCII.
DOCIDS = [f"d{i:03d}" for i in range(60)] + ["D001", "é01", "z", "Z", "ü", "ax", "d0"]


def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks and chunks of a few lines: topics straddle chunks and blocks."""
    monkeypatch.setattr(trec_io.blocks, "_BLOCK_BYTES", 256)
    monkeypatch.setattr(trec_io.blocks, "_CHUNK_BYTES", 64)
    monkeypatch.setattr(trec_io.chunks, "_workers", lambda: 2)


def random_run(seed: int, qids: list[str]) -> list[tuple[str, str, float]]:
    """Topics in contiguous blocks (one comes back later), scores with many ties, shuffled within topics."""
    rng = random.Random(seed)
    rows: list[tuple[str, str, float]] = []
    order = qids + [qids[0]]
    used: dict[str, set[str]] = {q: set() for q in qids}
    for qid in order:
        free = [d for d in DOCIDS if d not in used[qid]]
        for docid in rng.sample(free, rng.randint(1, min(25, len(free)))):
            used[qid].add(docid)
            rows.append((qid, docid, float(rng.choice([1, 2, 2.5, 3, -1, 0.125]))))
    return rows


def trec_order(rows: list[tuple[str, float]]) -> list[str]:
    """The reference: score descending, then docid descending in UTF-8 byte order."""
    ordered = sorted(rows, key=lambda r: (r[1], r[0].encode("utf-8")), reverse=True)
    return [docid for docid, _ in ordered]


def write_run(path: Path, rows: list[tuple[str, str, float]], *, noise: bool = False) -> Path:
    lines = []
    for i, (qid, docid, score) in enumerate(rows):
        if noise and i % 7 == 0:
            lines.append("# a comment\n\n")
        sep = "\t" if noise and i % 3 == 0 else " "
        lines.append(f"{qid}{sep}Q0 {docid} {i + 1} {score} tag\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


# --- iter_run (pure) --------------------------------------------------------------------------------


def test_iter_run_streams_the_rows_read_run_reads_with_their_lines(monkeypatch, tmp_path: Path) -> None:
    rows = [(q, d, s) for q, d, s in random_run(1, ["301", "302", "303"]) if q != "301"]
    path = write_run(tmp_path / "run.txt", rows, noise=True)
    small_chunks(monkeypatch)

    errors = trec_io.ErrorLog(str(path))
    chunks = list(trec_io.iter_run(path, errors))

    assert len(chunks) > 3  # the file really came in pieces
    assert errors.total == 0
    streamed = [
        (qid, docid.decode(), float(score), int(line))
        for chunk in chunks
        for qid, docid, score, line in zip(
            np.repeat(chunk.qids, chunk.qid_lengths), chunk.docid, chunk.score, chunk.line, strict=True
        )
    ]
    text_lines = path.read_text(encoding="utf-8").splitlines()
    assert [(q, d, s) for q, d, s, _ in streamed] == rows
    for qid, docid, _score, line in streamed:  # each row knows the line it came from
        assert text_lines[line - 1].split()[:3] == [qid, "Q0", docid]
    assert all(
        np.array_equal(c.docid_hash, trec_io.hash_bytes(c.docid)) for c in chunks
    )  # the docid's own hash, not the (qid, docid) key


def test_iter_run_by_topic_gathers_each_topic_whatever_the_line_order(monkeypatch, tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    lines = [f"{q} Q0 d{i} {i} {i % 7}.5 t" for i in range(300) for q in ("b", "a", "c")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    small_chunks(monkeypatch)
    monkeypatch.setattr(trec_io.by_topic, "TOPIC_PIECE_ROWS", 250)

    errors = trec_io.ErrorLog(str(path))
    chunks = list(trec_io.iter_run_by_topic(path, errors))

    assert errors.total == 0 and len(chunks) == 3  # whole topics only: one topic of 300 rows a chunk
    assert [chunk.qids for chunk in chunks] == [["b"], ["a"], ["c"]]  # in order of first appearance
    for chunk, offset in zip(chunks, (1, 2, 3), strict=True):
        assert chunk.line.tolist() == list(range(offset, 901, 3))  # the topic's rows in file order
        assert [d.decode() for d in chunk.docid.tolist()] == [f"d{i}" for i in range(300)]
        assert np.array_equal(chunk.docid_hash, trec_io.hash_bytes(chunk.docid))


def test_iter_run_by_topic_holds_one_group_of_topics_at_a_time(monkeypatch, tmp_path: Path) -> None:
    import tracemalloc

    path = tmp_path / "mixed.txt"
    rng = random.Random(4)
    rows = [(f"q{q}", f"D{rng.randrange(10**9)}x{i}", rng.random()) for i in range(60) for q in range(2000)]
    path.write_text("".join(f"{q} Q0 {d} 1 {s:.5f} t\n" for q, d, s in rows), encoding="utf-8")
    monkeypatch.setattr(trec_io.blocks, "_BLOCK_BYTES", 1 << 16)  # the reader's buffers small beside the rows
    monkeypatch.setattr(trec_io.blocks, "_CHUNK_BYTES", 1 << 14)

    def gathered(group_bytes: int) -> tuple[dict[str, list[tuple[str, int]]], int]:
        monkeypatch.setattr(trec_io.by_topic, "TOPIC_GROUP_BYTES", group_bytes)
        tracemalloc.start()
        for _chunk in trec_io.iter_run_by_topic(path, trec_io.ErrorLog(str(path))):
            pass  # the reader's own memory, nothing kept
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        errors = trec_io.ErrorLog(str(path))
        topics: dict[str, list[tuple[str, int]]] = {}
        for chunk in trec_io.iter_run_by_topic(path, errors):
            assert np.array_equal(chunk.docid_hash, trec_io.hash_bytes(chunk.docid))
            start = 0
            for qid, n in zip(chunk.qids, chunk.qid_lengths.tolist(), strict=True):
                assert qid not in topics  # every topic whole, once
                docids = [d.decode() for d in chunk.docid[start : start + n].tolist()]
                topics[qid] = list(zip(docids, chunk.line[start : start + n].tolist(), strict=True))
                start += n
        assert errors.total == 0
        return topics, peak

    whole, whole_peak = gathered(1 << 40)  # one group: every row held at once
    assert trec_io.by_topic._topic_groups(path) == 1
    grouped, grouped_peak = gathered(1 << 19)  # ~9 groups, spilled to temporary files
    assert trec_io.by_topic._topic_groups(path) > 5
    assert grouped == whole  # the same rows, each topic's in file order
    assert all([line for _, line in v] == sorted(line for _, line in v) for v in whole.values())
    assert grouped_peak < whole_peak / 2, (grouped_peak, whole_peak)


def test_iter_run_by_topic_keeps_apart_qids_whose_hashes_collide(monkeypatch, tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    lines = [f"{q} Q0 d{i} {i} {i % 7}.5 t" for i in range(40) for q in ("b", "a", "c", "a2")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    small_chunks(monkeypatch)

    def rows(chunks: list[trec_io.RunChunk]) -> list[tuple[str, int]]:
        pairs = [zip(np.repeat(c.qids, c.qid_lengths).tolist(), c.line.tolist(), strict=True) for c in chunks]
        return [pair for chunk in pairs for pair in chunk]

    expected = rows(list(trec_io.iter_run_by_topic(path, trec_io.ErrorLog("x"))))
    # Every qid hashes alike after the first chunks: the codes are then given by the qids' bytes.
    seen = []

    def colliding(values: np.ndarray) -> np.ndarray:
        seen.append(len(values))
        return trec_io.hash_bytes(values) if len(seen) < 3 else np.zeros(len(values), dtype=np.uint64)

    monkeypatch.setattr(trec_io.by_topic._QidCodes, "_hash", staticmethod(colliding))
    errors = trec_io.ErrorLog(str(path))
    chunks = list(trec_io.iter_run_by_topic(path, errors))

    assert rows(chunks) == expected
    assert len(seen) == 3 and errors.total == 0  # hashed until the collision, then by bytes
    assert expected == [(q, 4 * i + k + 1) for k, q in enumerate(("b", "a", "c", "a2")) for i in range(40)]


def test_iter_run_records_bad_lines_and_empty_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("1 Q0 d1 1 2.0 t\n1 Q0 d2 1\n1 Q0 d3 1 nan t\n", encoding="utf-8")
    errors = trec_io.ErrorLog("bad.txt")
    list(trec_io.iter_run(bad, errors))
    with pytest.raises(formats.FormatError) as info:
        errors.raise_if_any()
    assert [str(error) for error in info.value.errors] == [
        "bad.txt:2: expected 6 fields 'qid Q0 docid rank score tag', found 4",
        "bad.txt:3: score 'nan' is not a finite number",
    ]

    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    errors = trec_io.ErrorLog("empty.txt")
    assert list(trec_io.iter_run(empty, errors)) == []
    assert [message for _, message in errors.items] == ["file is empty"]


def test_key_index_finds_keys_and_says_when_two_rows_share_one() -> None:
    keys = np.array([5, 1 << 63, 7, 123456789], dtype=np.uint64)
    index = trec_io.KeyIndex(keys)
    assert index.unique
    rows, found = index.probe(np.array([7, 8, 5, 1 << 63], dtype=np.uint64))
    assert dict(zip(rows.tolist(), found.tolist(), strict=True)) == {0: 2, 2: 0, 3: 1}
    assert not trec_io.KeyIndex(np.array([3, 9, 3], dtype=np.uint64)).unique


def test_key_index_lookup_follows_probe_chains() -> None:
    # Keys with the same top bits share a home slot: all but one are placed further along.
    crowded = np.array([(1 << 62) + i for i in range(12)] + [99], dtype=np.uint64)
    index = trec_io.KeyIndex(crowded)
    wanted = np.array([(1 << 62) + 11, 99, (1 << 62) + 12, (1 << 62), 5], dtype=np.uint64)
    assert index.lookup(wanted).tolist() == [11, 12, -1, 0, -1]
    rows, found = index.probe(wanted)
    assert dict(zip(rows.tolist(), found.tolist(), strict=True)) == {0: 11, 1: 12, 3: 0}


# --- the importer (both databases) ------------------------------------------------------------------


@pytest.fixture
def collection(db) -> Collection:
    collection = Collection.objects.create(name="storage")
    Document.objects.bulk_create(Document(collection=collection, docid=d, title=d) for d in DOCIDS)
    Topic.objects.bulk_create(Topic(collection=collection, qid=q, query=q) for q in ("301", "302", "303"))
    return collection


@pytest.mark.parametrize(("seed", "targeted"), [(1, True), (2, True), (3, False), (4, False)])
def test_imported_lists_are_in_trec_order_whatever_the_chunking(
    collection: Collection, monkeypatch, tmp_path: Path, seed: int, targeted: bool
) -> None:
    rows = random_run(seed, ["301", "302", "303"])
    path = write_run(tmp_path / f"run{seed}.txt", rows, noise=True)
    small_chunks(monkeypatch)
    if not targeted:  # the collection's whole catalogue, as for a large file
        monkeypatch.setattr(runrows, "TARGETED_BYTES", 0)

    summary = imports.import_run(collection=collection, path=path)

    run = Run.objects.get(name=f"run{seed}")
    assert summary.rows == len(rows) == run.num_rows
    for topic in Topic.objects.filter(collection=collection):
        expected = trec_order([(d, s) for q, d, s in rows if q == topic.qid])
        assert [docid for docid, _ in run.ranked_list(topic)] == expected
    ranks = list(RunRow.objects.filter(run=run).values_list("topic_id", "rank"))
    assert len(set(ranks)) == len(ranks)


def test_a_duplicate_across_chunks_and_an_unknown_document_are_reported_by_line(
    collection: Collection, monkeypatch, tmp_path: Path
) -> None:
    rows = [("301", f"d{i:03d}", float(i)) for i in range(20)]
    rows.insert(15, ("301", "d002", 9.5))  # a repeat, chunks after its first occurrence
    rows.append(("301", "nope", 1.0))
    path = write_run(tmp_path / "dups.txt", rows)
    small_chunks(monkeypatch)

    with pytest.raises(pooling_errors.ImportFailed) as info:
        imports.import_run(collection=collection, path=path, display_name="dups.txt")

    assert info.value.errors == [
        "dups.txt:16: duplicate docid 'd002' for qid '301' (first at line 3)",
        "dups.txt:22: unknown document 'nope' (not in the collection)",
    ]
    assert not Run.objects.exists()
    assert not RunRow.objects.exists()


def test_a_small_file_looks_up_only_the_documents_it_names(collection: Collection, tmp_path: Path) -> None:
    path = write_run(tmp_path / "few.txt", [("301", "z", 1.0), ("301", "é01", 1.0), ("302", "nope", 2.0)])
    named = runrows.docids_named(path)
    assert sorted(named) == ["nope", "z", "é01"]

    few = runrows.DocumentCatalogue(collection, only=named)
    everything = runrows.DocumentCatalogue(collection)

    assert len(few) == 2 and len(everything) == len(DOCIDS)
    wanted = np.array([d.encode() for d in ("é01", "z", "nope")], dtype=np.bytes_)
    hashes = trec_io.hash_bytes(wanted)
    ids = [few.ids[p] if p >= 0 else None for p in few.positions_of(wanted, hashes).tolist()]
    assert ids == [everything.ids[p] if p >= 0 else None for p in everything.positions_of(wanted, hashes)]
    assert ids[2] is None
    assert few.docids.tolist() == sorted([b"z", "é01".encode()])  # byte order kept among the few


def test_the_catalogue_maps_docids_exactly_even_without_its_hash_table(collection: Collection) -> None:
    catalogue = runrows.DocumentCatalogue(collection)
    wanted = np.array([d.encode() for d in ["é01", "missing", "D001", "d000", "d0"]], dtype=np.bytes_)
    hashes = trec_io.hash_bytes(wanted)

    fast = catalogue.positions_of(wanted, hashes)
    catalogue.index.unique = False  # what a hash shared by two docids of the collection leads to
    exact = catalogue.positions_of(wanted, hashes)

    assert fast.tolist() == exact.tolist()
    assert fast[1] == -1
    found = [catalogue.docids[p].decode() for p in fast.tolist() if p >= 0]
    assert found == ["é01", "D001", "d000", "d0"]
    byte_order = sorted(d.encode() for d in DOCIDS)
    assert catalogue.docids.tolist() == byte_order  # positions are the tie-break order


def test_the_catalogue_holds_every_document_whichever_way_it_is_read(
    collection: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = dict(Document.objects.filter(collection=collection).values_list("docid", "id"))
    expected = sorted((d.encode(), ids[d]) for d in DOCIDS)

    def held(catalogue: runrows.DocumentCatalogue) -> list[tuple[bytes, int]]:
        return list(zip(catalogue.docids.tolist(), catalogue.ids.tolist(), strict=True))

    assert held(runrows.DocumentCatalogue(collection)) == expected
    monkeypatch.setattr(runrows, "CATALOGUE_BATCH", 4)  # PostgreSQL: many batches, each in one query
    assert held(runrows.DocumentCatalogue(collection)) == expected

    # A docid with a newline in it cannot come newline-joined: the catalogue is read row by row instead.
    odd = Document.objects.create(collection=collection, docid="two\nlines", title="odd")
    catalogue = runrows.DocumentCatalogue(collection)
    assert held(catalogue) == sorted([*expected, (b"two\nlines", odd.pk)])


# --- PostgreSQL: one partition per run ---------------------------------------------------------------


def partitions() -> dict[str, str]:
    """Partition table → its bound, for pooling_runrow."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i
               JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'pooling_runrow'::regclass"""
        )
        return dict(cursor.fetchall())


def table_exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_postgresql_gives_each_imported_run_its_own_partition(tmp_path: Path) -> None:
    require_services()
    collection = Collection.objects.create(name="parts")
    Document.objects.bulk_create(Document(collection=collection, docid=d, title=d) for d in DOCIDS)
    Topic.objects.bulk_create(Topic(collection=collection, qid=q, query=q) for q in ("301", "302", "303"))
    rows = random_run(7, ["301", "302", "303"])
    path = write_run(tmp_path / "alpha.txt", rows)

    imports.import_run(collection=collection, path=path)
    run = Run.objects.get(name="alpha")
    table = runrows.partition_name(run.pk)

    assert partitions()[table] == f"FOR VALUES IN ('{run.pk}')"
    assert partitions()["pooling_runrow_default"] == "DEFAULT"
    assert RunRow.objects.filter(run=run).count() == len(rows)
    # The key is (run, topic, rank): 1..n within every topic, including 301, which came back in a second
    # block and was re-ranked through the ORM.
    keys = [row.pk for row in RunRow.objects.filter(run=run)]
    assert len(set(keys)) == len(rows)
    per_topic: dict[int, list[int]] = {}
    for run_id, topic_id, rank in keys:
        assert run_id == run.pk
        per_topic.setdefault(topic_id, []).append(rank)
    assert all(sorted(ranks) == list(range(1, len(ranks) + 1)) for ranks in per_topic.values())
    # One topic's list is read through the run's BRIN index, not a scan of every row.
    topic = Topic.objects.get(collection=collection, qid="302")
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")  # a tiny table: what a large one would use
        cursor.execute(
            "EXPLAIN SELECT document_id FROM pooling_runrow WHERE run_id = %s AND topic_id = %s "
            "ORDER BY rank",
            [run.pk, topic.pk],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET enable_seqscan")
    assert f"{table}_topic" in plan and "pooling_runrow_default" not in plan

    # --replace swaps the partition; a failing replace keeps the old one.
    bad = tmp_path / "bad.txt"
    bad.write_text("301 Q0 d001 1 1.0 t\n301 Q0 d002 1 x t\n", encoding="utf-8")
    with pytest.raises(pooling_errors.ImportFailed):
        imports.import_run(collection=collection, path=bad, name="alpha", replace=True)
    assert RunRow.objects.filter(run=run).count() == len(rows)
    good = tmp_path / "ok.txt"
    good.write_text("301 Q0 d001 1 1.0 t\n", encoding="utf-8")
    imports.import_run(collection=collection, path=good, name="alpha", replace=True)
    assert list(RunRow.objects.filter(run=run).values_list("rank", flat=True)) == [1]
    assert table in partitions()

    # Deleting the run drops its partition.
    deletion.delete_run(run=Run.objects.get(pk=run.pk))
    assert not table_exists(table)
    assert table not in partitions()


@pytest.mark.django_db(transaction=True)
def test_postgresql_keeps_rows_written_by_the_orm_unique_in_the_default_partition(tmp_path: Path) -> None:
    require_services()
    collection = make_collection(docs=5, topics=("q1",))
    run = make_run(collection=collection, name="orm", lists={"q1": ["d000", "d001"]})
    row = RunRow.objects.get(run=run, rank=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        RunRow.objects.create(run=run, topic_id=row.topic_id, document_id=row.document_id, rank=1, score=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pooling_runrow_default WHERE run_id = %s", [run.pk])
        assert cursor.fetchone()[0] == 2
    # Replacing the run by an import moves it out of the DEFAULT partition into its own.
    path = tmp_path / "orm.txt"
    path.write_text("q1 Q0 d003 1 2.0 t\nq1 Q0 d004 2 1.0 t\n", encoding="utf-8")
    call_command("import_run", collection.name, str(path), "--replace")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pooling_runrow_default WHERE run_id = %s", [run.pk])
        assert cursor.fetchone()[0] == 0
    assert runrows.partition_name(run.pk) in partitions()
    assert [d for d, _ in run.ranked_list(Topic.objects.get(collection=collection))] == ["d003", "d004"]


@pytest.mark.parametrize("compressed", [False, True])
def test_the_import_reports_progress_by_the_bytes_read(
    collection: Collection, monkeypatch, tmp_path: Path, compressed: bool
) -> None:
    import gzip

    rows = [(q, d, float(i % 5)) for q in ("301", "302") for i, d in enumerate(DOCIDS[:60])]
    path = write_run(tmp_path / "progress.txt", rows)
    if compressed:
        path = tmp_path / "progress.txt.gz"
        path.write_bytes(gzip.compress((tmp_path / "progress.txt").read_bytes()))
    monkeypatch.setattr(trec_io.blocks, "_BLOCK_BYTES", 512)
    seen: list[float] = []

    imports.import_run(
        collection=collection, path=path, progress=lambda fraction, _msg: seen.append(fraction)
    )

    assert len(seen) >= (1 if compressed else 3)  # a block at a time (gzip reads ahead)
    assert seen == sorted(seen)
    assert seen[0] > 0
    assert seen[-1] == 1.0

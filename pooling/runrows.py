"""Storage of run rows in bulk: the document catalogue the importer maps docids with, and the writer.

On PostgreSQL `pooling_runrow` is partitioned by run (migrations 0008 and 0009 give the layout). A run is
loaded into a fresh table of its own, in trec_eval order (binary COPY of rows built by numpy), given a
BRIN index on topic_id (its rows are clustered by topic, so a topic's list is a few pages) and attached as
the run's partition. A run's rows go with its partition
(`drop_partition`), in one statement. Rows written any other way land in the DEFAULT partition, which
keeps the unique (run, topic, rank) constraint. SQLite takes batched INSERTs into its plain table.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import connection

from pooling import trec_io
from pooling.models import Collection, Document, RunRow
from pooling.trec_io import KeyIndex, hash_bytes

BATCH = 20_000
#: A run file up to this size looks up only the documents it names (a first, cheap pass collects them);
#: a larger one loads the collection's whole catalogue. A small upload checked in a web request then
#: costs memory by its own size, not the collection's.
TARGETED_BYTES = 20 * 1024 * 1024
_LOOKUP_CHUNK = 900  # docids per IN (...) query: under SQLite's old limit of 999 variables
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
_COPY_TRAILER = b"\xff\xff"
# One binary COPY tuple: field count, then (length, value) per column; integers big-endian.
_TUPLE = np.dtype(
    [
        ("fields", ">i2"),
        ("run_len", ">i4"),
        ("run", ">i8"),
        ("topic_len", ">i4"),
        ("topic", ">i8"),
        ("document_len", ">i4"),
        ("document", ">i8"),
        ("rank_len", ">i4"),
        ("rank", ">i4"),
        ("score_len", ">i4"),
        ("score", ">f8"),
    ]
)
_COLUMNS = "(run_id, topic_id, document_id, rank, score)"
#: Pages per BRIN range: a 1,000-document list fills about 9 pages, so reading one touches 2 or 3 ranges.
BRIN_PAGES = 8


def partitioned() -> bool:
    return connection.vendor == "postgresql"


def partition_name(run_id: int) -> str:
    return f"{RunRow._meta.db_table}_{int(run_id)}"


def drop_partition(run_id: int) -> None:
    """Delete every row of a run: its partition in one statement, plus any rows in the DEFAULT one."""
    table = RunRow._meta.db_table
    with connection.cursor() as cursor:
        if partitioned():
            cursor.execute(f"DROP TABLE IF EXISTS {partition_name(run_id)}")
            cursor.execute(f"DELETE FROM {table}_default WHERE run_id = %s", [run_id])
        else:
            cursor.execute(f"DELETE FROM {table} WHERE run_id = %s", [run_id])


class DocumentCatalogue:
    """A collection's documents as arrays, for mapping a run's docids in bulk.

    Docids are sorted in byte order (trec_eval's `strcmp`). Lookups go through a hash table of their
    64-bit hashes (`trec_io.KeyIndex`), each match confirmed by comparing the strings; docids the table
    cannot place (a hash shared by two docids of the collection) are looked up in a dict built on need.
    """

    def __init__(self, collection: Collection, *, only: list[str] | None = None) -> None:
        """The collection's documents, or only those of them whose docids are in `only`."""
        whole = _all_documents(collection) if only is None else None
        if whole is not None:
            values, id_values = whole
        else:
            documents = Document.objects.filter(collection=collection)
            docids: list[bytes] = []
            ids: list[int] = []
            if only is None:
                batches: Any = [documents.values_list("docid", "id").iterator(chunk_size=50_000)]
            else:
                batches = _documents_named(collection, only)
            for rows in batches:
                for docid, pk in rows:
                    docids.append(docid.encode("utf-8"))
                    ids.append(pk)
            values = np.array(docids, dtype=np.bytes_) if docids else np.zeros(0, dtype="S1")
            del docids
            id_values = np.array(ids, dtype=np.int64)
        order = np.argsort(values, kind="stable")
        self.docids = values[order]
        self.ids = id_values[order]
        self.index = KeyIndex(hash_bytes(self.docids))
        self._dict: dict[bytes, int] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def positions_of(self, docid: np.ndarray, docid_hash: np.ndarray) -> np.ndarray:
        """Each docid's position in the catalogue (byte order), -1 for a docid the collection lacks."""
        position = np.full(len(docid), -1, dtype=np.int64)
        if not len(self.ids):
            return position
        if self.index.unique:
            position = self.index.lookup(docid_hash)  # -1 where no hash matched
            position[self.docids[np.maximum(position, 0)] != docid] = -1  # a hash match, not the docid
            return position
        if self._dict is None:
            self._dict = {value: i for i, value in enumerate(self.docids.tolist())}
        return np.array([self._dict.get(value, -1) for value in docid.tolist()], dtype=np.int64)


#: Documents per query of `_all_documents`: their docids come as one text value (docids of 255 characters
#: of 4 bytes each would make ~512 MB, under PostgreSQL's limit of 1 GB for a value).
CATALOGUE_BATCH = 500_000


def _all_documents(collection: Collection) -> tuple[np.ndarray, np.ndarray] | None:
    """(docids, ids) of every document of the collection. On PostgreSQL a batch of documents (in docid
    order, through the unique index) comes as one newline-joined text and one array of ids, a fraction of
    the cost of the ORM's one tuple a document: the catalogue is loaded before the first row is written.
    None elsewhere, and when a docid holds a newline."""
    if connection.vendor != "postgresql":
        return None
    table = Document._meta.db_table
    docids: list[bytes] = []
    ids: list[int] = []
    after: str | None = None
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT string_agg(docid, E'\\n'), array_agg(id), count(*), max(docid) FROM ("
                f"SELECT docid, id FROM {table} WHERE collection_id = %s AND (%s::text IS NULL OR docid > %s)"
                " ORDER BY docid LIMIT %s) batch",
                [collection.pk, after, after, CATALOGUE_BATCH],
            )
            text, batch_ids, count, after = cursor.fetchone()
            if not count:
                break
            batch = text.encode("utf-8").split(b"\n")
            if len(batch) != count:
                return None  # a docid with a newline in it
            docids.extend(batch)
            ids.extend(batch_ids)
            if count < CATALOGUE_BATCH:
                break
    if not docids:
        return np.zeros(0, dtype="S1"), np.zeros(0, dtype=np.int64)
    return np.array(docids, dtype=np.bytes_), np.array(ids, dtype=np.int64)


def _documents_named(collection: Collection, docids: list[str]) -> Any:
    """The (docid, id) of the collection's documents among `docids`, in batches. In plain SQL: the ORM's
    per-value work on tens of thousands of docids cost more than loading the whole catalogue. PostgreSQL
    takes them as one array; SQLite in chunks under its limit of variables."""
    sql = f"SELECT docid, id FROM {Document._meta.db_table} WHERE collection_id = %s AND docid"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"{sql} = ANY(%s)", [collection.pk, docids])
            yield cursor.fetchall()
            return
        for start in range(0, len(docids), _LOOKUP_CHUNK):
            chunk = docids[start : start + _LOOKUP_CHUNK]
            cursor.execute(f"{sql} IN ({', '.join(['%s'] * len(chunk))})", [collection.pk, *chunk])
            yield cursor.fetchall()


def docids_named(path: Any) -> list[str]:
    """The distinct docids a run file names (its bad lines are the import's to report)."""
    errors = trec_io.ErrorLog(str(path))
    parts = [np.unique(chunk.docid) for chunk in trec_io.iter_run(path, errors)]
    if not parts:
        return []
    return [docid.decode("utf-8", "replace") for docid in np.unique(np.concatenate(parts)).tolist()]


#: COPY blocks (psycopg's, 128 KiB each) waiting to be sent: the rows in flight stay under 8 MiB.
COPY_QUEUE_BLOCKS = 64


def _queued_writer(cursor: Any) -> Any:
    """psycopg's QueuedLibpqWriter (a thread sends the COPY data while this one parses and ranks the next
    rows; the server ingests meanwhile), its queue bounded by COPY_QUEUE_BLOCKS instead of psycopg's 1,024
    blocks (128 MiB), so that memory stays flat whichever side is slower."""
    from psycopg._acompat import Queue
    from psycopg.copy import QueuedLibpqWriter

    writer = QueuedLibpqWriter(cursor)
    writer._queue = Queue(maxsize=COPY_QUEUE_BLOCKS)  # psycopg==3.3 (pinned) keeps its queue here
    return writer


def _tuples(run_id: int, n: int) -> np.ndarray:
    """``n`` binary COPY tuples of the run, every field but topic, document, rank and score filled in."""
    rows = np.empty(n, dtype=_TUPLE)
    rows["fields"] = 5
    rows["run_len"] = rows["topic_len"] = rows["document_len"] = rows["score_len"] = 8
    rows["rank_len"] = 4
    rows["run"] = run_id
    return rows


class RowWriter:
    """Writes one run's rows, topic blocks at a time, within the import's transaction."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.cursor = connection.cursor()
        self.copy: Any = None
        self.pending: list[tuple[int, int, int, int, float]] = []
        self.tuples = _tuples(run_id, 0)
        drop_partition(run_id)
        if partitioned():
            self.table = partition_name(run_id)
            parent = RunRow._meta.db_table
            self.cursor.execute(
                f"CREATE TABLE {self.table} (LIKE {parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
            )
            # Proves the partition bound, so ATTACH does not scan the table to check it.
            self.cursor.execute(
                f"ALTER TABLE {self.table} ADD CONSTRAINT {self.table}_run CHECK (run_id = {int(run_id)})"
            )
            raw = self.cursor.cursor  # the psycopg cursor under Django's wrapper
            # FREEZE: the table is new in this transaction, so its rows can be written frozen (no later
            # vacuum rewrites them; about 5% off the COPY).
            self.copy_cm = raw.copy(
                f"COPY {self.table} {_COLUMNS} FROM STDIN (FORMAT binary, FREEZE)", writer=_queued_writer(raw)
            )
            self.copy = self.copy_cm.__enter__()
            self.copy.write(_COPY_HEADER)

    def write(self, topic: np.ndarray, document: np.ndarray, rank: np.ndarray, score: np.ndarray) -> None:
        if self.copy is not None:
            if len(self.tuples) < len(rank):
                self.tuples = _tuples(self.run_id, len(rank))
            rows = self.tuples[: len(rank)]  # its constant fields set once; its bytes copied out below
            rows["topic"] = topic
            rows["document"] = document
            rows["rank"] = rank
            rows["score"] = score
            self.copy.write(rows.tobytes())
            return
        self.pending.extend(
            zip(
                [self.run_id] * len(rank),
                topic.tolist(),
                document.tolist(),
                rank.tolist(),
                score.tolist(),
                strict=True,
            )
        )
        if len(self.pending) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.cursor.executemany(
                f"INSERT INTO {RunRow._meta.db_table} {_COLUMNS} VALUES (%s, %s, %s, %s, %s)", self.pending
            )
            self.pending.clear()

    def finish(self) -> None:
        """End the load: on PostgreSQL index the run's table and attach it as its partition."""
        if self.copy is not None:
            self.copy.write(_COPY_TRAILER)
            self.copy_cm.__exit__(None, None, None)
            self.copy = None
            parent = RunRow._meta.db_table
            self.cursor.execute(
                f"CREATE INDEX {self.table}_topic ON {self.table} USING brin (topic_id) "
                f"WITH (pages_per_range = {BRIN_PAGES})"
            )
            self.cursor.execute(
                f"ALTER TABLE {parent} ATTACH PARTITION {self.table} FOR VALUES IN ({int(self.run_id)})"
            )
        else:
            self._flush()
        self.cursor.close()

    def abort(self) -> None:
        """Give up (the transaction is rolled back by the caller): end the COPY with an error."""
        if self.copy is not None:
            self.copy_cm.__exit__(RuntimeError, RuntimeError("import failed"), None)
            self.copy = None
        self.pending.clear()
        self.cursor.close()

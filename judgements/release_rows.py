"""What a release reads, fast: every item of a pool with its judgements streamed in qrels order
(server-side cursor or COPY). The exact text of each value it writes is `release_values`'."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Literal

from django.db import connection

from judgements import copy_text
from judgements.models import (
    Adjudication,
    Judgement,
)
from judgements.release_values import (
    ISO_SQL,
    SECONDS_JSON_SQL,
    SECONDS_RAW,
    iso,
    iso_text,
    seconds_json,
)
from pooling.models import Pool, PoolItem


def seconds_text(row: Any) -> str:
    """The JSON text of a text row's seconds (`stream_items(text=True)`): SECONDS_JSON as the server
    wrote it, else `seconds_json` of the double's text (behind SECONDS_RAW there, or in SECONDS)."""
    written = row[SECONDS_JSON]
    if written and written[0] != SECONDS_RAW:
        return written
    return seconds_json(written[1:] or row[SECONDS])


@dataclass
class ItemVotes:
    item_id: int
    qid: str
    docid: str
    required: int
    adjudicated: int | Literal["unrateable"] | None
    votes: list[tuple[Any, int | None]]


def query_rows(sql: str, params: dict[str, Any], *, copy: bool = False) -> Any:
    """Yield the rows of a query in a flat amount of memory: through a server-side cursor, or with
    `copy` on PostgreSQL through `COPY (query) TO STDOUT`, parsed with the connection's own loaders for
    the column types the query has (read from a `LIMIT 0` run), so the rows are those a cursor returns.
    COPY streams while the server is still producing rows (and may use a parallel plan, which a cursor
    never does). The caller must close the generator before the transaction ends (contextlib.closing).
    With psycopg 2 (no copy with loaders) the cursor is used."""
    if copy and connection.vendor == "postgresql":
        from django.db.backends.postgresql.psycopg_any import is_psycopg3

        copy = is_psycopg3
    else:
        copy = False
    if copy:
        with connection.cursor() as cursor:
            cursor.execute(f"{sql} LIMIT 0", params)
            types = [column.type_code for column in cursor.description]
            with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT", params) as stream:
                stream.set_types(types)
                yield from stream.rows()
        return
    cursor = connection.chunked_cursor()
    try:
        cursor.execute(sql, params)
        while batch := cursor.fetchmany(20000):
            yield from batch
    finally:
        cursor.close()


def integer_rows(*, columns: list[str], tables: str, params: dict[str, Any], chunk_by: str) -> Any:
    """`SELECT columns FROM tables` (`tables`: the FROM and WHERE clauses), every value an integer (no
    NULL), as an (n, len(columns)) int64 array in no particular order. On PostgreSQL the server writes
    the rows of each `chunk_by` group as one text of numbers (`string_agg`), which numpy parses in one
    call: a million rows of five in about 2 s, where reading them row by row took 4-6 s (COPY) or 19 s
    (the ORM), and a text stays far below the server's limit of 1 GB a value. Elsewhere through
    `query_rows`."""
    import numpy as np

    if connection.vendor == "postgresql":
        numbers = f"concat_ws(' ', {', '.join(columns)})"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT string_agg({numbers}, ' ') {tables} GROUP BY {chunk_by}", params)
            text = " ".join(row[0] for row in cursor.fetchall())
        values = np.fromstring(text, dtype=np.int64, sep=" ") if text else np.empty(0, dtype=np.int64)
    else:
        sql = f"SELECT {', '.join(columns)} {tables}"
        values = np.fromiter((value for row in query_rows(sql, params) for value in row), dtype=np.int64)
    return values.reshape(-1, len(columns))


def current_judgements_join() -> str:
    """The join of an item `i` to the judgements `j` that count: human ones (a model judge's labels are not
    people's votes: `Judgement.objects`' rule, written here in SQL) of raters not excluded from the pool
    (`exclusions.exclude_rater`). Every read of a release's rows joins through it; its one parameter
    (`%(pool)s`) is the pool's id, the pool of `i`.

    The excluded raters are an uncorrelated `NOT IN`, which the server hashes once, rather than a
    `NOT EXISTS` per judgement row (that subplan was half of a release query's time); `rater_id IS NULL
    OR` keeps it the same as the `NOT EXISTS` for a judgement without a rater."""
    from judgements.models import RaterExclusion

    return f"""LEFT JOIN {Judgement._meta.db_table} j
        ON j.item_id = i.id AND j.kind = 'human' AND (j.rater_id IS NULL OR j.rater_id NOT IN (
            SELECT e.rater_id FROM {RaterExclusion._meta.db_table} e
            WHERE e.pool_id = %(pool)s AND e.restored_at IS NULL))"""


#: The fields of a row of `stream_items(text=True)`, by position: the item's (the same on each of its rows),
#: then the judgement's (all empty when the item has none).
#: With `seconds` on PostgreSQL, SECONDS is empty and SECONDS_JSON is what SECONDS_JSON_SQL writes; else
#: SECONDS_JSON is empty. `seconds_text` reads either.
(ID, QID, DOCID, REQUIRED, ADJUDICATION, ADJUDICATED_GRADE, ADJUDICATED_UNRATEABLE, RATER, GRADE,
 UNRATEABLE, FACETS, NOTE, SECONDS, CREATED, UPDATED, IMPORTED, SECONDS_JSON) = range(17)  # fmt: skip


def items_sql(*, iso_times: bool = False, seconds: bool = False, qids: bool = False) -> str:
    """The query of every selected item of a pool with its current human judgements, in qrels order (qid,
    docid by byte order, then rater); its one parameter (`%(pool)s`) is the pool's id. Each row is an item
    with one of its judgements (or none): the columns of `ID`…`IMPORTED`, and with `seconds` (PostgreSQL)
    `SECONDS_JSON`.

    On PostgreSQL the rows are read topic by topic, the topics in qid order, each topic's rows sorted
    apart (a LATERAL subquery per topic, kept from being flattened by `OFFSET 0`): the first row comes at
    once and the rows stream while the release writes them. One sort of the whole pool (the plain form
    below, which SQLite runs) held every row back until the last was sorted, and the release waited for it
    (3.2 of 7.2 s on 200,000 rows). The outer ORDER BY names only the qid, which the topics already come
    in, so it costs no sort; sorting every row again by (qid, docid, rater), rows already in that order,
    was about a seventh of the server's time. The readers check the order item by item (`_check_order`).

    With `qids` (PostgreSQL) only the topics whose qid is, in byte order, at least `%(qid_from)s` and below
    `%(qid_to)s` are read, either bound NULL for none: a release written in two processes reads one range
    each (`release_halves`)."""
    from pooling.models import Document, Topic

    postgres = connection.vendor == "postgresql"
    created, updated = "j.created_at", "j.updated_at"
    if iso_times and postgres:
        created, updated = ISO_SQL.format(column=created), ISO_SQL.format(column=updated)
    seconds = seconds and postgres
    values = ["i.id", "t.qid", "d.docid", "i.required_judgements", "a.id", "a.grade", "a.unrateable",
              "j.rater_id", "j.grade", "j.unrateable", "j.facets", "j.note",
              "NULL::float8" if seconds else "j.seconds", created, updated,
              "j.imported", *([SECONDS_JSON_SQL] if seconds else [])]  # fmt: skip
    if not postgres:
        return f"""
        SELECT {", ".join(values)}
        FROM {PoolItem._meta.db_table} i
        JOIN {Topic._meta.db_table} t ON t.id = i.topic_id
        JOIN {Document._meta.db_table} d ON d.id = i.document_id
        {current_judgements_join()}
        LEFT JOIN {Adjudication._meta.db_table} a ON a.item_id = i.id
        WHERE i.pool_id = %(pool)s AND i.selected
        ORDER BY t.qid, d.docid, j.rater_id
    """
    bounds = (
        """ AND (%(qid_from)s::text IS NULL OR t.qid COLLATE "C" >= %(qid_from)s)
              AND (%(qid_to)s::text IS NULL OR t.qid COLLATE "C" < %(qid_to)s)"""
        if qids
        else ""
    )
    named = ", ".join(f"{value} AS c{number}" for number, value in enumerate(values))
    listed = ", ".join(f"x.c{number}" for number in range(len(values)))
    return f"""
        SELECT {listed}
        FROM (SELECT t.id, t.qid FROM {Topic._meta.db_table} t
              WHERE t.id IN (SELECT i.topic_id FROM {PoolItem._meta.db_table} i WHERE i.pool_id = %(pool)s)
                {bounds}
              ORDER BY t.qid COLLATE "C" OFFSET 0) t
        CROSS JOIN LATERAL (
            SELECT {named}
            FROM {PoolItem._meta.db_table} i
            JOIN {Document._meta.db_table} d ON d.id = i.document_id
            {current_judgements_join()}
            LEFT JOIN {Adjudication._meta.db_table} a ON a.item_id = i.id
            WHERE i.pool_id = %(pool)s AND i.topic_id = t.id AND i.selected
            ORDER BY d.docid COLLATE "C", j.rater_id OFFSET 0) x
        ORDER BY t.qid COLLATE "C"
    """


def stream_items(
    *, pool: Pool, iso_times: bool = False, copy: bool = False, text: bool = False, qids: Any = None
) -> Any:
    """Yield every selected item of the pool with its current human judgements (a model judge's labels
    are not people's votes: `Judgement.objects`' rule, written here in SQL), in qrels order (qid, docid by
    byte order), reading through a server-side cursor so memory stays flat.

    With `iso_times`, on PostgreSQL the rows' created_at and updated_at come as the strings `iso` makes
    of them (elsewhere as the driver reads them). With `copy`, PostgreSQL streams the rows with COPY
    (see `query_rows`; close the generator before the transaction ends).

    With `text`, each item is `(fields, rows)`: `fields` the text fields of its first row and `rows` those
    of each row with a judgement, every value a string (`ID`…`IMPORTED`): "" for NULL, integers and
    doubles as `str`/`repr` write them (PostgreSQL's shortest exact text of a double is that), booleans
    `t`/`f`, facets as JSON text, times as `iso` text. On PostgreSQL (psycopg 3) they are COPY's own text,
    split without a parser per value; elsewhere the driver's rows, written out so.

    The judgements of a rater excluded from the pool (`exclusions.exclude_rater`) are not among them:
    this is where an exclusion takes effect for every release and every read of the current labels.

    `qids` (with `text`, on PostgreSQL): a (first, end) range of qids in byte order, either None for
    unbounded; only those topics' items are read (see `items_sql`)."""
    if text:
        yield from _stream_item_texts(pool=pool, qids=qids)
        return
    sql = items_sql(iso_times=iso_times)
    current: ItemVotes | None = None
    current_id: Any = None
    first_row: Any = None  # the first row of the current item
    rows: list[tuple[Any, ...]] = []
    votes: list[tuple[Any, int | None]] = []
    source = query_rows(sql, {"pool": pool.pk}, copy=copy)
    with contextlib.closing(source):  # its cursor or COPY ends here, even on an error
        for row in source:
            if row[0] != current_id or current is None:
                if current is not None:
                    yield current, rows
                    _check_order(first_row, row)
                first_row = row
                current_id = row[0]
                adjudicated: int | Literal["unrateable"] | None = None
                if row[4] is not None:
                    adjudicated = "unrateable" if row[6] else row[5]
                votes, rows = [], []
                current = ItemVotes(current_id, row[1], row[2], row[3], adjudicated, votes)
            if row[7] is not None:
                votes.append((row[7], None if row[9] else row[8]))
                rows.append(row)
        if current is not None:
            yield current, rows


class OutOfOrder(RuntimeError):
    """The rows of `items_sql` came out of qrels order (see `_check_order`)."""


def _check_order(previous: Any, row: Any) -> None:
    """Raise `OutOfOrder` unless the item of `row` comes after that of `previous` in qrels order (qid,
    then docid, in byte order: Python compares strings by code point, which is UTF-8's byte order).

    `items_sql` orders the topics, and each topic's rows within its LATERAL subquery; that the nested loop
    hands the rows on in that order is what PostgreSQL does, not what SQL promises, so each item is checked
    as it comes (a release then fails instead of writing a wrong file)."""
    if (previous[QID], previous[DOCID]) >= (row[QID], row[DOCID]):
        raise OutOfOrder(
            f"the rows of a release came out of qrels order: ({row[QID]!r}, {row[DOCID]!r}) after "
            f"({previous[QID]!r}, {previous[DOCID]!r})"
        )


def _stream_item_texts(*, pool: Pool, qids: Any = None) -> Any:
    """`stream_items(text=True)`."""
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    params: dict[str, Any] = {"pool": pool.pk}
    copy = connection.vendor == "postgresql" and is_psycopg3
    if qids is not None:
        if not copy:
            raise ValueError("a range of qids is read on PostgreSQL with psycopg 3 only")
        params["qid_from"], params["qid_to"] = qids
    source = (
        copy_text.text_rows(
            items_sql(seconds=True, qids=qids is not None),
            params,
            settings=COPY_SETTINGS,
            times=(CREATED, UPDATED),
            unless_empty=RATER,
        )
        if copy
        else query_rows(items_sql(iso_times=True), params)
    )
    fields: list[str] = []
    rows: list[list[str]] = []
    current = None
    with contextlib.closing(source):  # its COPY ends here, before the caller's transaction, even on an error
        for row in source if copy else map(_driver_texts, source):
            if row[0] != current:
                if current is not None:
                    yield fields, rows
                    _check_order(fields, row)
                current, fields, rows = row[0], row, []
            if row[7]:
                rows.append(row)
        if current is not None:
            yield fields, rows


#: The settings of a release's COPY (`copy_text.text_rows`): doubles in their shortest exact text, times
#: in UTC as DateStyle ISO writes them (`copy_text.iso_of_copy`), no JIT (compiling the query's
#: expressions costs more than it saves on a release's rows), and the memory to sort and hash its rows
#: without temporary files.
COPY_SETTINGS = {
    "extra_float_digits": "1",
    "TimeZone": "UTC",
    "DateStyle": "ISO, MDY",
    "jit": "off",
    "work_mem": "64MB",
}


def _driver_texts(row: tuple[Any, ...]) -> list[str]:
    """A row of `items_sql` as the driver reads it, as the strings `copy_text.text_rows` gives for it."""
    import json

    postgres = connection.vendor == "postgresql"

    def number(value: Any) -> str:
        return "" if value is None else str(int(value))

    def flag(value: Any) -> str:
        return "" if value is None else ("t" if value else "f")

    facets = row[10]
    if facets is not None and not isinstance(facets, str):
        facets = json.dumps(facets)
    seconds = row[12]
    created, updated = ((iso_text if postgres else iso)(value) for value in row[13:15])
    return [
        number(row[0]), row[1], row[2], number(row[3]), number(row[4]), number(row[5]), flag(row[6]),
        number(row[7]), number(row[8]), flag(row[9]), facets or "", row[11] or "",
        "" if seconds is None else float.__repr__(float(seconds)), created or "", updated or "",
        flag(row[15]), "",
    ]  # fmt: skip

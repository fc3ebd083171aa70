"""What a release reads and writes, fast: every item of a pool with its judgements streamed in qrels
order (server-side cursor or COPY), and the exact text `json.dumps` gives for a judgement's values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from django.db import connection

from judgements.models import (
    Adjudication,
    Judgement,
)
from pooling.models import Pool, PoolItem


def iso(value: Any) -> str | None:
    """A timestamp as ISO 8601 UTC with microseconds (SQLite hands back strings, PostgreSQL datetimes)."""
    from datetime import UTC, datetime

    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def iso_text(value: str | None) -> str | None:
    """`iso` for a time that PostgreSQL already formatted (`stream_items(iso_times=True)`)."""
    return value


def json_value(value: Any) -> Any:
    if isinstance(value, str):
        import json

        return json.loads(value) if value else {}
    return value or {}


def json_text(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, ensure_ascii=False)`, the short way for the scalars of a
    judgement row: the same text (strings through json's own encoder, floats by repr with NaN and
    Infinity, as json writes them)."""
    import json

    kind = type(value)
    if kind is str:
        return json.encoder.encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return json_float(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def json_float(value: float) -> str:
    if value - value == 0.0:  # finite
        return float.__repr__(value)
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")


@dataclass
class ItemVotes:
    item_id: int
    qid: str
    docid: str
    required: int
    adjudicated: int | Literal["unrateable"] | None
    votes: list[tuple[Any, int | None]]


# On PostgreSQL a timestamp is formatted by the server exactly as `iso` formats it (UTC, microseconds;
# FM drops the zero-padding of years below 1000, as strftime's %Y does): parsing a million timestamps into
# datetimes only to format them again was the largest cost of a release.
ISO_SQL = """to_char({column} AT TIME ZONE 'UTC', 'FMYYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""


def query_rows(sql: str, params: list[Any], *, copy: bool = False) -> Any:
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


def current_judgements_join() -> str:
    """The join of an item `i` to the judgements `j` that count: human ones (a model judge's labels are not
    people's votes: `Judgement.objects`' rule, written here in SQL) of raters not excluded from the pool
    (`exclusions.exclude_rater`). Every read of a release's rows joins through it; its one parameter
    (`%s`) is the pool's id, the pool of `i`.

    The excluded raters are an uncorrelated `NOT IN`, which the server hashes once, rather than a
    `NOT EXISTS` per judgement row (that subplan was half of a release query's time); `rater_id IS NULL
    OR` keeps it the same as the `NOT EXISTS` for a judgement without a rater."""
    from judgements.models import RaterExclusion

    return f"""LEFT JOIN {Judgement._meta.db_table} j
        ON j.item_id = i.id AND j.kind = 'human' AND (j.rater_id IS NULL OR j.rater_id NOT IN (
            SELECT e.rater_id FROM {RaterExclusion._meta.db_table} e
            WHERE e.pool_id = %s AND e.restored_at IS NULL))"""


def stream_items(*, pool: Pool, iso_times: bool = False, copy: bool = False) -> Any:
    """Yield every selected item of the pool with its current human judgements (a model judge's labels
    are not people's votes: `Judgement.objects`' rule, written here in SQL), in qrels order (qid, docid by
    byte order), reading through a server-side cursor so memory stays flat.

    With `iso_times`, on PostgreSQL the rows' created_at and updated_at come as the strings `iso` makes
    of them (elsewhere as the driver reads them). With `copy`, PostgreSQL streams the rows with COPY
    (see `query_rows`; close the generator before the transaction ends).

    The judgements of a rater excluded from the pool (`exclusions.exclude_rater`) are not among them:
    this is where an exclusion takes effect for every release and every read of the current labels."""
    from pooling.models import Document, Topic

    postgres = connection.vendor == "postgresql"
    collate = ' COLLATE "C"' if postgres else ""
    times = "j.created_at, j.updated_at"
    if iso_times and postgres:
        times = f"{ISO_SQL.format(column='j.created_at')}, {ISO_SQL.format(column='j.updated_at')}"
    sql = f"""
        SELECT i.id, t.qid, d.docid, i.required_judgements, a.id, a.grade, a.unrateable,
               j.rater_id, j.grade, j.unrateable, j.facets, j.note, j.seconds, {times},
               j.imported
        FROM {PoolItem._meta.db_table} i
        JOIN {Topic._meta.db_table} t ON t.id = i.topic_id
        JOIN {Document._meta.db_table} d ON d.id = i.document_id
        {current_judgements_join()}
        LEFT JOIN {Adjudication._meta.db_table} a ON a.item_id = i.id
        WHERE i.pool_id = %s AND i.selected
        ORDER BY t.qid{collate}, d.docid{collate}, j.rater_id
    """
    current: ItemVotes | None = None
    current_id: Any = None
    rows: list[tuple[Any, ...]] = []
    votes: list[tuple[Any, int | None]] = []
    for row in query_rows(sql, [pool.pk, pool.pk], copy=copy):  # the join's pool, the WHERE's
        if row[0] != current_id or current is None:
            if current is not None:
                yield current, rows
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

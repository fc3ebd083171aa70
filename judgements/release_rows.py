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
    (`exclusions.exclude_rater`). Every read of a release's rows joins through it."""
    from judgements.models import RaterExclusion

    return f"""LEFT JOIN {Judgement._meta.db_table} j
        ON j.item_id = i.id AND j.kind = 'human' AND NOT EXISTS (
            SELECT 1 FROM {RaterExclusion._meta.db_table} e
            WHERE e.pool_id = i.pool_id AND e.rater_id = j.rater_id AND e.restored_at IS NULL)"""


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
    rows: list[tuple[Any, ...]] = []
    for row in query_rows(sql, [pool.pk], copy=copy):
        item_id = row[0]
        if current is None or current.item_id != item_id:
            if current is not None:
                yield current, rows
            adjudicated: int | Literal["unrateable"] | None = None
            if row[4] is not None:
                adjudicated = "unrateable" if row[6] else row[5]
            current = ItemVotes(item_id, row[1], row[2], row[3], adjudicated, [])
            rows = []
        if row[7] is not None:
            current.votes.append((row[7], None if row[9] else row[8]))
            rows.append(row)
    if current is not None:
        yield current, rows


# The text of one judgement's line of judgements.jsonl, built by PostgreSQL with the same texts as
# `release_files.JudgementLines` (a test compares the two on every kind of value), except the parts that are
# the same for every judgement of an item, which the caller puts in place of \x01 (`{"consensus": STATE,
# "created_at": `), \x04 (`, "docid": DOCID, "facets": `) and \x05 (`, "qid": QID, "rater": `). Strings go
# through to_json (the escapes of json's encode_basestring), times through ISO_SQL, the rater's pseudonym
# comes from the table the caller passes. Values SQL cannot write exactly are left to Python, marked
# \x02<kind><text>\x03 (`release_files.SERVER_MARK`): `seconds` when round(x, 3) of the double is not
# decided by its shortest text (a tie in that text, or 1e9 and more), `facets` that are not an object of
# strings (json.dumps(sort_keys=True) of numbers and nested values is Python's own), a rater missing from
# the table.
# Below 1e6, unless x * 1000 is within 1e-6 of a half (the error of that product is under 1e-7), the
# rounding of the double x * 1000 to an integer n is the exact rounding Python's round(x, 3) makes, and the
# text Python writes is n / 1000 with its trailing zeros dropped (at least one decimal): made with
# integer-valued numerics. Anything else (NaN, infinities, 1e6 and more, near-halves) is left to Python.
SECONDS_SQL = """CASE
    WHEN j.seconds IS NULL OR j.seconds = 0 THEN '0.0'
    WHEN NOT (abs(j.seconds) < 1e6) OR abs(abs(j.seconds * 1000 - floor(j.seconds * 1000)) - 0.5) < 1e-6
        THEN E'\\x02s' || j.seconds::text || E'\\x03'
    WHEN round(j.seconds * 1000) = 0 THEN CASE WHEN j.seconds < 0 THEN '-0.0' ELSE '0.0' END
    ELSE trim_scale(round(j.seconds * 1000)::numeric * 0.001)::text
         || CASE WHEN mod(round(j.seconds * 1000)::bigint, 1000) = 0 THEN '.0' ELSE '' END
END"""
FACETS_SQL = """CASE
    WHEN j.facets IS NULL OR j.facets = '{}'::jsonb THEN '{}'
    WHEN jsonb_typeof(j.facets) = 'object'
         AND NOT jsonb_path_exists(j.facets, '$.* ? (@.type() != "string")')
        THEN (SELECT '{' || string_agg(to_json(k)::text || ': ' || v::text, ', ' ORDER BY k COLLATE "C")
                     || '}'
              FROM jsonb_each(j.facets) AS e(k, v))
    ELSE E'\\x02f' || j.facets::text || E'\\x03'
END"""
LINE_SQL = f"""concat(
    E'\\x01', coalesce('"' || {ISO_SQL.format(column="j.created_at")} || '"', 'null'),
    E'\\x04', {FACETS_SQL},
    ', "grade": ', coalesce((CASE WHEN j.unrateable THEN NULL ELSE j.grade END)::text, 'null'),
    ', "imported": ', CASE WHEN j.imported THEN 'true' ELSE 'false' END,
    ', "note": ', CASE WHEN j.note = '' OR j.note IS NULL THEN '""' ELSE to_json(j.note)::text END,
    E'\\x05', coalesce(p.name, E'\\x02r' || j.rater_id::text || E'\\x03'),
    ', "seconds": ', {SECONDS_SQL},
    ', "source": "human"',
    ', "state": ', CASE WHEN j.unrateable THEN '"unrateable"' ELSE '"graded"' END,
    ', "updated_at": ', coalesce('"' || {ISO_SQL.format(column="j.updated_at")} || '"', 'null'),
    E'}}\\x06')"""
# Between years 1000 and 9999 ISO_SQL's text sorts as the time does, so the latest text of an item is the
# text of its latest time; when an item has another time (FM drops the zero-padding), \x02 asks the caller
# to compare the texts in its lines, as the portable path does.
LATEST_SQL = f"""CASE
    WHEN min(j.updated_at) >= '1000-01-01T00:00:00Z' AND max(j.updated_at) < '10000-01-01T00:00:00Z'
        THEN {ISO_SQL.format(column="max(j.updated_at)")}
    WHEN count(j.updated_at) > 0 THEN E'\\x02'
END"""


def copy_csv_rows(sql: str, params: list[Any]) -> Any:
    """Yield the rows of a query of text columns through `COPY (query) TO STDOUT` in CSV with control
    characters as delimiter (\x1f) and quote (\x1e), read in blocks and split here: PostgreSQL streams
    while it still computes, and a row costs two splits instead of psycopg's parsing of each row. A NULL
    or empty value is None. The moment a value comes quoted (it held a newline, \x1e or \x1f, or was
    empty), the rest is read by the csv module, which knows the quoting (psycopg 3 only; close the
    generator before the transaction ends)."""
    import csv

    with connection.cursor() as cursor:
        copy = f"COPY ({sql}) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x1f', QUOTE E'\\x1e')"
        with cursor.cursor.copy(copy, params) as stream:
            blocks = (bytes(block) for block in stream)
            tail = b""
            for block in blocks:
                data = tail + block
                end = data.rfind(b"\n") + 1
                text, tail = data[:end].decode(), data[end:]
                if "\x1e" in text:
                    tail = data
                    break
                for line in text.split("\n")[:-1]:
                    yield [value or None for value in line.split("\x1f")]
            else:
                return

            def lines() -> Any:  # only after a quoted value: not the common case
                pending = tail
                for block in blocks:
                    pending += block
                    end = pending.rfind(b"\n") + 1
                    if end:
                        yield from (line + "\n" for line in pending[:end].decode().split("\n")[:-1])
                        pending = pending[end:]
                if pending:
                    yield pending.decode()

            for row in csv.reader(lines(), delimiter="\x1f", quotechar="\x1e", strict=True):
                yield [value or None for value in row]


def stream_item_texts(*, pool: Pool, rater: int | None, pseudonyms: dict[int, str]) -> Any:
    """PostgreSQL only: one row per selected item of the pool in qrels order,
    `(qid, docid, votes, latest, lines)`:

    - `votes`: the item's aggregation key, `required;adjudication;vote,vote,...` in rater order, a vote
      being its grade or `u` (unrateable), with a leading `*` for the vote of `rater` (rater:NAME);
    - `latest`: the greatest updated_at of its judgements as `iso` text (compared as text, like the
      portable path), or None;
    - `lines`: its judgements' lines of judgements.jsonl, each starting with \\x01 where its consensus goes
      (see LINE_SQL), or None.

    `pseudonyms` maps each rater id to the JSON text of their pseudonym. Close the generator before the
    transaction ends."""
    from pooling.models import Document, Topic

    sql = f"""
        SELECT t.qid COLLATE "C", d.docid COLLATE "C",
               i.required_judgements::text || ';'
                 || CASE WHEN a.id IS NULL THEN '' WHEN a.unrateable THEN 'u' ELSE a.grade::text END || ';'
                 || coalesce(string_agg(
                        CASE WHEN j.id IS NULL THEN NULL WHEN j.rater_id = %s THEN '*' ELSE '' END
                        || coalesce((CASE WHEN j.unrateable THEN NULL ELSE j.grade END)::text, 'u'),
                        ',' ORDER BY j.rater_id), ''),
               {LATEST_SQL},
               string_agg(CASE WHEN j.id IS NOT NULL THEN {LINE_SQL} END, '' ORDER BY j.rater_id)
        FROM {PoolItem._meta.db_table} i
        JOIN {Topic._meta.db_table} t ON t.id = i.topic_id
        JOIN {Document._meta.db_table} d ON d.id = i.document_id
        {current_judgements_join()}
        LEFT JOIN {Adjudication._meta.db_table} a ON a.item_id = i.id
        LEFT JOIN unnest(%s::bigint[], %s::text[]) AS p(rater_id, name) ON p.rater_id = j.rater_id
        WHERE i.pool_id = %s AND i.selected
        GROUP BY 1, 2, i.id, a.id, a.unrateable, a.grade
        ORDER BY 1, 2  -- the order of the grouping: one sort, of the narrow joined rows
    """
    ids = list(pseudonyms)
    with connection.cursor() as cursor:
        # Shortest exact texts of doubles, for what SECONDS_SQL leaves to Python; and no JIT: compiling
        # this query's expressions took longer than running it (seconds, for any size of pool).
        cursor.execute("SET LOCAL extra_float_digits = 1")
        cursor.execute("SET LOCAL jit = off")
    yield from copy_csv_rows(sql, [rater, ids, [pseudonyms[i] for i in ids], pool.pk])


def raters_of(*, pool: Pool) -> list[int]:
    """The ids of every rater with a judgement of a selected item of the pool."""
    return list(
        Judgement.objects.filter(item__pool=pool, item__selected=True)
        .values_list("rater_id", flat=True)
        .distinct()
        .order_by()
    )

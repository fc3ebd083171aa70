"""Rows read from PostgreSQL's `COPY (query) TO STDOUT` in text format, fast: the data taken from libpq
in chunks of whole rows (`copy_chunks`), split into strings without a parser per value (`text_rows`),
COPY's escapes undone (`copy_unescape`) and timestamps written as a release writes them (`iso_of_copy`).
A release reads its rows this way (`release_rows.stream_items(text=True)`)."""

from __future__ import annotations

from typing import Any

from django.db import connection

from pooling.pg_settings import local_settings


def text_rows(
    sql: str, params: dict[str, Any], *, settings: dict[str, str], times: tuple[int, ...], unless_empty: int
) -> Any:
    """The rows of `sql` from `COPY (sql) TO STDOUT` in text format, NULL as "", under `settings` (set
    for the COPY only), each a list of strings split at the tabs (a value holds no tab: COPY writes it as
    an escape), unescaped only when the row holds a backslash. The columns at `times` are timestamps,
    written as `iso` writes them (`iso_of_copy`, which wants TimeZone UTC and DateStyle ISO), in the rows
    whose column `unless_empty` is not empty. The rows come decoded a chunk at a time (`copy_chunks`)."""
    with (
        connection.cursor() as cursor,
        local_settings(cursor, settings),
        cursor.cursor.copy(f"COPY ({sql}) TO STDOUT WITH (NULL '')", params) as stream,
    ):
        for chunk in copy_chunks(stream):
            text = str(chunk, "utf-8")
            escaped = "\\" in text
            for line in text[:-1].split("\n"):
                values = line.split("\t")
                if escaped and "\\" in line:
                    values = [copy_unescape(value) for value in values]
                if values[unless_empty]:
                    for column in times:
                        time = values[column]
                        # six digits of a second, AD 1000 on: `2024-03-01 12:34:56.5+00` is
                        # `2024-03-01T12:34:56.500000Z` (inline: a call a time was a tenth of a release's CPU)
                        if len(time) == 29 and time[26] == "+" and time[19] == "." and time[0] != "0":
                            values[column] = f"{time[:10]}T{time[11:26]}Z"
                        else:
                            values[column] = iso_of_copy(time)
                yield values


#: Rows of a COPY joined into one chunk by `copy_chunks`.
COPY_CHUNK_ROWS = 2000


def copy_chunks(stream: Any, rows: int = COPY_CHUNK_ROWS) -> Any:
    """The data of a psycopg 3 `COPY ... TO STDOUT` (`stream`, inside its `with`) as bytes of up to `rows`
    whole rows each (every row ends with its newline), what iterating over `stream` gives joined, for a
    fraction of the CPU: a row libpq already holds is taken straight from it (`PGconn.get_copy_data`, not
    blocking), and psycopg's own `read` (which waits for the socket) is called only when libpq holds
    none. Reading and decoding a release's million rows one by one through psycopg's iterator cost about
    2.2 s of CPU; this, about 1 s.

    When libpq reports the end of the data, the COPY's final result is read here, its error raised as
    psycopg raises it, and the stream marked finished (psycopg==3.3, pinned, keeps that in `_finished`) so
    that leaving the `with` does not read again."""
    from psycopg import errors, pq

    pgconn = stream.connection.pgconn
    get = pgconn.get_copy_data
    batch: list[Any] = []
    append = batch.append
    while True:
        size, data = get(1)
        if size == 0:  # nothing whole buffered: wait as psycopg waits
            data = stream.read()
            size = len(data) or -2  # "" once psycopg has read the end (and the final result)
        if size > 0:
            append(data)
            if len(batch) >= rows:
                yield b"".join(batch)
                batch.clear()
            continue
        if size == -1:  # -1: the data ended; the final result follows
            results = []
            while (result := pgconn.get_result()) is not None:
                results.append(result)
            stream._finished = True
            failed = [result for result in results if result.status != pq.ExecStatus.COMMAND_OK]
            if failed:
                raise errors.error_from_result(failed[0], encoding=stream.connection.info.encoding)
        if batch:
            yield b"".join(batch)
        return


# COPY's text format writes these characters of a value as a backslash and a letter (and a backslash as two).
_COPY_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def copy_unescape(value: str) -> str:
    """A value of COPY's text format as it is stored (PostgreSQL writes no other escape to a client)."""
    if "\\" not in value:
        return value
    import re

    return re.sub(r"\\(.)", lambda m: _COPY_ESCAPES.get(m.group(1), m.group(1)), value, flags=re.DOTALL)


def iso_of_copy(text: str) -> str:
    """The text `release_values.ISO_SQL` writes (that of `release_values.iso`) of a timestamp, from
    PostgreSQL's own output of it in UTC with DateStyle ISO (`release_rows.COPY_SETTINGS`):
    `2024-03-01 12:34:56.5+00` is `2024-03-01T12:34:56.500000Z`.
    As to_char writes them: a year without leading zeros, a year BC without its era, infinity as ""
    (to_char's NULL). (`text_rows` writes the common case, six digits of a second from AD 1000 on, itself.)"""
    if not text or text.endswith("infinity"):
        return ""
    text = text.removesuffix(" BC")
    date, clock = text.split(" ")
    year, rest = date.split("-", 1)
    seconds, fraction = (clock.split("+")[0].split(".") + [""])[:2]
    return f"{int(year)}-{rest}T{seconds}.{fraction.ljust(6, '0')}Z"

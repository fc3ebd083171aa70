"""How a release reads its rows from PostgreSQL: `copy_chunks` gives the bytes psycopg's own COPY iterator
gives (whole rows, in order), raises the server's error as psycopg raises it and leaves the connection
usable; and a reader of the pool's items refuses rows that come out of qrels order instead of writing them."""

from __future__ import annotations

import contextlib

import psycopg
import pytest
from django.db import connection, transaction

from judgements import copy_text, release_rows
from tests.judgements.test_release_bytes import build_pool

ON_POSTGRESQL = pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's")

# Rows of every length, some longer than a libpq read buffer, some with characters COPY escapes.
ROWS_SQL = """SELECT g, repeat(chr(945 + g %% 20), (g * 7919) %% 3000), E'tab\\there\\nnewline',
    CASE WHEN g %% 1000 = 0 THEN repeat('x', 200000) END FROM generate_series(1, %(n)s) g"""


def with_copy(sql: str, params: dict, read) -> list:
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY ({sql}) TO STDOUT", params) as stream:
        return read(stream)


@ON_POSTGRESQL
@pytest.mark.django_db
@pytest.mark.parametrize("chunk_rows", [1, 7, copy_text.COPY_CHUNK_ROWS])
def test_copy_chunks_give_the_rows_psycopg_gives(chunk_rows):
    params = {"n": 12_000}
    expected = with_copy(ROWS_SQL, params, lambda stream: [bytes(block) for block in stream])
    chunks = with_copy(
        ROWS_SQL, params, lambda stream: [bytes(c) for c in copy_text.copy_chunks(stream, rows=chunk_rows)]
    )
    assert all(chunk.endswith(b"\n") for chunk in chunks)
    assert max(chunk.count(b"\n") for chunk in chunks) == chunk_rows
    assert b"".join(chunks) == b"".join(expected)
    assert len(expected) == 12_000
    with connection.cursor() as cursor:  # the COPY is over: the connection takes the next statement
        cursor.execute("SELECT 41 + 1")
        assert cursor.fetchone() == (42,)


@ON_POSTGRESQL
@pytest.mark.django_db
def test_copy_chunks_raise_the_servers_error_and_leave_the_connection_usable():
    failing = "SELECT CASE WHEN g < 30000 THEN g ELSE 1 / (g - g) END FROM generate_series(1, 40000) g"
    read: list[bytes] = []
    with pytest.raises(psycopg.errors.DivisionByZero), transaction.atomic():
        with_copy(failing, {}, lambda stream: read.extend(bytes(c) for c in copy_text.copy_chunks(stream)))
    assert b"".join(read).count(b"\n") < 30000  # the rows before the error, never a row after it
    with connection.cursor() as cursor:
        cursor.execute("SELECT 41 + 1")
        assert cursor.fetchone() == (42,)


@pytest.mark.django_db
@pytest.mark.parametrize("text", [True, False])
def test_items_out_of_qrels_order_are_refused(monkeypatch, text):
    pool, _ = build_pool()
    original = release_rows.items_sql

    def reversed_topics(**kwargs):
        sql = original(**kwargs)
        assert 'ORDER BY t.qid COLLATE "C"' in sql or "ORDER BY t.qid, d.docid" in sql
        return sql.replace('ORDER BY t.qid COLLATE "C"', 'ORDER BY t.qid COLLATE "C" DESC').replace(
            "ORDER BY t.qid, d.docid", "ORDER BY t.qid DESC, d.docid"
        )

    monkeypatch.setattr(release_rows, "items_sql", reversed_topics)
    with (
        pytest.raises(release_rows.OutOfOrder, match="out of qrels order"),
        transaction.atomic(),
        contextlib.closing(release_rows.stream_items(pool=pool, text=text)) as items,
    ):
        list(items)


@pytest.mark.django_db
@pytest.mark.parametrize("text", [True, False])
def test_items_in_qrels_order_pass_the_check(text):
    pool, _ = build_pool()
    with transaction.atomic(), contextlib.closing(release_rows.stream_items(pool=pool, text=text)) as items:
        keys = [(fields[1], fields[2]) if text else (fields.qid, fields.docid) for fields, _ in items]
    assert keys == sorted(keys) and len(keys) == len(set(keys)) > 3

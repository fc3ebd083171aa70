"""A release on PostgreSQL reads COPY's text rows and lets the server write each judgement's seconds: the
files are byte for byte those of the rows as the driver reads them (the path of every other database), on
values of every kind, and the server's seconds are Python's wherever it writes them."""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

import pytest
from django.db import connection
from django.db.backends.postgresql import psycopg_any

from judgements import copy_text
from judgements.copy_text import iso_of_copy
from judgements.release_rows import SECONDS_JSON, seconds_text
from judgements.release_values import ISO_SQL, SECONDS_JSON_SQL, SECONDS_RAW, seconds_json
from tests.judgements.test_release_bytes import FILES, SECONDS, build_pool, written

ON_POSTGRESQL = pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's")


def tricky_doubles() -> list[float]:
    """Doubles whose rounding to the millisecond is easy, a tie in their shortest text, exactly a tie,
    near a tie, near zero, huge, tiny, not finite; and random ones of several kinds (seeded)."""
    values = [*SECONDS, math.nan, math.inf, -math.inf, 0.0004999, -0.0005, 0.00050000001, 0.0015, 0.0025,
              2.5, 0.9995, 0.99949999, 1e11 + 0.0005, 999999999999.9995, 1e12 - 0.001, 5e-324, -5e-324,
              1e-5, 0.001, 1e15 + 0.5, 2.0**53, -123.4565, 1.0005, 1.00050001]  # fmt: skip
    rng = random.Random(20240601)
    for _ in range(20000):
        kind = rng.randrange(6)
        if kind == 0:
            values.append(rng.gammavariate(2.0, 12.0))
        elif kind == 1:
            values.append(round(rng.uniform(-1000, 1000), rng.randint(0, 6)))
        elif kind == 2:
            values.append(rng.randint(-(10**7), 10**7) / 10000)
        elif kind == 3:
            values.append(rng.randint(-(10**9), 10**9) / 2 ** rng.randint(0, 20))
        elif kind == 4:
            values.append(struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0])
        else:
            values.append(rng.randint(0, 10**7) / 1000 + rng.choice([0.0005, -0.0005, 0.0]))
    return values


@ON_POSTGRESQL
@pytest.mark.django_db
def test_it_writes_on_the_server_the_seconds_python_writes():
    values = tricky_doubles()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL extra_float_digits = 1")
        cursor.execute(
            f"SELECT j.seconds::text, {SECONDS_JSON_SQL} FROM unnest(%s::float8[]) WITH ORDINALITY"
            " AS j(seconds, n) ORDER BY n",
            [values],
        )
        rows = cursor.fetchall()
    decided = 0
    for value, (text, written_by_server) in zip(values, rows, strict=True):
        assert float(text) == value or math.isnan(value)  # the shortest exact text of the double
        assert written_by_server is not None  # NULL only for NULL
        if written_by_server.startswith(SECONDS_RAW):  # left to Python: the double's own text
            assert written_by_server == SECONDS_RAW + text, value
        else:
            decided += 1
            assert written_by_server == seconds_json(float.__repr__(value)), value
        # what a release writes, whichever side decided
        row = [""] * (SECONDS_JSON + 1)
        row[SECONDS_JSON] = written_by_server
        assert seconds_text(row) == seconds_json(float.__repr__(value)), value
    assert decided > 0.6 * len(values)  # all but near-ties, 1e6 and more, and those not finite


@ON_POSTGRESQL
@pytest.mark.parametrize("policy", ["majority", "rater:alice", "mean"])
@pytest.mark.django_db
def test_it_writes_from_copy_the_files_the_driver_rows_give(tmp_path: Path, monkeypatch, policy):
    pool, _raters = build_pool(exotic=True, required=1)
    (tmp_path / "copy").mkdir()
    (tmp_path / "driver").mkdir()
    from_copy, tally_copy = written(pool, tmp_path / "copy", policy=policy, explicit=True)
    monkeypatch.setattr(psycopg_any, "is_psycopg3", False)  # the rows as the driver reads them
    from_driver, tally_driver = written(pool, tmp_path / "driver", policy=policy, explicit=True)
    for name in FILES:
        assert from_copy[name] == from_driver[name], name
    assert tally_copy == tally_driver
    assert (
        b"NaN" in from_copy["judgements.jsonl"]
        and b'"999-01-02T03:04:05.000006Z"' in from_copy["judgements.jsonl"]
    )


@ON_POSTGRESQL
@pytest.mark.django_db
def test_a_release_inside_a_transaction_leaves_its_settings_as_they_were(tmp_path: Path):
    """The COPY's `extra_float_digits` and `jit` end with it, not with the caller's outer transaction (the
    test's own): the caller's values are back for its next queries."""
    pool, _raters = build_pool(exotic=True, required=1)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL extra_float_digits = 0")
        cursor.execute("SET LOCAL jit = on")
    written(pool, tmp_path, policy="majority", explicit=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('extra_float_digits'), current_setting('jit')")
        assert cursor.fetchone() == ("0", "on")
        cursor.execute("SELECT (0.1::float8 + 0.2::float8)::text")
        assert cursor.fetchone() == ("0.3",)  # the caller's 15 digits, not the shortest exact text


@ON_POSTGRESQL
@pytest.mark.django_db
def test_it_writes_from_the_servers_text_of_a_time_what_to_char_writes():
    times = ["2024-03-01 12:34:56.123456+00", "2024-03-01 12:34:56.5+00", "2024-03-01 12:34:56+00",
             "2024-03-01 12:34:56.000001+00", "0999-01-02 03:04:05.000006+00", "0001-01-01 00:00:00+00",
             "10000-01-02 03:04:05.12345+00", "2024-03-01 00:00:00.123+00 BC", "0044-01-02 03:04:05+00 BC",
             "infinity", "-infinity", "2024-12-31 23:59:59.999999+05:30"]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL TimeZone = 'UTC'")
        cursor.execute("SET LOCAL DateStyle = 'ISO, MDY'")
        cursor.execute(
            f"SELECT t::text, {ISO_SQL.format(column='t')} FROM unnest(%s::timestamptz[]) WITH ORDINALITY"
            " AS u(t, n) ORDER BY n",
            [times],
        )
        rows = cursor.fetchall()
    for text, by_to_char in rows:
        assert iso_of_copy(text) == (by_to_char or ""), text
    # and as a release reads them: through `text_rows`, which writes the common case itself
    read = copy_text.text_rows(
        f"SELECT 'x', t, {ISO_SQL.format(column='t')} FROM unnest(%(times)s::timestamptz[]) WITH ORDINALITY"
        " AS u(t, n) ORDER BY n",
        {"times": times},
        settings={"TimeZone": "UTC", "DateStyle": "ISO, MDY"},
        times=(1,),
        unless_empty=0,
    )
    assert [row[1:] for row in read] == [[iso or "", iso or ""] for _, iso in rows]

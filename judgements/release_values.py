"""The exact text of each value a release writes: a timestamp as ISO 8601 UTC, a judgement's values as
`json.dumps` writes them, its seconds rounded to the millisecond. Where PostgreSQL writes the text itself
(`ISO_SQL`, `SECONDS_JSON_SQL`), the Python function beside it is the rule and the SQL its twin, compared
value by value in `test_release_texts`."""

from __future__ import annotations

from typing import Any


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


def seconds_json(text: str) -> str:
    """The JSON text of a judgement's seconds in a release, from the text of the double (`repr`, or
    PostgreSQL's shortest exact text; "" for NULL): rounded to the millisecond as `round(x, 3)` rounds
    (the exact binary value, ties to even), written as `json.dumps` writes a float; NULL, 0.0 and -0.0 are
    0.0."""
    return json_float(round(float(text or 0.0) or 0.0, 3))


# `seconds_json` of `j.seconds` written by PostgreSQL, for the doubles it writes exactly with a few
# operations on doubles: below 1e6 in magnitude, x * 1000 is within 1.2e-7 of the exact product, so unless
# that product is within 1e-6 of a half, n = round(x * 1000) is the exact rounding `round(x, 3)` makes (and
# the double nearest n / 1000 is its result), and n / 1000 has at most 9 significant digits, which `repr`
# writes back as they are (trailing zeros dropped, at least one decimal). NULL, for Python to decide, for
# NaN, infinities, 1e6 and more, a product near a half, and a negative x that rounds to -0.0.
# `test_release_texts` compares the two on doubles of every kind.
# The text is that of the double n / 1000 (+ 0.0 makes a -0 from a -0.0 a 0): its shortest exact text
# (extra_float_digits 1) is those digits, in fixed notation below 1e15, as `repr` writes them; all in
# doubles (a numeric there cost twice as much). For the others the server hands on the double's own
# shortest exact text behind SECONDS_RAW ("~"), for `seconds_text` to round in Python, and NULL for NULL:
# so the COPY carries one text of the seconds a row, not the double beside its JSON as well (about a
# tenth of a release's bytes were those doubles).
SECONDS_RAW = "~"
SECONDS_JSON_SQL = f"""CASE
    WHEN abs(j.seconds) < 1e6 AND abs(abs(j.seconds * 1000 - round(j.seconds * 1000)) - 0.5) > 1e-6
         AND NOT (j.seconds < 0 AND round(j.seconds * 1000) = 0)
    THEN (round(j.seconds * 1000) / 1000 + 0.0::float8)::text
         || CASE WHEN round(j.seconds * 1000) = round(j.seconds) * 1000 THEN '.0' ELSE '' END
    ELSE '{SECONDS_RAW}' || j.seconds::text
END"""


# On PostgreSQL a timestamp is formatted by the server exactly as `iso` formats it (UTC, microseconds;
# FM drops the zero-padding of years below 1000, as strftime's %Y does): parsing a million timestamps into
# datetimes only to format them again was the largest cost of a release. (The COPY of a release reads the
# server's own text of the timestamp instead, `copy_text.iso_of_copy`: two to_char calls a row were a
# quarter of the server's time.)
ISO_SQL = """to_char({column} AT TIME ZONE 'UTC', 'FMYYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""

"""The rater loop's statements on PostgreSQL: run as server-side prepared statements, planned once per
connection and size class of the judging tables."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from psycopg import _queries

# The pages of the judging tables the hot statements read, returned as their last column. A generic plan
# that PostgreSQL cached for a prepared statement is not re-planned as the tables grow (only when they are
# analyzed), and one made while they were nearly empty scans them whole: a campaign starts with no
# assignment and no judgement. So the statements' text carries the size class (log2 of the pages of each
# table) they were planned at: when a table has doubled, the next request uses a new text, planned afresh.
PAGES_SQL = """pg_relation_size('judgements_assignment') / 8192,
  pg_relation_size('judgements_judgement') / 8192"""
plan_class = {"size": "0 0"}

# psycopg converts a statement's placeholders for PostgreSQL once per text, but a text over 4,096 bytes on
# every execution (a guard against caching the long texts an ORM generates); the key press's statement
# (`submission._SUBMIT_AND_LEASE_SQL`) is about 5,900 characters, converted in 50-70 us each time. The hot
# statements are a few fixed texts: longer ones are cached too (psycopg keeps at most 128 conversions).
_queries.MAX_CACHED_STATEMENT_LENGTH = max(_queries.MAX_CACHED_STATEMENT_LENGTH, 8192)


def one_row(sql: str, params: dict[str, Any], *, sized: bool = True) -> tuple[Any, ...] | None:
    """Run one hot-path statement on PostgreSQL and return its first row (without the pages columns).

    psycopg 3 with server-side binding, prepared on this connection on first use (Django's own cursors
    bind on the client and never prepare): PostgreSQL plans it once per connection and size class (see
    `PAGES_SQL`) instead of on every request. Errors are Django's (IntegrityError …), as from its
    cursors. Inside an atomic block it runs in a savepoint, so that a failed statement leaves the
    transaction usable; in autocommit (a request of the API) the statement is its own transaction.
    `sized=False` for a statement without the pages columns (its plan does not depend on the growth of
    the judging tables)."""
    text = f"{sql}-- size class {plan_class['size']}\n" if sized else sql
    if connection.in_atomic_block:
        with transaction.atomic():
            row = _one_row_now(text, params)
    else:
        row = _one_row_now(text, params)
    if row is None or not sized:
        return row
    plan_class["size"] = f"{int(row[-2]).bit_length()} {int(row[-1]).bit_length()}"
    return tuple(row[:-2])


def _one_row_now(sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    import psycopg

    connection.ensure_connection()
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        row = cursor.fetchone()
    if connection.queries_logged:  # (the test client's CaptureQueriesContext, DEBUG)
        connection.queries_log.append({"sql": sql, "time": "0.000"})
    return row

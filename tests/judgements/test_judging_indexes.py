"""The judging tables' indexes. Every key press writes each index of the assignment table twice (the
lease's insert; its end's update, which changes the indexed `state`) and each of the judgement table once,
so neither keeps an index that only repeats the leading columns of another (migration 0009 dropped four;
`tests/test_indexes.py` checks every table for that); the reads by item and by rater are still served by an
index."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from judgements.models import Assignment, Judgement
from tests.conftest import require_services

pytestmark = pytest.mark.django_db

TABLES = [Assignment._meta.db_table, Judgement._meta.db_table]


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("column", ["item_id", "rater_id"])
def test_reads_by_item_and_by_rater_are_index_scans(table, column):
    if connection.vendor != "postgresql":
        require_services()  # the plan is PostgreSQL's: fails under CI without it, else skips
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN SELECT id FROM {table} WHERE {column} = %s", [1])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index" in plan, plan

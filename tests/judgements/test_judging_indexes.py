"""The judging tables' indexes. Every key press writes each index of the assignment table twice (the
lease's insert; its end's update, which changes the indexed `state`) and each of the judgement table once,
so neither table keeps an index that only repeats the leading columns of another (migration 0009 dropped
four); the reads by item and by rater are still served by an index."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

from judgements.models import Assignment, Judgement
from tests.conftest import require_services

pytestmark = pytest.mark.django_db

TABLES = [Assignment._meta.db_table, Judgement._meta.db_table]


def _indexes(table: str) -> dict[str, Any]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    return {name: info for name, info in constraints.items() if info["index"]}


@pytest.mark.parametrize("table", TABLES)
def test_no_plain_index_repeats_the_leading_columns_of_another(table):
    indexes = _indexes(table)
    assert indexes  # (introspection found the table's indexes)
    repeated = [
        (name, other)
        for name, info in indexes.items()
        if not info["unique"] and not info["primary_key"]
        for other, longer in indexes.items()
        if other != name
        and len(longer["columns"]) > len(info["columns"])
        and longer["columns"][: len(info["columns"])] == info["columns"]
    ]
    assert repeated == []


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

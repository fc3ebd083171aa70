"""No table of the project keeps a plain index that only repeats the leading columns of another index: each
is an entry more on every write of a row and serves no read the longer one does not (the judging tables'
were dropped by judgements migration 0009; the collection's, rubric's, pool's and click tables' by
pooling 0021, judgements 0011 and online 0005)."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

from tests.conftest import require_services

pytestmark = pytest.mark.django_db

APPS = ["pooling", "judgements", "evaluation", "online"]
TABLES = sorted(
    model._meta.db_table
    for app in APPS
    for model in apps.get_app_config(app).get_models()
    if not model._meta.proxy and model._meta.managed
)
# Not the many-to-many tables Django makes (managers, a judging's raters: a few rows each, rarely written),
# whose indexes are Django's to keep.


#: Plain (not unique) b-tree indexes whose columns lead another b-tree index of the same table that covers
#: every row (not partial); expression indexes aside.
REPEATS_SQL = """
SELECT a.indexrelid::regclass::text, b.indexrelid::regclass::text
FROM pg_index a
JOIN pg_index b ON b.indrelid = a.indrelid AND b.indexrelid <> a.indexrelid
JOIN pg_class ai ON ai.oid = a.indexrelid
JOIN pg_class bi ON bi.oid = b.indexrelid
JOIN pg_am am ON am.oid = ai.relam AND am.oid = bi.relam AND am.amname = 'btree'
WHERE a.indrelid = %s::regclass
  AND NOT a.indisunique AND a.indexprs IS NULL AND b.indexprs IS NULL AND b.indpred IS NULL
  AND a.indnkeyatts < b.indnkeyatts
  AND (b.indkey::int2[])[0:a.indnkeyatts - 1] = (a.indkey::int2[])[0:a.indnkeyatts - 1]
"""


def test_every_table_of_the_apps_is_checked():
    assert "pooling_document" in TABLES and "online_interleavedimpression" in TABLES
    assert "pooling_provenance" in TABLES and "judgements_assignment" in TABLES


@pytest.mark.parametrize("table", TABLES)
def test_no_plain_index_repeats_the_leading_columns_of_another(table):
    if connection.vendor != "postgresql":
        require_services()  # the catalogue read is PostgreSQL's: fails under CI without it, else skips
    with connection.cursor() as cursor:
        cursor.execute(REPEATS_SQL, [table])
        repeated = cursor.fetchall()
    assert repeated == []


def test_the_check_finds_a_repeated_index():
    if connection.vendor != "postgresql":
        require_services()
    with connection.cursor() as cursor:
        cursor.execute("CREATE INDEX test_repeat ON pooling_document (collection_id)")
        cursor.execute(REPEATS_SQL, ["pooling_document"])
        assert cursor.fetchall() == [("test_repeat", "document_unique_docid")]

"""Run rows lose their surrogate `id`: their key is (run, topic, rank), a composite primary key.

Nothing looked rows up by id, and the column cost the importer 12 of 62 bytes of every COPY row (and, as a
sequence default, most of the COPY's time). On PostgreSQL the column is dropped from the partitioned table
(its sequence with it); the DEFAULT partition keeps its unique (run, topic, rank) constraint, and imported
runs' partitions are unique by construction (0008). On SQLite the table is rebuilt with the new primary key.
"""

from django.db import migrations, models

SQLITE = [
    'CREATE TABLE "pooling_runrow_new" ("rank" integer unsigned NOT NULL CHECK ("rank" >= 0), '
    '"score" real NOT NULL, "document_id" bigint NOT NULL, "run_id" bigint NOT NULL, '
    '"topic_id" bigint NOT NULL, PRIMARY KEY ("run_id", "topic_id", "rank"))',
    'INSERT INTO "pooling_runrow_new" ("rank", "score", "document_id", "run_id", "topic_id") '
    'SELECT "rank", "score", "document_id", "run_id", "topic_id" FROM "pooling_runrow"',
    'DROP TABLE "pooling_runrow"',
    'ALTER TABLE "pooling_runrow_new" RENAME TO "pooling_runrow"',
]
SQLITE_BACK = [
    'CREATE TABLE "pooling_runrow_old" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT, '
    '"rank" integer unsigned NOT NULL CHECK ("rank" >= 0), "score" real NOT NULL, '
    '"document_id" bigint NOT NULL, "run_id" bigint NOT NULL, "topic_id" bigint NOT NULL)',
    'INSERT INTO "pooling_runrow_old" ("rank", "score", "document_id", "run_id", "topic_id") '
    'SELECT "rank", "score", "document_id", "run_id", "topic_id" FROM "pooling_runrow"',
    'DROP TABLE "pooling_runrow"',
    'ALTER TABLE "pooling_runrow_old" RENAME TO "pooling_runrow"',
    'CREATE UNIQUE INDEX "runrow_unique_rank" ON "pooling_runrow" ("run_id", "topic_id", "rank")',
]
POSTGRES = ["ALTER TABLE pooling_runrow DROP COLUMN id"]
POSTGRES_BACK = [
    "CREATE SEQUENCE pooling_runrow_row_id_seq MAXVALUE 4294967295",
    "ALTER TABLE pooling_runrow ADD COLUMN id bigint NOT NULL DEFAULT nextval('pooling_runrow_row_id_seq')",
    "ALTER SEQUENCE pooling_runrow_row_id_seq OWNED BY pooling_runrow.id",
]


def _run(schema_editor, postgres: list[str], sqlite: list[str]) -> None:
    vendor = schema_editor.connection.vendor
    for statement in postgres if vendor == "postgresql" else sqlite if vendor == "sqlite" else []:
        schema_editor.execute(statement, params=None)


def forward(apps, schema_editor):
    _run(schema_editor, POSTGRES, SQLITE)


def backward(apps, schema_editor):
    _run(schema_editor, POSTGRES_BACK, SQLITE_BACK)


class Migration(migrations.Migration):
    dependencies = [("pooling", "0008_runrow_partitioned_by_run")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forward, backward)],
            state_operations=[
                migrations.RemoveConstraint(model_name="runrow", name="runrow_unique_rank"),
                migrations.RemoveField(model_name="runrow", name="id"),
                migrations.AddField(
                    model_name="runrow",
                    name="pk",
                    field=models.CompositePrimaryKey(
                        "run", "topic", "rank", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
            ],
        )
    ]

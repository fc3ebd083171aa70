"""Operations that the project's migrations share."""

from __future__ import annotations

from django.db import migrations, models
from django.db.migrations.operations.base import Operation


def drop_key_indexes(app_label: str, keys: list[tuple[str, str, models.ForeignKey, str]]) -> Operation:
    """Foreign keys lose the single-column index Django made for them, where another index (a unique key)
    leads with the same column and serves every read by it. `keys`: (model, field, the field as it is now,
    with db_index=False, the index's name).

    Only the indexes are dropped (`DROP INDEX`, reversible): Django's own AlterField would also drop and
    re-add the foreign key constraint, re-checking every row under a lock (on SQLite, copy the table), for no
    change of the constraint."""
    return migrations.SeparateDatabaseAndState(
        state_operations=[
            migrations.AlterField(model_name=model, name=name, field=field) for model, name, field, _ in keys
        ],
        database_operations=[
            migrations.RunSQL(
                f'DROP INDEX IF EXISTS "{index}"',
                reverse_sql=f'CREATE INDEX IF NOT EXISTS "{index}" ON "{app_label}_{model}" ("{name}_id")',
            )
            for model, name, _, index in keys
        ],
    )

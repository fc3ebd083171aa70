"""Provenance loses its index on `run`: the (item, run) key is its only index.

Every read reaches provenance from a pool's items, by the key; a pool build paid an index entry per row for
the one lookup by run alone, deleting a run, which now scans the table instead.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("pooling", "0017_provenance_key_is_item_run"),
    ]

    operations = [
        migrations.AlterField(
            model_name="provenance",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="pooling.run",
            ),
        ),
    ]

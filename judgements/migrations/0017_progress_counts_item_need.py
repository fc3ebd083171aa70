"""The progress tallies count an item for its need (`pooling.models.NEED`, the column `PoolItem.need`): a
gold item needs a judgement from every rater of its pool, so that judging it moves the bars as judging any
other item does. The trigger functions are 0015's with `need` where they read `required_judgements`; then
the gold items there are get their pool's raters as `gold_need` (`judgements.membership.count_gold_need`,
written again here: migrations are history), which the new triggers add to the tallies."""

import importlib

from django.db import migrations

tallies = importlib.import_module("judgements.migrations.0007_progress_tally")
leasable = importlib.import_module("judgements.migrations.0010_progress_tally_reads_leasable")
items = importlib.import_module("judgements.migrations.0015_progress_tally_items")

COUNTS = items.COUNTS.replace("required_judgements", "need")
ROW = leasable.ROW.replace("required_judgements", "need")
GOLD_NEED = """UPDATE pooling_poolitem SET gold_need = (
  SELECT COUNT(*) FROM judgements_judging_raters jr JOIN judgements_judging jg ON jg.id = jr.judging_id
  WHERE jg.pool_id = pooling_poolitem.pool_id)
WHERE gold"""


def count_gold_need(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(GOLD_NEED)


def no_gold_need(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("UPDATE pooling_poolitem SET gold_need = 0 WHERE gold_need <> 0")


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0016_release_numbers"),
        ("pooling", "0026_item_need"),
    ]

    operations = [
        migrations.RunPython(
            tallies.on_postgresql(leasable.triggers(COUNTS, ROW, items.tally)),
            tallies.on_postgresql(leasable.triggers(items.COUNTS, leasable.ROW, items.tally)),  # 0015's
        ),
        migrations.RunPython(count_gold_need, no_gold_need),
    ]

"""The progress tallies' triggers read the item's `leasable` column (pooling 0020) for `needing`, and their
row trigger's WHEN clause compares it, instead of each carrying its own copy of the column's expression:
the rule "this item may be leased to one more rater" has one home, `pooling.models.LEASABLE`, which the
database evaluates into the column. The functions are replaced (same names, same upserts as 0007 and
0008, which are imported: migrations are history); the counts do not change (an item counts only when
selected, and a selected item is leasable exactly when it needs a judgement)."""

import importlib

from django.db import migrations

tallies = importlib.import_module("judgements.migrations.0007_progress_tally")
row_update = importlib.import_module("judgements.migrations.0008_progress_tally_row_update")

COUNTS = """{t}.pool_id, {t}.topic_id, {sign}{t}.required_judgements::bigint,
  {sign}least({t}.num_judgements, {t}.required_judgements)::bigint,
  {sign}{t}.leasable::int::bigint
  FROM {table} {t} WHERE {t}.selected"""
ROW = (
    "{t}.pool_id, {t}.topic_id, {t}.selected, {t}.required_judgements, "
    "least({t}.num_judgements, {t}.required_judgements), {t}.leasable"
)


def triggers(counts, row, tally=tallies.tally):
    """Both functions and the row trigger, over `counts` (0007's COUNTS shape) and `row` (0008's ROW),
    each function's upsert made by `tally` (0007's; 0015 passes its own, with one count more)."""
    new = counts.format(t="n", sign="", table="new_items")
    old = counts.format(t="o", sign="-", table="old_items")
    new_row = counts.format(t="n", sign="", table="(SELECT NEW.*)")
    old_row = counts.format(t="o", sign="-", table="(SELECT OLD.*)")
    return f"""
CREATE OR REPLACE FUNCTION judgements_tally_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN {tally(new)}
  ELSIF TG_OP = 'UPDATE' THEN {tally(new, old)}
  ELSE {tally(old)}
  END IF;
  RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION judgements_tally_item_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {tally(new_row, old_row)}
  RETURN NULL;
END $$;
DROP TRIGGER judgements_tally_update ON pooling_poolitem;
CREATE TRIGGER judgements_tally_update AFTER UPDATE ON pooling_poolitem FOR EACH ROW
  WHEN (({row.format(t="OLD")}) IS DISTINCT FROM ({row.format(t="NEW")}))
  EXECUTE FUNCTION judgements_tally_item_update();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0009_keys_led_by_item_or_rater_without_own_index"),
        ("pooling", "0020_item_leasable_and_its_blind_order"),
    ]

    operations = [
        migrations.RunPython(
            tallies.on_postgresql(triggers(COUNTS, ROW)),
            tallies.on_postgresql(triggers(tallies.COUNTS, row_update.ROW)),
        )
    ]

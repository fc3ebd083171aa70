# The progress tallies' update trigger, per row and only when a row's counts change: migration 0007's
# statement-level trigger ran on every update of items, a rater's lease (active_leases + 1) included, with
# its transition tables and a plpgsql call each time; most leases change no count (the item still needs a
# judgement), and a key press's submit changes one item. The WHEN clause, evaluated without a call, lets
# through only the rows whose (pool, topic, selected, need, done, needing) differ; the function adds the
# new row's counts less the old row's, the same expressions and upsert as 0007 (imported from it, the
# migration being history), to its session's slot. Inserts and deletes, which come in bulk (a pool build,
# a pool deleted), keep 0007's statement-level triggers.

import importlib

from django.db import migrations

tallies = importlib.import_module("judgements.migrations.0007_progress_tally")

ROW = "{t}.pool_id, {t}.topic_id, {t}.selected, {t}.required_judgements, " \
    "least({t}.num_judgements, {t}.required_judgements), " \
    "({t}.gold OR {t}.num_judgements + {t}.active_leases < {t}.required_judgements)"
NEW = tallies.COUNTS.format(t="n", sign="", table="(SELECT NEW.*)")
OLD = tallies.COUNTS.format(t="o", sign="-", table="(SELECT OLD.*)")
FORWARD = f"""
DROP TRIGGER judgements_tally_update ON pooling_poolitem;
CREATE FUNCTION judgements_tally_item_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN {tallies.tally(NEW, OLD)}
  RETURN NULL;
END $$;
CREATE TRIGGER judgements_tally_update AFTER UPDATE ON pooling_poolitem FOR EACH ROW
  WHEN (({ROW.format(t="OLD")}) IS DISTINCT FROM ({ROW.format(t="NEW")}))
  EXECUTE FUNCTION judgements_tally_item_update();
"""
BACKWARD = """
DROP TRIGGER judgements_tally_update ON pooling_poolitem;
DROP FUNCTION judgements_tally_item_update();
CREATE TRIGGER judgements_tally_update AFTER UPDATE ON pooling_poolitem
  REFERENCING OLD TABLE AS old_items NEW TABLE AS new_items
  FOR EACH STATEMENT EXECUTE FUNCTION judgements_tally_items();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('judgements', '0007_progress_tally'),
    ]

    operations = [migrations.RunPython(tallies.on_postgresql(FORWARD), tallies.on_postgresql(BACKWARD))]

"""The progress tallies count a topic's selected items too (`items`): an adaptive pool's judgements
required are what its selected items need plus its plan for the items its strategy has yet to select
(`pooling.pool_reads.judgements_required`), so the tallied progress needs how many are selected. The
trigger functions of 0010 are made again by 0010's own `triggers`, with one count more (each selected
item adds 1) in the upsert; the existing tallies get their items counted into slot 0."""

import importlib

from django.db import migrations, models

tallies = importlib.import_module("judgements.migrations.0007_progress_tally")
leasable = importlib.import_module("judgements.migrations.0010_progress_tally_reads_leasable")

COUNTS = """{t}.pool_id, {t}.topic_id, {sign}{t}.required_judgements::bigint,
  {sign}least({t}.num_judgements, {t}.required_judgements)::bigint,
  {sign}{t}.leasable::int::bigint, {sign}1::bigint
  FROM {table} {t} WHERE {t}.selected"""


def tally(*parts):
    """0007's upsert, with `items`."""
    rows = " UNION ALL ".join(f"SELECT {part}" for part in parts)
    return f"""
    INSERT INTO judgements_progresstally AS t (pool_id, topic_id, slot, need, done, needing, items)
    SELECT pool_id, topic_id, pg_backend_pid() % 32, sum(need), sum(done), sum(needing), sum(items)
    FROM ({rows}) AS d (pool_id, topic_id, need, done, needing, items)
    GROUP BY pool_id, topic_id
    HAVING sum(need) <> 0 OR sum(done) <> 0 OR sum(needing) <> 0 OR sum(items) <> 0
    ORDER BY pool_id, topic_id
    ON CONFLICT (pool_id, topic_id, slot) DO UPDATE SET need = t.need + excluded.need,
      done = t.done + excluded.done, needing = t.needing + excluded.needing,
      items = t.items + excluded.items;"""


# 0010's functions and row trigger (whose WHEN clause already compares `selected`), with this upsert.
FORWARD = leasable.triggers(COUNTS, leasable.ROW, tally) + """
INSERT INTO judgements_progresstally AS t (pool_id, topic_id, slot, need, done, needing, items)
SELECT pool_id, topic_id, 0, 0, 0, 0, count(*) FROM pooling_poolitem WHERE selected
GROUP BY pool_id, topic_id
ON CONFLICT (pool_id, topic_id, slot) DO UPDATE SET items = t.items + excluded.items;
"""
# Back: 0010's functions and row trigger (whose WHEN clause 0015 leaves as it was: `selected` is in it).
BACKWARD = leasable.triggers(leasable.COUNTS, leasable.ROW)


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0014_judgement_authors_protected"),
    ]

    operations = [
        migrations.AddField(
            model_name="progresstally",
            name="items",
            field=models.BigIntegerField(default=0),
        ),
        migrations.RunPython(tallies.on_postgresql(FORWARD), tallies.on_postgresql(BACKWARD)),
    ]

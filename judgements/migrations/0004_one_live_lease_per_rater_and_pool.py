"""A rater holds at most one live lease per pool: assignments carry their item's pool, and a partial unique
index on (rater, pool) over active assignments refuses a second one. Before the index is made, any rater
holding several live leases in a pool keeps the most recent; the others expire (their items' lease
counters given back), as the sweep would have done."""

from collections import Counter

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F


def forward(apps, schema_editor):
    Assignment = apps.get_model("judgements", "Assignment")
    PoolItem = apps.get_model("pooling", "PoolItem")
    schema_editor.execute(
        "UPDATE judgements_assignment SET pool_id ="
        " (SELECT pi.pool_id FROM pooling_poolitem pi WHERE pi.id = judgements_assignment.item_id)"
    )
    seen: set[tuple[int, int]] = set()
    extra: list[tuple[int, int]] = []
    live = Assignment.objects.filter(state="active").order_by("rater_id", "pool_id", "-leased_at", "-id")
    for pk, rater_id, pool_id, item_id in live.values_list("pk", "rater_id", "pool_id", "item_id"):
        if (rater_id, pool_id) in seen:
            extra.append((pk, item_id))
        seen.add((rater_id, pool_id))
    if extra:
        Assignment.objects.filter(pk__in=[pk for pk, _ in extra]).update(state="expired")
        for item_id, count in Counter(item_id for _, item_id in extra).items():
            PoolItem.objects.filter(pk=item_id).update(active_leases=F("active_leases") - count)


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0003_assignment_rater_recent"),
        ("pooling", "0011_pool_instructions"),
    ]

    operations = [
        migrations.AddField(
            model_name="assignment",
            name="pool",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="pooling.pool"
            ),
        ),
        migrations.RunPython(forward, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="assignment",
            name="pool",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="pooling.pool"),
        ),
        migrations.AddConstraint(
            model_name="assignment",
            constraint=models.UniqueConstraint(
                condition=models.Q(("state", "active")), fields=("rater", "pool"), name="assignment_one_live_lease"
            ),
        ),
    ]

"""Pools remember which BLIND_ORDER_KEY drew their items' blind order (a fingerprint of it).

Pools that already have items were drawn under some key; the key configured when this migration runs is
the best knowledge of which, so they get its fingerprint (computed here as `pool_build.blind_order_id`
computes it, written out so that this migration does not change when that module does)."""

import hashlib
import hmac

from django.conf import settings
from django.db import migrations, models


def fingerprint_built_pools(apps, schema_editor):
    Pool = apps.get_model("pooling", "Pool")
    PoolItem = apps.get_model("pooling", "PoolItem")
    current = hmac.new(settings.BLIND_ORDER_KEY.encode(), b"labeling blind order", hashlib.sha256).hexdigest()[:16]
    with_items = PoolItem.objects.values("pool_id").distinct()
    Pool.objects.filter(pk__in=with_items).update(blind_order_id=current)


class Migration(migrations.Migration):
    dependencies = [("pooling", "0018_provenance_run_without_index")]

    operations = [
        migrations.AddField(
            model_name="pool",
            name="blind_order_id",
            field=models.CharField(blank=True, editable=False, max_length=16),
        ),
        migrations.RunPython(fingerprint_built_pools, migrations.RunPython.noop),
    ]

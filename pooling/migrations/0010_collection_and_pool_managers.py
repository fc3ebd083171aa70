"""Collections and pools get managers (their owners); admins (superusers) see everything.

Until now every member of the "pool managers" group (and every staff user) read and changed every pool.
So that nobody loses access on upgrade, each existing collection and pool is given, as its managers,
every user who had that global role: the members of the group and the staff users who are not superusers
(superusers see everything anyway). An admin then narrows each pool's managers on its page, the API or
the admin. Pools and collections created from now on are their creator's (and of whoever they add).
"""

from django.conf import settings
from django.db import migrations, models
from django.db.models import Q

MANAGERS_GROUP = "pool managers"  # pooling.permissions.MANAGERS_GROUP, as it was when this was written


def owned_by_every_manager(apps, schema_editor):
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    Collection = apps.get_model("pooling", "Collection")
    Pool = apps.get_model("pooling", "Pool")
    managers = list(
        User.objects.filter(Q(groups__name=MANAGERS_GROUP) | Q(is_staff=True, is_superuser=False))
        .distinct()
        .values_list("pk", flat=True)
    )
    if not managers:
        return
    for model, key in ((Collection, "collection_id"), (Pool, "pool_id")):
        through = model.managers.through
        ids = list(model.objects.values_list("pk", flat=True))
        through.objects.bulk_create(
            [through(**{key: pk, "user_id": user}) for pk in ids for user in managers], ignore_conflicts=True
        )


class Migration(migrations.Migration):
    dependencies = [
        ("pooling", "0009_runrow_key_is_run_topic_rank"),
        ("auth", "0012_alter_user_first_name_max_length"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="collection",
            name="managers",
            field=models.ManyToManyField(
                blank=True,
                help_text="Who may import into this collection, delete its runs and pool it (admins always may).",
                related_name="managed_collections",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="pool",
            name="managers",
            field=models.ManyToManyField(
                blank=True,
                help_text="Who may see this pool's judgements, scores and releases, and change it (admins may).",
                related_name="managed_pools",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.RunPython(owned_by_every_manager, migrations.RunPython.noop),
    ]

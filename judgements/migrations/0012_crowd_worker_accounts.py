"""Crowd workers' accounts are marked (`CrowdWorker`): a crowd import credits a row to its worker's
account only, never to a person's or a model judge's account named as the worker.

The accounts earlier imports made are marked too, so their workers keep them: an account is taken for a
crowd worker's only if it has exactly what such an import left — no usable password, never logged in, not
staff, in no group, no model judge, never a rater of a pool nor leased an item, and judgements, every one
of them imported. A person's account has at least one of these (a password or a login, a pool they were
added to, a lease); one that has none is left unmarked, and a later import makes its worker a new account.
"""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models
from django.db.models import Exists, OuterRef


def mark_earlier_workers(apps, schema_editor):
    users = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    judgement = apps.get_model("judgements", "Judgement")
    judge = apps.get_model("judgements", "Judge")
    judging = apps.get_model("judgements", "Judging")
    assignment = apps.get_model("judgements", "Assignment")
    crowd_worker = apps.get_model("judgements", "CrowdWorker")
    rater_of = judging.raters.through
    made = (
        users.objects.filter(password__startswith="!", last_login__isnull=True, is_staff=False)
        .filter(is_superuser=False, groups__isnull=True)
        .filter(Exists(judgement.objects.filter(rater=OuterRef("pk"))))
        .exclude(Exists(judgement.objects.filter(rater=OuterRef("pk"), imported=False)))
        .exclude(Exists(judgement.objects.exclude(kind="human").filter(rater=OuterRef("pk"))))
        .exclude(Exists(judge.objects.filter(user=OuterRef("pk"))))
        .exclude(Exists(rater_of.objects.filter(user=OuterRef("pk"))))
        .exclude(Exists(assignment.objects.filter(rater=OuterRef("pk"))))
    )
    crowd_worker.objects.bulk_create(
        crowd_worker(worker_id=username, user_id=pk) for pk, username in made.values_list("pk", "username")
    )


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0011_keys_led_by_a_unique_key_without_own_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="CrowdWorker",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("worker_id", models.CharField(max_length=150, unique=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="crowd_worker",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.RunPython(mark_earlier_workers, migrations.RunPython.noop),
    ]

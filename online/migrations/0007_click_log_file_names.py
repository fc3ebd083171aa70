# Server paths out of what clients read (pooling.formats.client_name is the rule since): a click log's
# source_file keeps its files' names only (it was their paths for a log imported from the command line).

import os

from django.db import migrations


def forward(apps, schema_editor):
    ClickLog = apps.get_model("online", "ClickLog")
    for log in ClickLog.objects.exclude(source_file="").only("source_file").iterator():
        names = ", ".join(os.path.basename(part) for part in log.source_file.split(", "))
        if names != log.source_file:
            ClickLog.objects.filter(pk=log.pk).update(source_file=names)


class Migration(migrations.Migration):
    dependencies = [("online", "0006_tracked_experiment_offline_judged_10")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]

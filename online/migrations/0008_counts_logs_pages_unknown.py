# One meaning of a click log's `pages` (`online.clicklogs`): the result pages whose query maps to a topic. A
# pre-aggregated counts log has no pages, so its `pages` is unknown (null); what it stored there before was
# its rows read, which it keeps under their own name, `rows`.

from django.db import migrations


def forward(apps, schema_editor):
    ClickLog = apps.get_model("online", "ClickLog")
    for log in ClickLog.objects.filter(format="counts").only("counts").iterator():
        counts = dict(log.counts or {})
        if counts.get("pages") is None:
            continue  # imported under the one meaning already
        rows = counts.pop("pages")
        updated = {"pages": None, "rows": counts.pop("rows", rows), **counts}
        ClickLog.objects.filter(pk=log.pk).update(counts=updated)


class Migration(migrations.Migration):
    dependencies = [("online", "0007_click_log_file_names")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]

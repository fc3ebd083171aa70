# Server paths out of what clients read (pooling.formats.client_name is the rule since): a run's
# source_file keeps the file's name only, and a click log's import job keeps where its files are in its
# upload (the folder, under MEDIA_ROOT, that `online.jobs.click_files` reads) instead of their absolute
# paths in `params` (which the API shows). Not reversible: the paths are not needed to read anything.

import os

from django.db import migrations


def forward(apps, schema_editor):
    Run = apps.get_model("pooling", "Run")
    for run in Run.objects.exclude(source_file="").only("source_file").iterator():
        name = os.path.basename(run.source_file)
        if name != run.source_file:
            Run.objects.filter(pk=run.pk).update(source_file=name)
    Job = apps.get_model("pooling", "Job")
    for job in Job.objects.filter(kind="click_log", params__has_key="paths").iterator():
        params = dict(job.params)
        paths = params.pop("paths") or []
        if paths and not job.upload:
            # uploads/clicks/<hex>/<index>-<name>: the folder is the last three parts of the file's folder
            job.upload = "/".join(os.path.dirname(paths[0]).split(os.sep)[-3:])
        job.params = params
        job.save(update_fields=["params", "upload"])


class Migration(migrations.Migration):
    dependencies = [("pooling", "0022_job_kinds_without_report")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]

"""A release is known to people by its number within its pool (1, 2, 3 ... in the order made), not by its
id, which counts the releases of every pool: the releases made before are numbered in the order they were
made (`created_at`, then id), per pool, and the result of the job that made each carries its number. The
unique (pool, number) leads with the pool, so the pool's own index goes."""

from typing import Any

from django.db import migrations, models


def number_releases(apps: Any, schema_editor: Any) -> None:
    Release = apps.get_model("judgements", "Release")
    numbered, pool, number = [], None, 0
    for release in Release.objects.order_by("pool_id", "created_at", "id").only("id", "pool_id"):
        number = number + 1 if release.pool_id == pool else 1
        pool = release.pool_id
        release.number = number
        numbered.append(release)
    Release.objects.bulk_update(numbered, ["number"], batch_size=500)
    # The job that made a release names it on its page by the number its result carries.
    Job = apps.get_model("pooling", "Job")
    numbers = {release.pk: release.number for release in numbered}
    jobs = []
    for job in Job.objects.filter(kind="release", result__has_key="release").only("id", "result"):
        if job.result.get("release") in numbers:
            job.result["number"] = numbers[job.result["release"]]
            jobs.append(job)
    Job.objects.bulk_update(jobs, ["result"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("judgements", "0015_progress_tally_items"),
        ("pooling", "0024_job_count_order"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="number",
            field=models.PositiveIntegerField(null=True),
        ),
        migrations.RunPython(number_releases, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="release",
            name="number",
            field=models.PositiveIntegerField(help_text="1, 2, 3 ... within the pool, in the order made"),
        ),
        migrations.AddConstraint(
            model_name="release",
            constraint=models.UniqueConstraint(fields=("pool", "number"), name="one_release_number_per_pool"),
        ),
        migrations.AlterField(
            model_name="release",
            name="pool",
            field=models.ForeignKey(
                db_index=False,
                on_delete=models.deletion.PROTECT,
                related_name="releases",
                to="pooling.pool",
            ),
        ),
    ]

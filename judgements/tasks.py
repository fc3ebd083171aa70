"""Celery tasks of the judging app."""

from __future__ import annotations

from judgements import lease_ends, releases
from judgements.aggregation import DEFAULT_POLICY
from labeling.celery import shared_task
from pooling import jobs
from pooling.job_summary import JobSummary, RecordCounts
from pooling.models import Job, Pool


@shared_task
def sweep_expired_leases() -> int:
    """Periodic (beat, every minute): give the items of expired leases back to the pool."""
    return lease_ends.sweep_expired_leases()


@shared_task
def sweep_release_workdirs() -> int:
    """Periodic (beat, every minute): remove the work directories killed releases left behind."""
    return len(releases.remove_stale_release_workdirs())


@jobs.job_task
def create_release(job: Job) -> RecordCounts:
    """Write a qrels release for the pool named in the job (progress on the job row)."""
    pool = Pool.objects.get(pk=job.params["pool"])
    release = releases.create_release(
        pool=pool,
        policy=job.params.get("policy", DEFAULT_POLICY),
        unjudged=job.params.get("unjudged", "explicit"),
        judge=job.params.get("judge"),
        by=job.created_by,
        progress=jobs.job_progress(job),
    )
    job.report(result={"release": release.pk, "number": release.number})
    return RecordCounts(counts=release.counts, warnings=release.warnings)


@jobs.job_task
def import_crowd_labels(job: Job) -> JobSummary:
    """Import the crowd file of the job into its pool (`crowd_import.import_job_file`)."""
    from judgements import crowd_import

    return crowd_import.import_job_file(job, progress=jobs.job_progress(job, scale=0.99))

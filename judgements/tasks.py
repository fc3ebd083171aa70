"""Celery tasks of the judging app."""

from __future__ import annotations

from celery import shared_task

from judgements import leasing, releases


@shared_task
def sweep_expired_leases() -> int:
    """Periodic (beat, every minute): give the items of expired leases back to the pool."""
    return leasing.sweep_expired_leases()


@shared_task
def create_release(job_id: int) -> None:
    """Write a qrels release for the pool named in job `job_id` (progress on the job row)."""
    from pooling.models import Job, Pool
    from pooling.tasks import run_job

    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return

    def work(job: Job) -> dict:
        pool = Pool.objects.get(pk=job.params["pool"])
        release = releases.create_release(
            pool=pool,
            policy=job.params.get("policy", "majority"),
            unjudged=job.params.get("unjudged", "explicit"),
            by=job.created_by,
            progress=lambda fraction, message: job.report(progress=fraction, message=message),
        )
        job.report(result={"release": release.pk})
        return release.counts

    run_job(job, work)

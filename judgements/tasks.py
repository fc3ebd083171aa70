"""Celery tasks of the judging app."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judgements import lease_ends, releases
from labeling.celery import shared_task


@shared_task
def sweep_expired_leases() -> int:
    """Periodic (beat, every minute): give the items of expired leases back to the pool."""
    return lease_ends.sweep_expired_leases()


@dataclass
class ReleaseSummary:
    """What a release job records: the release's counts, and what it found (`releases.create_release`)."""

    counts: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.counts)


@shared_task
def sweep_release_workdirs() -> int:
    """Periodic (beat, every minute): remove the work directories killed releases left behind."""
    return len(releases.remove_stale_release_workdirs())


@shared_task(bind=True)
def create_release(self: Any, job_id: int) -> None:
    """Write a qrels release for the pool named in job `job_id` (progress on the job row)."""
    from pooling import jobs
    from pooling.models import Job, Pool

    def work(job: Job) -> ReleaseSummary:
        pool = Pool.objects.get(pk=job.params["pool"])
        release = releases.create_release(
            pool=pool,
            policy=job.params.get("policy", "majority"),
            unjudged=job.params.get("unjudged", "explicit"),
            judge=job.params.get("judge"),
            by=job.created_by,
            progress=lambda fraction, message: job.report(progress=fraction, message=message),
        )
        job.report(result={"release": release.pk})
        return ReleaseSummary(counts=release.counts, warnings=release.warnings)

    jobs.run_job(job_id, work, heartbeat=not self.request.is_eager)


@shared_task(bind=True)
def import_crowd_labels(self: Any, job_id: int) -> None:
    """Import the crowd file of job `job_id` into its pool (`crowd_import.import_job_file`)."""
    from judgements import crowd_import
    from pooling import jobs
    from pooling.models import Job

    def work(job: Job) -> crowd_import.CrowdImportSummary:
        return crowd_import.import_job_file(
            job, progress=lambda fraction, message: job.report(progress=0.99 * fraction, message=message)
        )

    jobs.run_job(job_id, work, heartbeat=not self.request.is_eager)

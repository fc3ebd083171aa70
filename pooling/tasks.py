"""Celery tasks of the pooling app: take a job's id, call one service through `jobs.run_job`."""

from __future__ import annotations

from typing import Any

from labeling.celery import shared_task
from pooling import imports, jobs, pool_build
from pooling.models import Job, Pool, Run


def _progress(job: Job, *, scale: float = 1.0) -> Any:
    return lambda fraction, message: job.report(progress=fraction * scale, message=message)


def _import(job: Job) -> imports.ImportSummary:
    assert job.collection is not None
    return imports.import_file(
        kind=job.kind,
        collection=job.collection,
        path=job.upload.path,
        display_name=job.upload_name or job.upload.name,
        params=job.params,
        progress=_progress(job, scale=0.99),  # 1.0 once the job is recorded done
    )


def _build(job: Job) -> pool_build.BuildSummary:
    pool = Pool.objects.get(pk=job.params["pool"])
    return pool_build.build_pool(pool=pool, progress=_progress(job))


def _add_runs(job: Job) -> pool_build.BuildSummary:
    pool = Pool.objects.get(pk=job.params["pool"])
    runs = list(Run.objects.filter(pk__in=job.params["runs"], collection=pool.collection_id).order_by("pk"))
    return pool_build.add_runs(pool=pool, runs=runs, progress=_progress(job))


@shared_task(bind=True)
def import_file(self: Any, job_id: int) -> None:
    """Import the uploaded file of job `job_id` (documents, topics or a run)."""
    jobs.run_job(job_id, _import, heartbeat=not self.request.is_eager)


@shared_task(bind=True)
def build_pool(self: Any, job_id: int) -> None:
    """Build the pool named in job `job_id` (progress on the job row)."""
    jobs.run_job(job_id, _build, heartbeat=not self.request.is_eager)


@shared_task(bind=True)
def add_runs(self: Any, job_id: int) -> None:
    """Add the runs named in job `job_id` to its pool (only their new documents are pooled)."""
    jobs.run_job(job_id, _add_runs, heartbeat=not self.request.is_eager)


@shared_task
def sweep_stale_jobs() -> int:
    """Periodic (beat, every minute): fail the running jobs whose worker is gone (`jobs.sweep_stale_jobs`)."""
    return jobs.sweep_stale_jobs()

"""Celery tasks of the pooling app: each runs one service for a job (`jobs.job_task`)."""

from __future__ import annotations

from labeling.celery import shared_task
from pooling import imports, jobs, pool_build
from pooling.import_summary import ImportSummary
from pooling.models import Job, Pool, Run


@jobs.job_task
def import_file(job: Job) -> ImportSummary:
    """Import the uploaded file of the job (documents, topics or a run)."""
    assert job.collection is not None
    return imports.import_file(
        kind=job.kind,
        collection=job.collection,
        path=job.upload.path,
        display_name=job.upload_name or job.upload.name,
        params=job.params,
        progress=jobs.job_progress(job, scale=0.99),  # 1.0 once the job is recorded done
    )


@jobs.job_task
def build_pool(job: Job) -> pool_build.BuildSummary:
    """Build the pool named in the job (progress on the job row)."""
    pool = Pool.objects.get(pk=job.params["pool"])
    return pool_build.build_pool(pool=pool, progress=jobs.job_progress(job))


@jobs.job_task
def add_runs(job: Job) -> pool_build.BuildSummary:
    """Add the runs named in the job to its pool (only their new documents are pooled)."""
    pool = Pool.objects.get(pk=job.params["pool"])
    runs = list(Run.objects.filter(pk__in=job.params["runs"], collection=pool.collection_id).order_by("pk"))
    return pool_build.add_runs(pool=pool, runs=runs, progress=jobs.job_progress(job))


@shared_task
def sweep_stale_jobs() -> int:
    """Periodic (beat, every minute): fail the running jobs whose worker is gone (`jobs.sweep_stale_jobs`)."""
    return jobs.sweep_stale_jobs()

"""Celery tasks of the pooling app: take ids, load the row, call one service, record on the Job row."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from pooling import services
from pooling.models import Job, Pool


def run_job(job: Job, work: Any) -> None:
    """Run `work(job)` recording status, progress, counts and errors on the job row. Safe to re-run."""
    if job.status == Job.Status.DONE:
        return
    job.report(status=Job.Status.RUNNING, started_at=timezone.now(), errors=[], progress=0.0)
    try:
        summary = work(job)
    except services.Refused as exc:
        job.report(status=Job.Status.FAILED, errors=exc.errors, finished_at=timezone.now())
        return
    except Exception as exc:  # the status row must say what happened, whatever it was
        job.report(status=Job.Status.FAILED, errors=[f"internal error: {exc}"], finished_at=timezone.now())
        raise
    counts = summary.as_dict() if hasattr(summary, "as_dict") else dict(summary or {})
    job.report(
        status=Job.Status.DONE,
        progress=1.0,
        counts=counts,
        warnings=list(getattr(summary, "warnings", [])),
        finished_at=timezone.now(),
    )


def _import(job: Job) -> services.ImportSummary:
    assert job.collection is not None
    return services.import_file(
        kind=job.kind,
        collection=job.collection,
        path=job.upload.path,
        display_name=job.upload_name or job.upload.name,
        params=job.params,
        progress=lambda fraction, message: job.report(progress=fraction * 0.99, message=message),
    )


@shared_task
def import_file(job_id: int) -> None:
    """Import the uploaded file of job `job_id` (documents, topics or a run)."""
    job = Job.objects.filter(pk=job_id).first()
    if job is not None:
        run_job(job, _import)


@shared_task
def build_pool(job_id: int) -> None:
    """Build the pool named in job `job_id` (progress on the job row)."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return

    def work(job: Job) -> services.BuildSummary:
        pool = Pool.objects.get(pk=job.params["pool"])
        return services.build_pool(
            pool=pool, progress=lambda fraction, message: job.report(progress=fraction, message=message)
        )

    run_job(job, work)


# ----------------------------------------------------------------- enqueueing (API, pages, admin)


def active_build(pool: Pool) -> Job | None:
    """The queued or running build job of `pool`, if any (the newest)."""
    return (
        Job.objects.filter(
            kind=Job.Kind.BUILD_POOL, params__pool=pool.pk, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]
        )
        .order_by("-created_at", "-pk")
        .first()
    )


def latest_build(pool: Pool) -> Job | None:
    """The newest build job of `pool`, whatever its status."""
    return (
        Job.objects.filter(kind=Job.Kind.BUILD_POOL, params__pool=pool.pk)
        .order_by("-created_at", "-pk")
        .first()
    )


def start_build(*, pool: Pool, user: Any = None) -> Job:
    """Record a build job for `pool` and enqueue `tasks.build_pool` once the job row is committed.

    Every caller (API, page, admin action) goes through here, so the job row is what the UI polls. With no
    broker (the embedded setup) the task runs in process when the transaction commits.
    """
    with transaction.atomic():
        job = Job.objects.create(
            kind=Job.Kind.BUILD_POOL,
            collection_id=pool.collection_id,
            params={"pool": pool.pk, "name": pool.name},
            created_by=user if user is not None and user.is_authenticated else None,
            message="queued",
        )
        transaction.on_commit(lambda: build_pool.delay(job.pk))
    return job

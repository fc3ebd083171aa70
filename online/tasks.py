"""Celery tasks of the online app: each runs one service for a job (`pooling.jobs.job_task`)."""

from __future__ import annotations

from online import clicklogs, services
from online.jobs import click_files
from online.models import ClickLog, PropensityEstimate
from pooling import jobs
from pooling.job_summary import RecordCounts
from pooling.models import Job, Pool


@jobs.job_task
def import_click_log(job: Job) -> RecordCounts:
    """Import the click log of the job."""
    assert job.collection is not None
    p = job.params
    pool = Pool.objects.filter(pk=p.get("pool")).first() if p.get("pool") else None
    log = ClickLog.objects.filter(collection=job.collection, name=p["name"]).first()
    if log is None or job.attempts == 1:  # else a redelivered job whose first attempt committed
        log = clicklogs.import_click_log(
            collection=job.collection,
            name=p["name"],
            format=p["format"],
            paths=click_files(job),
            display_names=p["names"],
            pool=pool,
            object_field=p.get("object_field", ""),
            ordinal_base=int(p.get("ordinal_base", 1)),
            user=job.created_by,
            progress=jobs.job_progress(job, scale=0.99),
        )
    job.report(result={"log": log.pk})
    # the log's counts but its loggers (names, not a count: the log's page lists them)
    counts = {key: value for key, value in log.counts.items() if key != "loggers"}
    return RecordCounts(counts=counts, warnings=list(log.warnings))


@jobs.job_task
def estimate_propensity(job: Job) -> RecordCounts:
    """Estimate the propensities named in the job."""
    log = ClickLog.objects.get(pk=job.params["log"])
    estimate = services.estimate_propensity(
        log=log,
        method=job.params["method"],
        params=job.params.get("params") or {},
        name=job.params.get("name", ""),
        user=job.created_by,
    )
    job.report(result={"propensity": estimate.pk})
    return RecordCounts(counts={"positions": len(estimate.theta)}, warnings=list(estimate.warnings))


@jobs.job_task
def derive_click_labels(job: Job) -> RecordCounts:
    """Derive the click labels named in the job."""
    p = job.params
    log = ClickLog.objects.get(pk=p["log"])
    estimate = (
        PropensityEstimate.objects.filter(pk=p.get("propensity")).first() if p.get("propensity") else None
    )
    label_set = services.derive_click_labels(
        log=log,
        estimator=p["estimator"],
        propensity_estimate=estimate,
        tau=p.get("tau"),
        thresholds=p.get("thresholds"),
        name=p.get("name", ""),
        min_impressions=int(p.get("min_impressions", 1)),
        replicates=int(p.get("replicates", 0)),
        seed=int(p.get("seed", 0)),
        user=job.created_by,
        progress=jobs.job_progress(job, scale=0.99),
    )
    job.report(result={"label_set": label_set.pk})
    return RecordCounts(counts={"labels": label_set.labels.count()}, warnings=list(label_set.warnings))

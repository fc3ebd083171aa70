"""Celery tasks of the online app: take a job's id, call one service through `pooling.jobs.run_job`."""

from __future__ import annotations

from typing import Any

from labeling.celery import shared_task
from online import clicklogs, services
from online.models import ClickLog, PropensityEstimate
from pooling import jobs
from pooling.models import Job, Pool


def _progress(job: Job) -> Any:
    return lambda fraction, message: job.report(progress=fraction * 0.99, message=message)


def _import(job: Job) -> dict[str, Any]:
    assert job.collection is not None
    p = job.params
    pool = Pool.objects.filter(pk=p.get("pool")).first() if p.get("pool") else None
    existing = ClickLog.objects.filter(collection=job.collection, name=p["name"]).first()
    if existing is not None and job.attempts > 1:  # a redelivered job whose first attempt committed
        return {"log": existing.pk, **existing.counts}
    log = clicklogs.import_click_log(
        collection=job.collection,
        name=p["name"],
        format=p["format"],
        paths=p["paths"],
        display_names=p["names"],
        pool=pool,
        object_field=p.get("object_field", ""),
        ordinal_base=int(p.get("ordinal_base", 1)),
        user=job.created_by,
        progress=_progress(job),
    )
    job.report(result={"log": log.pk})
    return {"log": log.pk, **{k: v for k, v in log.counts.items() if k != "loggers"}}


def _propensity(job: Job) -> dict[str, Any]:
    log = ClickLog.objects.get(pk=job.params["log"])
    estimate = services.estimate_propensity(
        log=log,
        method=job.params["method"],
        params=job.params.get("params") or {},
        name=job.params.get("name", ""),
        user=job.created_by,
    )
    job.report(result={"propensity": estimate.pk})
    return {"propensity": estimate.pk}


def _labels(job: Job) -> dict[str, Any]:
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
        progress=_progress(job),
    )
    job.report(result={"label_set": label_set.pk})
    return {"label_set": label_set.pk, "labels": label_set.labels.count()}


@shared_task(bind=True)
def import_click_log(self: Any, job_id: int) -> None:
    """Import the click log of job `job_id`."""
    jobs.run_job(job_id, _import, heartbeat=not self.request.is_eager)


@shared_task(bind=True)
def estimate_propensity(self: Any, job_id: int) -> None:
    """Estimate the propensities named in job `job_id`."""
    jobs.run_job(job_id, _propensity, heartbeat=not self.request.is_eager)


@shared_task(bind=True)
def derive_click_labels(self: Any, job_id: int) -> None:
    """Derive the click labels named in job `job_id`."""
    jobs.run_job(job_id, _labels, heartbeat=not self.request.is_eager)

"""What the online app's jobs made, linked from their pages (`pooling.jobs.LINKS`, filled in
`OnlineConfig.ready`): the click log an import made, the propensity estimate, the click-label set, each
only for a viewer who may open its page, by that page's own rule (`ClickLog.objects.visible_to`, and
`visible_to` of what is derived from a log)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse

from online.models import ClickLabelSet, ClickLog, PropensityEstimate
from pooling import jobs
from pooling.models import Job


def _made(job: Job, key: str, visible: QuerySet[Any], page: str, label: str) -> list[dict[str, str]]:
    """A link to the record whose id the job's result keeps under `key`, if `visible` holds it."""
    made_id = (job.result or {}).get(key)
    made = visible.filter(pk=made_id).first() if made_id else None
    if made is None:
        return []
    return [{"label": f"{label} {made.name}", "url": reverse(page, args=[made.pk])}]


def click_log_links(job: Job, user: Any) -> list[dict[str, str]]:
    return _made(job, "log", ClickLog.objects.visible_to(user), "online:log", "click log")


def propensity_links(job: Job, user: Any) -> list[dict[str, str]]:
    estimates = PropensityEstimate.objects.visible_to(user)
    return _made(job, "propensity", estimates, "online:propensity", "propensity estimate")


def click_label_links(job: Job, user: Any) -> list[dict[str, str]]:
    return _made(job, "label_set", ClickLabelSet.objects.visible_to(user), "online:labels", "click labels")


def register() -> None:
    """Link what each of the online app's kinds of job made from the job's page."""
    jobs.add_links(Job.Kind.CLICK_LOG, click_log_links)
    jobs.add_links(Job.Kind.PROPENSITY, propensity_links)
    jobs.add_links(Job.Kind.CLICK_LABELS, click_label_links)

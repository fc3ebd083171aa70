"""Celery tasks of the judging app."""

from __future__ import annotations

from celery import shared_task

from judgements import services


@shared_task
def sweep_expired_leases() -> int:
    """Periodic (beat, every minute): give the items of expired leases back to the pool."""
    return services.sweep_expired_leases()

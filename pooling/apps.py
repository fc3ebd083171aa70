from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import pre_delete


def _drop_run_rows(sender: type, instance: Any, **kwargs: Any) -> None:
    """A run's rows go with it in one statement (its partition on PostgreSQL), before Django's cascade
    would delete them row by row."""
    from pooling import runrows

    runrows.drop_partition(instance.pk)


class PoolingConfig(AppConfig):
    name = "pooling"

    def ready(self) -> None:
        from pooling.models import Run

        pre_delete.connect(_drop_run_rows, sender=Run, dispatch_uid="pooling.drop_run_rows")

"""The project package. Its Celery app (`labeling.celery`) is imported by whatever sends or runs tasks
(the tasks modules, `pooling.jobs`, the worker's `-A labeling`), not here: a management command that
sends none starts without Celery."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "celery_app":  # the conventional name, kept for whoever looks for it
        from labeling.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

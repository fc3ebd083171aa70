"""Celery application. Tasks run in process unless CELERY_BROKER_URL is set (see settings).

Every tasks module takes `shared_task` from here, so that the app (configured from the settings) exists
before a task is sent: `labeling/__init__.py` no longer imports it for every process."""

from __future__ import annotations

import os

from celery import Celery, shared_task

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labeling.settings")

app = Celery("labeling")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

__all__ = ["app", "shared_task"]

"""The project package as an app: its system checks (`labeling.checks`) and tasks (`labeling.tasks`)."""

from __future__ import annotations

from django.apps import AppConfig


class LabelingConfig(AppConfig):
    name = "labeling"
    verbose_name = "Labeling platform"

    def ready(self) -> None:
        from labeling import checks  # noqa: F401  (registers the checks)

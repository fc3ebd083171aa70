"""Shared by the online app's commands: look-ups that fail as a CommandError (a collection and a pool are
looked up by `pooling.management.commands._base`, as every command does, whose `ServiceCommand` prints
refusals)."""

from __future__ import annotations

from django.core.management.base import CommandError

from online.experiment_models import InterleavingExperiment
from online.models import ClickLog


def get_click_log(pk: int) -> ClickLog:
    log = ClickLog.objects.filter(pk=pk).first()
    if log is None:
        raise CommandError(f"no click log {pk}")
    return log


def get_experiment(name: str) -> InterleavingExperiment:
    experiment = InterleavingExperiment.objects.select_related("run_a", "run_b").filter(name=name).first()
    if experiment is None:
        raise CommandError(f"no interleaving experiment named {name!r}")
    return experiment

"""Shared by the online app's commands: look-ups that fail as a CommandError, and refusals printed (a
collection and a pool are looked up by `pooling.management.commands._base`, as every command does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

from online.experiment_models import InterleavingExperiment
from online.models import ClickLog

T = TypeVar("T")


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


def refused(call: Callable[..., T], **kwargs: Any) -> T:
    """`call(**kwargs)`, a ValidationError turned into a CommandError listing each field's messages."""
    try:
        return call(**kwargs)
    except ValidationError as exc:
        lines = (
            [f"{field}: {message}" for field, messages in exc.message_dict.items() for message in messages]
            if hasattr(exc, "error_dict")
            else exc.messages
        )
        raise CommandError("\n".join(lines)) from None

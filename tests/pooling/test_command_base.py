"""The commands' one base (`pooling.management.commands._base.ServiceCommand`): a service's refusal ends a
command with a CommandError that says why, whatever the app; the progress bar is closed however the work
ends; and each job's task is made by `jobs.job_task` under the name the job enqueues."""

from __future__ import annotations

import importlib
import io
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from judgements.errors import JudgingError
from pooling import jobs
from pooling.errors import ImportFailed, PoolError
from pooling.management.commands._base import ServiceCommand
from pooling.terminal_progress import ProgressBar


def _command(refusal: Exception, **attributes: Any) -> ServiceCommand:
    class Command(ServiceCommand):
        def handle(self, *args: Any, **options: Any) -> None:
            raise refusal

    for name, value in attributes.items():
        setattr(Command, name, value)
    return Command(stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.parametrize(
    ("refusal", "message"),
    [
        (PoolError("depth must be at least 1"), "depth must be at least 1"),
        (JudgingError("no judge named 'j'"), "no judge named 'j'"),
        (ImportFailed(["runs/a.run:3: score 'x' is not a number"]),
         "nothing imported:\nruns/a.run:3: score 'x' is not a number"),
        (ValidationError({"name": ["taken"], "metric": ["unknown"]}), "name: taken\nmetric: unknown"),
        (ValidationError("the two runs are the same"), "the two runs are the same"),
    ],
)  # fmt: skip
def test_a_refusal_is_a_command_error_that_says_why(refusal, message):
    with pytest.raises(CommandError) as raised:
        call_command(_command(refusal))
    assert str(raised.value) == message
    assert raised.value.__suppress_context__  # no traceback of the refusal behind it


def test_a_command_may_name_what_else_its_service_refuses_with():
    with pytest.raises(CommandError, match="^power must be in"):
        call_command(_command(ValueError("power must be in (0, 1)"), refusals=(ValueError,)))
    with pytest.raises(ValueError):  # not refused by the others: a bug stays a traceback
        call_command(_command(ValueError("a bug")))


def test_plan_interleaving_refuses_a_delta_it_cannot_plan():
    with pytest.raises(CommandError, match="^delta must be between"):
        call_command("plan_interleaving", "--delta", "0", stdout=io.StringIO())


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_closed_however_the_work_ends():
    stream = _Terminal()
    with pytest.raises(RuntimeError), ProgressBar("build", stream=stream) as bar:
        bar(0.5)
        raise RuntimeError("killed")
    assert stream.getvalue().endswith("\n")


def test_every_kind_of_job_has_its_task_under_the_name_it_enqueues():
    from labeling.celery import app

    for name in set(jobs.TASKS.values()):
        module, _, function = name.rpartition(".")
        task = getattr(importlib.import_module(module), function)
        assert task.name == name and name in app.tasks
        assert task.__doc__, f"{name} says what it does"

"""Shared plumbing of the pooling commands: look-ups with clear errors and the summary line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from pooling.models import Collection


def get_collection(name: str) -> Collection:
    collection = Collection.objects.filter(name=name).first()
    if collection is None:
        raise CommandError(f"no collection named {name!r} (create it with create_collection)")
    return collection


def get_pool(name: str):  # noqa: ANN201 - returns a Pool
    from pooling.models import Pool

    pool = Pool.objects.select_related("collection").filter(name=name).first()
    if pool is None:
        raise CommandError(f"no pool named {name!r} (create it with create_pool)")
    return pool


def get_owner(username: str | None):  # noqa: ANN201 - returns a user or None
    """The user named by `--owner` (who will manage what the command creates), or None; a clear error
    for an unknown user or one without the manager role."""
    from django.contrib.auth import get_user_model

    from pooling.permissions import MANAGERS_GROUP, is_manager

    if not username:
        return None
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user named {username!r} (--owner)")
    if not is_manager(user):
        raise CommandError(f"{username!r} is not a pool manager (add them to the {MANAGERS_GROUP!r} group)")
    return user


OWNER_HELP = "the user who manages it (besides the admins); without it, only admins do"


def get_runs(collection: Collection, names: str) -> list:
    from pooling.errors import PoolError
    from pooling.models import Run

    wanted = [name.strip() for name in names.split(",") if name.strip()]
    if not wanted:
        raise CommandError("name at least one run")
    try:
        return Run.objects.named(collection, wanted)
    except PoolError as exc:
        raise CommandError(str(exc)) from None


class ImportCommand:
    """The shared end of every import command: run the import behind a progress bar, turn a refused
    import into a CommandError that names the file and line, print warnings and the summary line."""

    label = "import"

    def run_import(self, work: Any) -> None:
        from django.core.management.base import CommandError

        from pooling import errors as pooling_errors
        from pooling.terminal_progress import ProgressBar

        bar = ProgressBar(self.label)
        try:
            summary = work(bar)
        except pooling_errors.ImportFailed as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        finally:
            bar.close()
        for warning in summary.warnings:
            self.stderr.write(f"warning: {warning}")  # type: ignore[attr-defined]  # a mixin of BaseCommand
        self.stdout.write(summary.line())  # type: ignore[attr-defined]  # a mixin of BaseCommand

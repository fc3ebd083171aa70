"""Shared by every app's commands: their base (`ServiceCommand`: refusals as clear errors, warnings),
the import commands' base, and look-ups with clear errors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from pooling.errors import ImportFailed, Refused
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
    """The runs named, comma-separated (an unknown one is refused: `Run.objects.named`)."""
    from pooling.models import Run

    wanted = [name.strip() for name in names.split(",") if name.strip()]
    if not wanted:
        raise CommandError("name at least one run")
    return Run.objects.named(collection, wanted)


def output_file(option: str, value: str) -> IO[str]:
    """The file an option names, opened for writing text (LF line ends), or a clear error."""
    try:
        return open(value, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 - the caller closes it
    except OSError as exc:
        raise CommandError(f"{option} {value}: cannot write ({exc.strerror})") from None


def given(options: dict[str, Any], *names: str) -> dict[str, Any]:
    """The options `names`, for a service whose parameters they are named after (`**given(...)`)."""
    return {name: options[name] for name in names}


class ServiceCommand(BaseCommand):
    """The base of the project's commands. A refusal of the services they call (`Refused`, a model's
    `ValidationError`, and the command's own `refusals`) ends the command with a CommandError saying why,
    without a traceback, having changed nothing; a refused import says so first, naming file and line."""

    refusals: tuple[type[Exception], ...] = ()

    def execute(self, *args: Any, **options: Any) -> Any:
        refused: tuple[type[Exception], ...] = (Refused, *self.refusals)
        try:
            return super().execute(*args, **options)
        except ImportFailed as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        except refused as exc:
            raise CommandError(str(exc)) from None
        except ValidationError as exc:  # a model's checks: each field's messages
            lines = (
                [f"{field}: {text}" for field, texts in exc.message_dict.items() for text in texts]
                if hasattr(exc, "error_dict")
                else exc.messages
            )
            raise CommandError("\n".join(lines)) from None

    def warn(self, warnings: Iterable[str]) -> None:
        for warning in warnings:
            self.stderr.write(f"warning: {warning}")


class NamedCommand(ServiceCommand):
    """A command on one object named by its argument `name` (a pool, a collection): prints the line its
    `act` answers, having done it."""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def act(self, name: str, options: dict[str, Any]) -> str:
        raise NotImplementedError

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(self.act(options["name"], options))


class ImportCommand(ServiceCommand):
    """An import command: a file of one `kind` into a collection, read as a job reads an upload
    (`imports.import_file`, the command's options its parameters) behind a progress bar; then its warnings
    and summary line."""

    kind = ""
    formats: tuple[str, ...] = ()  # the --format choices, when the kind has several formats

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection")
        parser.add_argument("file")
        if self.formats:
            parser.add_argument(
                "--format",
                choices=self.formats,
                help="the file's format (default: guessed from its extension)",
            )

    def handle(self, *args: Any, **options: Any) -> None:
        from pooling import imports
        from pooling.terminal_progress import ProgressBar

        collection = get_collection(options["collection"])
        with ProgressBar(self.kind) as bar:
            summary = imports.import_file(
                kind=self.kind, collection=collection, path=options["file"], params=options, progress=bar
            )
        self.warn(summary.warnings)
        self.stdout.write(summary.line())

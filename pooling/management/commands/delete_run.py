from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from pooling import deletion
from pooling.management.commands._base import NamedCommand, get_collection
from pooling.models import Run


class Command(NamedCommand):
    help = "Delete a run of a collection, taking it out of every pool first (judged items stay)."

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("run")

    def act(self, name: str, options: dict[str, Any]) -> str:
        collection = get_collection(name)
        run = Run.objects.filter(collection=collection, name=options["run"]).first()
        if run is None:
            raise CommandError(f"no run named {options['run']!r} in collection {collection.name!r}")
        deletion.delete_run(run=run)
        return deletion.run_deleted(run)

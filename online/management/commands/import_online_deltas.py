from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError, CommandParser

from online import tracking
from pooling.management.commands._base import ServiceCommand, get_collection


class Command(ServiceCommand):
    help = "Online deltas of tracked experiments from a TSV file: name<TAB>online_metric<TAB>online_delta."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection")
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            updated = tracking.import_online_deltas(
                collection=get_collection(options["collection"]), path=options["file"]
            )
        except ValidationError as exc:  # each message names the file and line already (FILE:LINE: ...)
            raise CommandError("\n".join(exc.messages)) from None
        self.stdout.write(f"{updated} experiments updated")

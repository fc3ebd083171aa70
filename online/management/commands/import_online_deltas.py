from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from online import tracking
from pooling.management.commands._base import ServiceCommand, get_collection


class Command(ServiceCommand):
    help = "Online deltas of tracked experiments from a TSV file: name<TAB>online_metric<TAB>online_delta."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection")
        parser.add_argument("file")

    def handle(self, *args: Any, **options: Any) -> None:
        updated = tracking.import_online_deltas(
            collection=get_collection(options["collection"]), path=options["file"]
        )
        self.stdout.write(f"{updated} experiments updated")

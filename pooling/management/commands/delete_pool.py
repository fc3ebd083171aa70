from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from pooling import deletion
from pooling.management.commands._base import ServiceCommand, get_pool


class Command(ServiceCommand):
    help = (
        "Delete a pool nobody has judged, with its items (its runs stay in the collection). Refused, with "
        "the reason and nothing deleted, while a job of it is at work or once it holds judgements, gold "
        "labels, adjudications or releases."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["name"])
        items = deletion.delete_pool(pool=pool)
        self.stdout.write(deletion.pool_deleted(pool, items))

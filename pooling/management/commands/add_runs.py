from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from pooling import pool_build
from pooling.management.commands._base import ServiceCommand, get_pool, get_runs


class Command(ServiceCommand):
    help = "Add runs to a pool: only documents not already pooled are added; judgements stay."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("runs", help="comma-separated run names")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["name"])
        summary = pool_build.add_runs(pool=pool, runs=get_runs(pool.collection, options["runs"]))
        self.stdout.write(summary.line())

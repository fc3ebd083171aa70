from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from pooling import pool_build
from pooling.management.commands._base import ServiceCommand, get_pool
from pooling.terminal_progress import ProgressBar


class Command(ServiceCommand):
    help = "Build a pool from its runs (safe to re-run: existing items are kept)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["name"])
        with ProgressBar("build") as bar:
            summary = pool_build.build_pool(pool=pool, progress=bar)
        self.stdout.write(summary.line())
        self.warn(summary.warnings)

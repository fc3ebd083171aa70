from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pooling import errors as pooling_errors
from pooling import pool_build
from pooling.management.commands._base import get_pool
from pooling.terminal_progress import ProgressBar


class Command(BaseCommand):
    help = "Build a pool from its runs (safe to re-run: existing items are kept)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["name"])
        bar = ProgressBar("build")
        try:
            summary = pool_build.build_pool(pool=pool, progress=bar)
        except pooling_errors.PoolError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self.stdout.write(summary.line())

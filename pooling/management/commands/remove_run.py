from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from pooling import pool_build
from pooling.errors import PoolError
from pooling.management.commands._base import NamedCommand, get_pool, get_runs


class Command(NamedCommand):
    help = "Take runs out of a pool: the unjudged items only they contributed go; judged items stay."

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("runs", help="comma-separated names of runs of the pool")

    def act(self, name: str, options: dict[str, Any]) -> str:
        pool = get_pool(name)
        runs = get_runs(pool.collection, options["runs"])
        outside = [run.name for run in runs if not pool.pool_runs.filter(run=run).exists()]
        if outside:  # refused before any is taken out
            raise PoolError(f"not runs of pool {pool.name!r}: {', '.join(outside)}")
        return "\n".join(
            pool_build.run_removed(pool, run, pool_build.remove_run(pool=pool, run=run)) for run in runs
        )

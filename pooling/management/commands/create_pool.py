from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from pooling import pool_build, pool_reads
from pooling.management.commands._base import (
    OWNER_HELP,
    ServiceCommand,
    get_collection,
    get_owner,
    get_runs,
    given,
)
from pooling.models import Pool


class Command(ServiceCommand):
    help = "Configure a pool over a collection's runs; prints its size and cost before it is built."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--collection", required=True, help="the collection whose runs are pooled")
        parser.add_argument("--runs", required=True, help="comma-separated run names")
        parser.add_argument(
            "--depth", type=int, required=True, help="the top DEPTH documents of each run and topic"
        )
        parser.add_argument(
            "--strategy",
            choices=Pool.Strategy.values,
            default="depth",
            help="depth: every item to DEPTH; the others adaptive, under --budget (default: %(default)s)",
        )
        parser.add_argument("--budget", type=int, help="judgement budget for the adaptive strategies")
        parser.add_argument(
            "--seed", type=int, default=0, help="seed of the adaptive strategies (default: %(default)s)"
        )
        parser.add_argument(
            "--judgements-per-item",
            type=int,
            default=1,
            help="judgements each item needs (default: %(default)s)",
        )
        parser.add_argument(
            "--double-judge-fraction",
            type=float,
            default=None,
            help="the random fraction of items that get --judgements-per-item judgements, the others one "
            "(default: every item)",
        )
        parser.add_argument(
            "--relevance-level",
            type=int,
            default=1,
            help="the lowest grade that counts as relevant (default: %(default)s)",
        )
        parser.add_argument(
            "--price",
            dest="price_per_judgement",
            type=float,
            default=1.0,
            help="price per judgement (default: %(default)s)",
        )
        parser.add_argument("--topics", dest="segment", default="", help="only topics of this segment")
        parser.add_argument("--description", default="", help="for managers (raters never see it)")
        parser.add_argument("--instructions", default="", help="what the pool's raters are shown")
        parser.add_argument("--owner", help=OWNER_HELP)

    def handle(self, *args: Any, **options: Any) -> None:
        collection = get_collection(options["collection"])
        pool = pool_build.create_pool(
            created_by=get_owner(options["owner"]),
            collection=collection,
            runs=get_runs(collection, options["runs"]),
            **given(options, "name", "description", "instructions"),
            **pool_build.PoolOptions.given(options),
        )
        estimate = pool_reads.estimate_pool(pool=pool)
        self.stdout.write(
            f"created pool {pool.name}: {estimate['items']} items, {estimate['judgements']} judgements, "
            f"estimated cost {estimate['cost']:.2f} (build it with build_pool {pool.name})"
        )

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from online import experiments, interleaving
from pooling.management.commands._base import ServiceCommand, get_collection, given


class Command(ServiceCommand):
    help = "Create an interleaving experiment of two runs of a collection (team draft by default)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--collection", required=True)
        parser.add_argument("--a", required=True, dest="run_a", help="run A")
        parser.add_argument("--b", required=True, dest="run_b", help="run B")
        parser.add_argument("--method", choices=interleaving.METHODS, default="team_draft")
        parser.add_argument("--length", type=int, default=interleaving.DEFAULT_LENGTH)
        parser.add_argument("--no-identical-prefix", action="store_true", help="plain credit (team draft)")
        parser.add_argument("--clients", default="", help="comma-separated API accounts of the front end")

    def handle(self, *args: Any, **options: Any) -> None:
        experiment = experiments.create_experiment(  # it refuses a client no account has, on `clients`
            collection=get_collection(options["collection"]),
            identical_prefix=not options["no_identical_prefix"],
            clients=[name for name in options["clients"].split(",") if name],
            **given(options, "name", "run_a", "run_b", "method", "length"),
        )
        self.stdout.write(
            f"interleaving experiment {experiment.name}: {experiment.run_a.name} (A) and "
            f"{experiment.run_b.name} (B), {experiment.method}, {experiment.length} positions; "
            f"GET /api/interleaving/{experiment.name}/ranking/?qid=QID&user=SEARCHER"
        )

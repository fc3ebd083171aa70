from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from online import experiments
from online.management.commands._online import get_experiment


class Command(BaseCommand):
    help = "Compute an interleaving experiment's preference now (Δ_AB, user-clustered interval, sign test)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--resamples", type=int, default=2000)
        parser.add_argument("--json", action="store_true", help="print the whole result as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        experiment = get_experiment(options["name"])
        result = experiments.result_dict(
            experiments.compute_result(experiment=experiment, resamples=options["resamples"])
        )
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
            return
        delta = result["delta_ab"]
        interval = result["interval"]
        shown = "undefined (no clicked impression)" if delta is None else f"{delta:+.4f}"
        if interval:
            shown += f" ({result['level']:.0%} interval {interval[0]:+.4f} to {interval[1]:+.4f}, by user)"
        self.stdout.write(
            f"{experiment.name}: {result['impressions']} impressions, {result['users']} searchers; "
            f"A ({result['a']}) won {result['wins_a']}, B ({result['b']}) won {result['wins_b']}, "
            f"{result['ties']} ties, {result['no_clicks']} without a click"
        )
        self.stdout.write(
            f"Δ_AB {shown}; sign test p = {result['p_value']:.4f}; preferred: {result['preferred']}"
        )

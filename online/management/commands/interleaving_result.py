from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from online import experiments
from online.management.commands._online import get_experiment
from online.models import ClickLog
from pooling.cli_types import at_least
from pooling.management.commands._base import ServiceCommand, given


class Command(ServiceCommand):
    help = "Compute an interleaving experiment's preference now (Δ_AB, user-clustered interval, sign test)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--resamples", type=at_least(1), default=2000)
        parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
        parser.add_argument(
            "--click-log", default=None, help="an imported click log's name: credit its interleaved pages"
        )
        parser.add_argument("--team-a", default="A", help="the log's team name for run A (default A)")
        parser.add_argument("--team-b", default="B", help="the log's team name for run B (default B)")

    def handle(self, *args: Any, **options: Any) -> None:
        experiment = get_experiment(options["name"])
        if options["click_log"]:
            log = ClickLog.objects.filter(collection=experiment.collection, name=options["click_log"]).first()
            if log is None:
                raise CommandError(f"no click log {options['click_log']!r} in {experiment.collection.name!r}")
            stored = experiments.compute_result_from_click_log(
                experiment=experiment, log=log, **given(options, "team_a", "team_b", "resamples")
            )
        else:
            stored = experiments.compute_result(experiment=experiment, resamples=options["resamples"])
        result = experiments.result_dict(stored)
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2))
            return
        delta = result["delta_ab"]
        interval = result["interval"]
        shown = "undefined (no clicked impression)" if delta is None else f"{delta:+.4f}"
        if interval:
            shown += f" ({result['level']:.0%} interval {interval[0]:+.4f} to {interval[1]:+.4f}, by user)"
        self.stdout.write(
            f"{experiment.name} ({result['source']}): {result['impressions']} impressions, "
            f"{result['users']} searchers; "
            f"A ({result['a']}) won {result['wins_a']}, B ({result['b']}) won {result['wins_b']}, "
            f"{result['ties']} ties, {result['no_clicks']} without a click"
        )
        self.stdout.write(
            f"Δ_AB {shown}; sign test p = {result['p_value']:.4f}; preferred: {result['preferred']}"
        )

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from online import tracking
from online.experiment_models import TrackedExperiment
from pooling.management.commands._base import get_collection


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


class Command(BaseCommand):
    help = "How well offline deltas predicted online deltas: Pearson (Fisher), Spearman, Kendall τb, signs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--collection", default=None)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        experiments = TrackedExperiment.objects.select_related("collection")
        if options["collection"]:
            experiments = experiments.filter(collection=get_collection(options["collection"]))
        groups = tracking.correlation_groups(experiments)
        if options["json"]:
            self.stdout.write(json.dumps(groups, indent=2))
            return
        if not groups:
            self.stdout.write("no tracked experiment has an online delta yet")
        for group in groups:
            interval = group["pearson_interval"]
            shown = f" ({interval[0]:.4f} to {interval[1]:.4f})" if interval else ""
            self.stdout.write(
                f"{group['metric']} against {group['online_metric']}: {group['n']} experiments; Pearson "
                f"{_number(group['pearson'])}{shown}, Spearman {_number(group['spearman'])}, Kendall τb "
                f"{_number(group['kendall_tau_b'])}, signs agree "
                f"{group['signs_agree']}/{group['signs_compared']}"
            )
            self.stdout.write(f"  {group['verdict']}")

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from online import preference
from pooling.management.commands._base import ServiceCommand, given


class Command(ServiceCommand):
    help = "Impressions an interleaving experiment needs to detect a given Δ_AB (exact sign test)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--delta", type=float, required=True, help="the Δ_AB to detect, e.g. 0.02")
        parser.add_argument(
            "--tie-share",
            type=float,
            default=0.0,
            help="share of clicked impressions that tie (default 0: none; set it from your logs)",
        )
        parser.add_argument(
            "--click-rate",
            type=float,
            default=1.0,
            help="share of impressions with a click (default 1: every one, which plans too few for real "
            "traffic; set it from your logs)",
        )
        parser.add_argument(
            "--alpha", type=float, default=preference.ALPHA, help="the test's level (default: %(default)s)"
        )
        parser.add_argument(
            "--power", type=float, default=preference.POWER, help="the power to reach (default: %(default)s)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        plan = preference.plan_power(
            options["delta"], **given(options, "tie_share", "click_rate", "alpha", "power")
        )
        self.stdout.write(
            f"{plan.impressions:,} impressions ({plan.clicked:,} with a click, "
            f"{plan.decisive:,} won by A or B) "
            f"detect Δ_AB = {plan.delta_ab:+.4f} with power {plan.achieved_power:.3f} at α = {plan.alpha}"
        )

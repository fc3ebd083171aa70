"""manage.py estimate_propensity: θ for a click log (given, randtop, swap, em, harvest)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from online import jobs, propensity, services
from online.management.commands._online import get_click_log
from pooling.management.commands._base import ServiceCommand


class Command(ServiceCommand):
    help = "Estimate position propensities θ for a click log and store them (prints θ and warnings)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("log", type=int, help="click log id")
        parser.add_argument("--method", choices=jobs.METHODS, default="em")
        parser.add_argument("--theta", help="given θ, comma separated, position 1 first")
        parser.add_argument(
            "--n", type=int, help=f"RandTop-n: the randomised depth, 1 to {propensity.MAX_DEPTH}"
        )
        parser.add_argument("--name", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        log = get_click_log(options["log"])
        params: dict[str, Any] = {}
        if options["method"] == "given":
            try:
                params["theta"] = [float(v) for v in (options["theta"] or "").split(",") if v.strip()]
            except ValueError:
                raise CommandError("--theta: numbers, comma separated") from None
        if options["n"] is not None:
            params["n"] = _depth(options["n"])
        estimate = services.estimate_propensity(
            log=log, method=options["method"], params=params, name=options["name"]
        )
        theta = " ".join("—" if v is None else f"{v:.4f}" for v in estimate.theta)
        self.stdout.write(f"propensity {estimate.pk} ({estimate.method}): θ = {theta}")
        self.warn(estimate.warnings)


def _depth(n: int) -> int:
    """RandTop's --n: what the API's `n` takes (`propensity.depth_problem`, the one rule), or a CommandError
    with its message (for any method: a depth given with another is a mistake worth saying)."""
    if problem := propensity.depth_problem(n):
        raise CommandError(f"--{problem}")
    return n

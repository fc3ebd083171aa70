"""Derive click-based relevance (ips, ratio, coec) for a click log, map it to grades by thresholds, print the
agreement (κ, α) with the pool's human judgements, and with --release write a click-label release (separate
from every human release)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import transaction

from online import relevance, services
from online.management.commands._online import get_click_log
from online.models import PropensityEstimate
from pooling.management.commands._base import ServiceCommand, given


class Command(ServiceCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("log", type=int, help="click log id")
        parser.add_argument("--estimator", choices=relevance.ESTIMATORS, default="ips")
        parser.add_argument("--propensity", type=int, help="propensity estimate id (ips and ratio need one)")
        parser.add_argument("--tau", type=float, help="clip 1/θ at τ")
        parser.add_argument("--thresholds", default="", help='score:grade, ascending: "0.1:1,0.3:2,0.6:3"')
        parser.add_argument("--replicates", type=int, default=0, help="session-bootstrap replicates")
        parser.add_argument("--min-impressions", type=int, default=1)
        parser.add_argument("--release", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        log = get_click_log(options["log"])
        estimate = None
        if options["propensity"]:
            estimate = PropensityEstimate.objects.filter(pk=options["propensity"], log=log).first()
            if estimate is None:
                raise CommandError(f"no propensity estimate {options['propensity']} of this log")
        release = None
        with transaction.atomic():  # a refused --release keeps no label set: the command changes nothing
            label_set = services.derive_click_labels(
                log=log,
                propensity_estimate=estimate,
                **given(options, "estimator", "tau", "thresholds", "replicates", "min_impressions"),
            )
            if options["release"]:
                release = services.release_click_labels(label_set=label_set)
        self.stdout.write(f"click labels {label_set.pk}: {label_set.labels.count()} (topic, document) pairs")
        gate = label_set.agreement
        if gate:
            self.stdout.write(
                f"agreement with humans over {gate['n']} pairs: kappa {gate['kappa']}, "
                f"alpha (ordinal) {gate['alpha_ordinal']}"
            )
        self.warn(label_set.warnings)
        if release is not None:
            self.stdout.write(f"click-label release {release.pk}: {release.directory}")

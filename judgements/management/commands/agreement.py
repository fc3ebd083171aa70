from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgements import queries
from judgements.models import Judging
from pooling.cli_types import SEED, at_least
from pooling.models import Pool


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


class Command(BaseCommand):
    help = (
        "Inter-rater agreement of a pool: Cohen's kappa (overall, per pair, per topic), Fleiss, Krippendorff."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pool")
        parser.add_argument("--weights", choices=["none", "linear", "quadratic"], default="none")
        parser.add_argument("--format", choices=["text", "json"], default="text")
        parser.add_argument(
            "--bootstrap", type=at_least(1), default=1000, help="bootstrap resamples for the intervals"
        )
        parser.add_argument("--seed", type=SEED, default=0)

    def handle(self, *args: Any, **options: Any) -> None:
        pool = Pool.objects.filter(name=options["pool"]).first()
        if pool is None or not Judging.objects.filter(pool=pool).exists():
            raise CommandError(f"no judged pool named {options['pool']!r}")
        key = {"none": "unweighted", "linear": "linear", "quadratic": "quadratic"}[options["weights"]]
        summary = queries.pool_agreement(
            pool=pool,
            seed=options["seed"],
            n_bootstrap=options["bootstrap"],
            weights={"none": None, "linear": "linear", "quadratic": "quadratic"}[options["weights"]],
        )
        chosen = summary["cohen"][key]
        if options["format"] == "json":
            summary["cohen_kappa"] = chosen["kappa"]
            summary["weights"] = options["weights"]
            self.stdout.write(json.dumps(summary, indent=2, sort_keys=True))
            return
        self.stdout.write(
            f"pool {pool.name}: {summary['n_judgements']} judgements, {summary['n_pairs']} pairs"
        )
        self.stdout.write(
            f"cohen_kappa ({key})\t{_fmt(chosen['kappa'])}\t95% CI [{_fmt(chosen['ci_low'])}, "
            f"{_fmt(chosen['ci_high'])}]\t{chosen['band']}"
        )
        for name in ("unweighted", "linear", "quadratic", "binary"):
            self.stdout.write(f"  {name:<10}\t{_fmt(summary['cohen'][name]['kappa'])}")
        fleiss = summary["fleiss"]
        over = ""
        if fleiss["ratings_per_item"]:  # Fleiss needs the same number of ratings on every item
            over = f"\tover {fleiss['n_items']} items rated {fleiss['ratings_per_item']} times"
            if fleiss["n_items_dropped"]:
                over += f" ({fleiss['n_items_dropped']} rated another number of times left out)"
        self.stdout.write(f"fleiss_kappa\t{_fmt(fleiss['kappa'])}{over}")
        for level in ("nominal", "ordinal", "interval"):
            self.stdout.write(f"krippendorff_alpha ({level})\t{_fmt(summary['krippendorff'][level])}")
        self.stdout.write(f"rater pairs ({key} kappa, 95% CI of the {key} kappa):")
        for pair in summary["pairs"]:
            self.stdout.write(
                f"  {pair['rater_a']} × {pair['rater_b']}\t{_fmt(pair[key])}\t"
                f"[{_fmt(pair['ci_low'])}, {_fmt(pair['ci_high'])}] {pair['ci_weights']}\t"
                f"{pair['n_items']} items"
            )
        self.stdout.write(f"worst topics ({key} kappa, 95% CI of the {key} kappa):")
        for topic in summary["topics"][:10]:
            self.stdout.write(
                f"  {topic['topic']}\t{_fmt(topic[key])}\t"
                f"[{_fmt(topic['ci_low'])}, {_fmt(topic['ci_high'])}] {topic['ci_weights']}\t"
                f"{topic['n_items']} items"
            )
        self.stdout.write(summary["sentence"])

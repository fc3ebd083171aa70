"""Let a model judge label every item of its pool (replacing its former labels), then measure it against the
human labels and say whether it is admitted, and why. --gate-only re-measures."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from evaluation.judge_gate import measure_gate
from judgements.judges import run_judge
from judgements.models import Judge
from pooling.management.commands._base import ServiceCommand
from pooling.terminal_progress import ProgressBar


class Command(ServiceCommand):
    help = __doc__

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("pool")
        parser.add_argument("name")
        parser.add_argument("--gate-only", action="store_true", help="measure the gate on the current labels")
        parser.add_argument(
            "--format",
            choices=["text", "json"],
            default="text",
            help="the verdict as its one sentence, or every figure as JSON (default: %(default)s)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        judge = (
            Judge.objects.select_related("pool")
            .filter(pool__name=options["pool"], name=options["name"])
            .first()
        )
        if judge is None:
            raise CommandError(f"pool {options['pool']!r} has no judge {options['name']!r}")
        if not options["gate_only"]:
            with ProgressBar(f"judge {judge.name}") as bar:
                counts = run_judge(judge=judge, progress=bar)
            shown = {key: value for key, value in counts.items() if key != "errors"}
            self.stderr.write("labels: " + ", ".join(f"{key} {value}" for key, value in shown.items()))
            for error in counts.get("errors", []):
                self.stderr.write(f"  {error}")
        gate = measure_gate(judge=judge)
        if options["format"] == "json":
            self.stdout.write(json.dumps(gate, indent=2, sort_keys=True))
        else:
            self.stdout.write(gate["reason"])

"""``manage.py create_judge POOL NAME --learned | --program NAME | --command ARGV``: a model judge."""

from __future__ import annotations

import shlex
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from judgements.errors import JudgingError
from judgements.judges import create_judge
from pooling.management.commands._base import get_pool


class Command(BaseCommand):
    help = (
        "Create a model judge for a pool: learned (trained on the pool's human labels, cross-validated) or "
        "external (a program speaking JSON lines: one the server offers by --program, or any --command)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("pool")
        parser.add_argument("name")
        kind = parser.add_mutually_exclusive_group(required=True)
        kind.add_argument("--learned", action="store_true", help="a scikit-learn judge")
        kind.add_argument("--program", help="an external judge of EXTERNAL_JUDGES, by name")
        kind.add_argument("--command", help="an external judge's command line (split as a shell would)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--folds", type=int, default=5)
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds per answer")
        parser.add_argument("--retries", type=int, default=1)

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["pool"])
        try:
            judge = create_judge(
                pool=pool,
                name=options["name"],
                method="learned" if options["learned"] else "external",
                program=options["program"],
                command=shlex.split(options["command"]) if options["command"] else None,
                seed=options["seed"],
                folds=options["folds"],
                timeout_seconds=options["timeout"],
                retries=options["retries"],
            )
        except JudgingError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"judge {judge.name} ({judge.method}) of {pool.name}: run it with run_judge")

"""Create a model judge for a pool: learned (trained on the pool's human labels, cross-validated) or external
(a program speaking JSON lines: one the server offers by --program, or any --command)."""

from __future__ import annotations

import shlex
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import CommandError

from judgements.judges import create_judge
from pooling.management.commands._base import ServiceCommand, get_pool, given


class Command(ServiceCommand):
    help = __doc__

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("pool")
        parser.add_argument("name")
        kind = parser.add_mutually_exclusive_group(required=True)
        kind.add_argument("--learned", action="store_true", help="a scikit-learn judge")
        kind.add_argument("--program", help="an external judge of EXTERNAL_JUDGES, by name")
        kind.add_argument("--command", help="an external judge's command line (split as a shell would)")
        parser.add_argument(
            "--seed", type=int, default=0, help="seed of a learned judge (default: %(default)s)"
        )
        parser.add_argument(
            "--folds",
            type=int,
            default=5,
            help="cross-validation folds of a learned judge (default: %(default)s)",
        )
        parser.add_argument(
            "--timeout",
            dest="timeout_seconds",
            type=float,
            default=30.0,
            help="an external judge's seconds per answer (default: %(default)s)",
        )
        parser.add_argument(
            "--retries",
            type=int,
            default=1,
            help="an external judge's retries of a request (default: %(default)s)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["pool"])
        try:
            command = shlex.split(options["command"]) if options["command"] else None
        except ValueError as exc:  # an unclosed quote or a trailing backslash
            raise CommandError(f"--command {options['command']!r}: {exc}") from None
        judge = create_judge(
            pool=pool,
            method="learned" if options["learned"] else "external",
            command=command,
            **given(options, "name", "program", "seed", "folds", "timeout_seconds", "retries"),
        )
        self.stdout.write(f"judge {judge.name} ({judge.method}) of {pool.name}: run it with run_judge")

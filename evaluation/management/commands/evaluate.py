"""``manage.py evaluate QRELS RUN [RUN ...]``: trec_eval, drop-in. A thin wrapper over evaluation.cli, the
one implementation (manage.py hands file-only calls to it directly, without setting Django up)."""

from __future__ import annotations

from argparse import ArgumentParser, RawDescriptionHelpFormatter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation import cli
from evaluation.cli import resolve_qrels

__all__ = ["Command", "resolve_qrels"]


class Command(BaseCommand):
    help = cli.DESCRIPTION + "\n\n" + cli.EPILOG
    requires_system_checks: list[str] = []  # pure file work: no database, no checks

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.formatter_class = RawDescriptionHelpFormatter
        return parser

    def add_arguments(self, parser: ArgumentParser) -> None:
        cli.add_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            # The wrappers' own streams: OutputWrapper would add a newline to every write.
            cli.execute(options, self.stdout._out, self.stderr._out)  # type: ignore[arg-type]  # the raw text streams
        except cli.EvaluateError as exc:
            raise CommandError(str(exc)) from None

"""`manage.py import_judgements POOL FILE --rater USERNAME [--skip-unpooled]`: qrels as judgements."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgements import errors, imports
from judgements.models import Judging
from pooling.errors import ImportFailed
from pooling.management.commands._base import get_pool


class Command(BaseCommand):
    help = (
        "Import qrels (qid iter docid rel; .gz read transparently) as one rater's judgements of a pool, "
        "atomically: any bad line stores nothing. Negative labels (unjudged) are skipped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pool")
        parser.add_argument("file")
        parser.add_argument("--rater", required=True, help="the user the judgements are recorded for")
        parser.add_argument(
            "--skip-unpooled",
            action="store_true",
            help="skip lines for documents outside the pool (counted), instead of failing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["pool"])
        if not Judging.objects.filter(pool=pool).exists():
            raise CommandError(f"pool {pool.name!r} has no judging set up (add raters with add_raters first)")
        rater = get_user_model().objects.filter(username=options["rater"]).first()
        if rater is None:
            raise CommandError(f"no user named {options['rater']!r}")
        path = options["file"]  # a missing file is the reader's error, like every file problem
        try:
            summary = imports.import_judgements(
                pool=pool, path=path, rater=rater, skip_unpooled=options["skip_unpooled"], display_name=path
            )
        except ImportFailed as exc:
            raise CommandError(f"nothing imported:\n{exc}") from None
        except errors.JudgingError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        self.stdout.write(summary.line())

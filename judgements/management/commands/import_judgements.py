"""`manage.py import_judgements POOL FILE --rater USERNAME [--skip-unpooled]`: qrels as one rater's
judgements; `--crowd`: a crowd file (worker, qid, docid, label[, seconds]) as its workers' judgements."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser

from judgements import crowd_import, errors, imports
from judgements.models import Judging
from pooling.management.commands._base import ServiceCommand, get_pool


class Command(ServiceCommand):
    help = (
        "Import qrels (qid iter docid rel; .gz read transparently) as one rater's judgements of a pool, "
        "atomically: any bad line stores nothing. Negative labels (unjudged) are skipped. With --crowd, "
        "a CSV/TSV crowd file with a header (worker, qid, docid, label, optional seconds) as its workers' "
        "judgements: duplicates by --duplicates, special labels by --unrateable-labels, every skipped row "
        "counted by reason."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pool")
        parser.add_argument("file")
        parser.add_argument("--rater", help="the user the judgements are recorded for (qrels files)")
        parser.add_argument(
            "--skip-unpooled",
            action="store_true",
            help="skip lines for documents outside the pool (counted), instead of failing",
        )
        parser.add_argument("--crowd", action="store_true", help="the file is a crowd file (many workers)")
        parser.add_argument(
            "--duplicates",
            choices=crowd_import.DUPLICATE_RULES,
            default=None,  # "last" (None tells that it was not given)
            help="the same (worker, item) twice in a crowd file: the last row wins (default), or every row "
            "is kept as a revision",
        )
        parser.add_argument(
            "--unrateable-labels",
            default="",
            metavar="L,L",
            help="labels that mean unrateable, e.g. -2 (broken page) or 9; other negative labels are skipped",
        )
        parser.add_argument(
            "--create-raters",
            action="store_true",
            help="with --crowd: make an account (no password) for each new worker",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        self._check_options(options)
        pool = get_pool(options["pool"])
        if not Judging.objects.filter(pool=pool).exists():
            raise CommandError(f"pool {pool.name!r} has no judging set up (add raters with add_raters first)")
        path = options["file"]  # a missing file is the reader's error, like every file problem
        try:
            if options["crowd"]:
                summary: Any = crowd_import.import_crowd_judgements(
                    pool=pool,
                    path=path,
                    duplicates=options["duplicates"] or "last",
                    unrateable_labels=crowd_import.parse_labels(options["unrateable_labels"]),
                    skip_unpooled=options["skip_unpooled"],
                    create_raters=options["create_raters"],
                    display_name=path,
                )
            else:
                if not options["rater"]:
                    raise CommandError("--rater USERNAME is needed for a qrels file (or --crowd)")
                rater = get_user_model().objects.filter(username=options["rater"]).first()
                if rater is None:
                    raise CommandError(f"no user named {options['rater']!r}")
                summary = imports.import_judgements(
                    pool=pool,
                    path=path,
                    rater=rater,
                    skip_unpooled=options["skip_unpooled"],
                    display_name=path,
                )
        except errors.JudgingError as exc:  # (a refused file: ServiceCommand says "nothing imported" too)
            raise CommandError(f"nothing imported: {exc}") from None
        self.warn(getattr(summary, "warnings", []))  # a crowd import's workers named apart
        self.stdout.write(summary.line())

    @staticmethod
    def _check_options(options: dict[str, Any]) -> None:
        """Options of the other kind of file are refused rather than ignored (`--duplicates revisions` on
        a qrels file would otherwise do nothing, silently)."""
        if options["crowd"]:
            if options["rater"]:
                raise CommandError("--rater is for a qrels file: a crowd file names each row's worker")
            return
        crowd_only = {
            "--duplicates": options["duplicates"] is not None,
            "--unrateable-labels": bool(options["unrateable_labels"]),
            "--create-raters": options["create_raters"],
        }
        if given := [option for option, present in crowd_only.items() if present]:
            verb = "goes" if len(given) == 1 else "go"
            raise CommandError(f"{', '.join(given)} {verb} with --crowd (options of a crowd file)")

from __future__ import annotations

from django.core.management.base import CommandParser

from pooling import imports
from pooling.management.commands._base import ImportCommand


class Command(ImportCommand):
    help = "Import a TREC run (qid Q0 docid rank score tag) into a collection; .gz read transparently."
    kind = "run"

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--name", help="run name (default: the file name without extension)")
        parser.add_argument("--description", default="", help="what the run is, for managers")
        parser.add_argument(
            "--replace",
            action="store_true",
            help=f"if a run of the same name exists, {imports.REPLACE_EFFECT}",
        )
        parser.add_argument(
            "--skip-unknown-topics",
            action="store_true",
            help="skip rows of topics the collection does not know (a warning), instead of failing",
        )

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from pooling import imports
from pooling.management.commands._base import ImportCommand, get_collection


class Command(ImportCommand, BaseCommand):
    label = "run"
    help = "Import a TREC run (qid Q0 docid rank score tag) into a collection; .gz read transparently."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection")
        parser.add_argument("file")
        parser.add_argument("--name", help="run name (default: the file name without extension)")
        parser.add_argument("--description", default="")
        parser.add_argument("--replace", action="store_true", help="replace a run of the same name")
        parser.add_argument(
            "--skip-unknown-topics",
            action="store_true",
            help="skip rows of topics the collection does not know (a warning), instead of failing",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = get_collection(options["collection"])
        self.run_import(
            lambda bar: imports.import_run(
                collection=collection,
                path=options["file"],
                name=options["name"],
                description=options["description"],
                replace=options["replace"],
                skip_unknown_topics=options["skip_unknown_topics"],
                progress=bar,
            )
        )

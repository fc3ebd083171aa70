from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from pooling import imports
from pooling.management.commands._base import ImportCommand, get_collection


class Command(ImportCommand, BaseCommand):
    help = "Import topics into a collection (format guessed from the extension; .gz read transparently)."
    label = "topics"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection")
        parser.add_argument("file")
        parser.add_argument("--format", choices=["trec", "tsv", "jsonl"])

    def handle(self, *args: Any, **options: Any) -> None:
        collection = get_collection(options["collection"])
        self.run_import(
            lambda bar: imports.import_topics(
                collection=collection, path=options["file"], format=options["format"], progress=bar
            )
        )

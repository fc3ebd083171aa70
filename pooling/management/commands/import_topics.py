from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.progress import ProgressBar
from pooling import services
from pooling.management.commands._base import get_collection

FORMATS = ["trec", "tsv", "jsonl"]


class Command(BaseCommand):
    help = "Import topics into a collection (format guessed from the extension; .gz read transparently)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection")
        parser.add_argument("file")
        parser.add_argument("--format", choices=FORMATS)

    def handle(self, *args: Any, **options: Any) -> None:
        collection = get_collection(options["collection"])
        bar = ProgressBar("topics")
        try:
            summary = services.import_topics(
                collection=collection, path=options["file"], format=options["format"], progress=bar
            )
        except services.ImportFailed as exc:
            bar.close()
            raise CommandError(f"nothing imported:\n{exc}") from None
        bar.close()
        for warning in summary.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(summary.line())

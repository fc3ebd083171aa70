"""Import a click log into a collection: --format jsonl FILE, --format counts FILE, or --format ubi
UBI_QUERIES UBI_EVENTS (JSONL/NDJSON exports of OpenSearch User Behavior Insights). Atomic: a bad line
(FILE:LINE) stores nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from online import clicklogs
from online.clicklogs import import_click_log
from online.jobs import UPLOAD_FORMATS
from pooling.management.commands._base import ServiceCommand, get_collection, get_pool, given
from pooling.terminal_progress import ProgressBar


class Command(ServiceCommand):
    help = __doc__

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("collection")
        parser.add_argument("files", nargs="+")
        parser.add_argument("--name", required=True, help="the log's name in the collection")
        parser.add_argument("--format", choices=UPLOAD_FORMATS, default="jsonl")
        parser.add_argument("--pool", help="the pool whose human judgements click labels are compared with")
        parser.add_argument("--object-field", default="", help="map object ids by this document metadata key")
        parser.add_argument(
            "--ordinal-base",
            type=int,
            choices=[0, 1],
            default=1,
            help="UBI position.ordinal of the first result (default 1)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = get_collection(options["collection"])
        pool = get_pool(options["pool"]) if options["pool"] else None
        with ProgressBar(f"clicks {options['name']}") as bar:
            log = import_click_log(
                collection=collection,
                paths=options["files"],
                pool=pool,
                progress=bar,
                **given(options, "name", "format", "object_field", "ordinal_base"),
            )
        counts = log.counts
        self.stdout.write(
            f"click log {log.name} (id {log.pk}): {clicklogs.summary(log)}, "
            f"{counts['impressions']:,} impressions, {counts['clicks']:,} clicks, {counts['cells']:,} cells; "
            f"{counts['unmapped_queries']} unmapped queries"
        )
        self.warn(log.warnings)

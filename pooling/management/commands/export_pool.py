from __future__ import annotations

import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from pooling import pool_reads
from pooling.management.commands._base import get_pool, output_file


class Command(BaseCommand):
    help = "Write a pool as qid<TAB>docid<TAB>run,run,... (run names sorted), one line per item."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("-o", "--output", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["name"])
        if options["output"]:
            with output_file("-o", options["output"]) as out:
                lines = pool_reads.export_pool(pool=pool, out=out)
            self.stderr.write(f"wrote {lines} items to {options['output']}")
        else:
            out = getattr(self.stdout, "_out", sys.stdout)
            try:
                pool_reads.export_pool(pool=pool, out=out)
                out.flush()
            except BrokenPipeError:  # `export_pool NAME | head`: the reader has what it wanted
                # Python flushes stdout again at exit; point it at /dev/null so that flush cannot fail too
                # (https://docs.python.org/3/library/signal.html#note-on-sigpipe), then exit as it says.
                os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
                raise SystemExit(1) from None

from __future__ import annotations

import shutil
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from judgements import aggregation, releases
from judgements.models import Release
from judgements.release_policy import DEFAULT_POLICY, read_policy
from pooling.cli_types import output_directory
from pooling.management.commands._base import ServiceCommand, get_pool, given
from pooling.terminal_progress import ProgressBar


class Command(ServiceCommand):
    help = "Release a pool's qrels (qrels.txt, qrels.unjudged.txt, judgements.jsonl, manifest.json)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("pool")
        parser.add_argument(
            "--policy",
            default=DEFAULT_POLICY,
            help=f"{', '.join(aggregation.RULES)}, rater:USERNAME, or a model fitted on the whole pool: "
            f"{', '.join(aggregation.MODEL_POLICIES)} (default: %(default)s)",
        )
        parser.add_argument(
            "--unjudged",
            choices=Release.Unjudged.values,
            default="explicit",
            help="explicit: pending and unrateable items as -1; omit: left out (default: %(default)s)",
        )
        parser.add_argument(
            "--judge", help="fill the items people have not judged from this admitted model judge's labels"
        )
        parser.add_argument("-o", "--output", help="also copy the release files into this directory")

    def handle(self, *args: Any, **options: Any) -> None:
        pool = get_pool(options["pool"])
        # a refused release removes the -o directory it made
        output = options["output"]
        directory = output_directory("-o", output, CommandError) if output else nullcontext(None)
        with directory as target, ProgressBar("release") as bar:
            release = releases.create_release(
                pool=pool,
                progress=bar,
                policy=read_policy(options["policy"]),
                **given(options, "unjudged", "judge"),
            )
        source = Path(settings.MEDIA_ROOT) / release.directory
        where = source
        if target is not None:
            where = target
            try:
                for name in release.files:
                    shutil.copyfile(source / name, where / name)
            except OSError as exc:
                raise CommandError(
                    f"release {release.number} of {pool.name} is made (in {source}), but copying it to "
                    f"{where} failed: {exc}"
                ) from None
        counts = release.counts
        self.stdout.write(
            f"release {release.number} of {pool.name} (id {release.pk}; {release.policy}, "
            f"unjudged {release.unjudged}): "
            f"{counts['judged']} judged, {counts['unrateable']} unrateable, {counts['pending']} pending "
            f"-> {where}"
        )

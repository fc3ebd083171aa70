from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from judgements.models import Release
from online import tracking
from online.management.commands._online import get_experiment
from pooling.management.commands._base import ServiceCommand, get_collection, given


class Command(ServiceCommand):
    help = (
        "Track a ranking change: its offline delta (a metric on a release, treatment − baseline) now, and "
        "its "
        "online delta (--online-delta with --online-metric, or --interleaving NAME's latest result)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--collection", required=True)
        parser.add_argument("--release", type=int, required=True, help="release id")
        parser.add_argument("--metric", default="ndcg_cut_10")
        parser.add_argument("--baseline", required=True)
        parser.add_argument("--treatment", required=True)
        parser.add_argument("--online-metric", default="")
        parser.add_argument("--online-delta", type=float, default=None)
        parser.add_argument("--interleaving", default=None, help="an interleaving experiment's name")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = get_collection(options["collection"])
        release = Release.objects.filter(pk=options["release"], pool__collection=collection).first()
        if release is None:
            raise CommandError(f"no release {options['release']} in collection {collection.name!r}")
        result = None
        if options["interleaving"]:
            result = get_experiment(options["interleaving"]).results.first()
            if result is None:
                raise CommandError(
                    "that interleaving experiment has no result yet (manage.py interleaving_result)"
                )
        tracked = tracking.track_experiment(
            collection=collection,
            release=release,
            interleaving=result,
            **given(options, "name", "metric", "baseline", "treatment", "online_metric", "online_delta"),
        )
        online = "not entered yet" if tracked.online_delta is None else f"{tracked.online_delta:+.4f}"
        self.stdout.write(
            f"{tracked.name}: {tracked.metric} {tracked.offline_baseline:.4f} → "
            f"{tracked.offline_treatment:.4f} "
            f"(offline delta {tracked.offline_delta:+.4f} over {tracked.offline_topics} topics, "
            f"judged@10 {tracked.offline_judged_10:.2f}); online "
            f"{tracked.online_metric or 'delta'} {online}"
        )

"""Shared plumbing of the pooling commands: look-ups with clear errors and the summary line."""

from __future__ import annotations

from django.core.management.base import CommandError

from pooling.models import Collection


def get_collection(name: str) -> Collection:
    collection = Collection.objects.filter(name=name).first()
    if collection is None:
        raise CommandError(f"no collection named {name!r} (create it with create_collection)")
    return collection


def get_pool(name: str):  # noqa: ANN201 - returns a Pool
    from pooling.models import Pool

    pool = Pool.objects.select_related("collection").filter(name=name).first()
    if pool is None:
        raise CommandError(f"no pool named {name!r} (create it with create_pool)")
    return pool


def get_runs(collection: Collection, names: str) -> list:
    from pooling.models import Run

    wanted = [name.strip() for name in names.split(",") if name.strip()]
    if not wanted:
        raise CommandError("name at least one run")
    runs = {run.name: run for run in Run.objects.filter(collection=collection, name__in=wanted)}
    missing = [name for name in wanted if name not in runs]
    if missing:
        raise CommandError(f"no run named {', '.join(map(repr, missing))} in collection {collection.name!r}")
    return [runs[name] for name in wanted]

"""Deleting runs and collections (their rows go in one statement, not through the collector's cascade)."""

from __future__ import annotations

from django.db import transaction

from pooling.models import Collection, Pool, Run
from pooling.pool_build import remove_run


def delete_run(*, run: Run) -> None:
    """Delete a run and its rows, taking it out of every pool that uses it first (`remove_run`: the items
    only it contributed go, unless they have a judgement, which stay), in one transaction."""
    with transaction.atomic():
        for pool in Pool.objects.filter(pool_runs__run=run).order_by("pk"):
            remove_run(pool=pool, run=run)
        run.delete()  # its rows go first, in one statement (Run.delete)


def delete_collection(*, collection: Collection) -> None:
    """Delete a collection with its documents, topics and runs (each run through `delete_run`, so its
    rows go in one statement rather than through the collector's cascade)."""
    with transaction.atomic():
        for run in Run.objects.filter(collection=collection):
            delete_run(run=run)
        collection.delete()

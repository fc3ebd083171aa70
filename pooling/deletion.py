"""Deleting runs, collections and pools (a run's rows and a pool's provenance go in one statement, not
through the collector's cascade)."""

from __future__ import annotations

from django.db import transaction

from pooling.errors import PoolError
from pooling.jobs import active_jobs_of
from pooling.models import Collection, Pool, PoolItem, Provenance, Run
from pooling.pool_build import remove_run

#: What makes a pool people's work, which deleting it would throw away: the lookup that finds one (read
#: through the judging app's relations, which is not imported here) and how a refusal names it.
#: Any judgement counts, a model's too.
_HELD_BY_ITEMS = {
    "judgements__isnull": "judgements",
    "gold_label__isnull": "gold labels",
    "adjudication__isnull": "adjudications",
}


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


def pool_deletion_refusal(pool: Pool) -> PoolError | None:
    """Why `pool` may not be deleted now, or None when it may (what `delete_pool` raises, and what a page
    asks before offering to delete): while a job of it is queued or running (`jobs.active_jobs_of`: its
    build, runs being added, a release …, whose task would fail on a missing pool), and
    whenever it holds people's work, a judgement (a model's too), a gold label, an adjudication or a
    release. Deleting is for a pool nobody has judged: one configured wrongly, say."""
    job = active_jobs_of(pool).first()
    if job is not None:
        doing = (
            "is being built"
            if job.kind == job.Kind.BUILD_POOL
            else f"has a job at work ({job.kind}, job {job.pk})"
        )
        return PoolError(f"pool {pool.name!r} {doing}: wait for it to finish, then delete the pool")
    held = [
        name
        for lookup, name in _HELD_BY_ITEMS.items()
        if PoolItem.objects.filter(pool=pool, **{lookup: False}).exists()
    ]
    if Pool.objects.filter(pk=pool.pk, releases__isnull=False).exists():
        held.append("releases")
    if held:
        return PoolError(
            f"pool {pool.name!r} has {', '.join(held)}: a pool that holds people's work is not deleted "
            "(deleting is only for a pool nobody has judged)"
        )
    return None


def delete_pool(*, pool: Pool) -> int:
    """Delete a pool nobody has judged, with its items, their provenance, its runs' links (the runs stay
    in the collection), its judging set-up and its leases; answer how many items went. Refused
    (`PoolError`, nothing changed) for the reasons `pool_deletion_refusal` gives. The pool's row and its
    items are locked first: a judgement, which locks its item, cannot land between the check and the
    delete, nor a release, which locks the pool's row."""
    with transaction.atomic():
        locked = Pool.objects.select_for_update().get(pk=pool.pk)
        items = PoolItem.objects.filter(pool=locked)
        count = len(items.select_for_update().values_list("pk", flat=True))
        refusal = pool_deletion_refusal(locked)
        if refusal is not None:
            raise refusal
        Provenance.objects.filter(item_id__in=items.values("pk")).delete()  # one statement
        locked.delete()  # the rest through the collector: items, leases, judging set-up, run links
    return count

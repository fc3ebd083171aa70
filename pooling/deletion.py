"""Deleting runs, collections and pools (a run's rows and a pool's provenance go in one statement, not
through the collector's cascade), and when a pool or a collection may not be deleted."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.db import transaction
from django.db.models import ManyToOneRel, Model

from pooling.errors import PoolError
from pooling.jobs import active_jobs_of, active_jobs_of_collection, remove_uploads_of
from pooling.models import Collection, Job, Pool, PoolItem, Provenance, Run
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
    rows go in one statement rather than through the collector's cascade). Its jobs go too (a cascade), and
    the files their uploads were stored as with them, once that commits (`remove_uploads_of`)."""
    with transaction.atomic():
        remove_uploads_of(Job.objects.filter(collection=collection))
        for run in Run.objects.filter(collection=collection):
            delete_run(run=run)
        collection.delete()


def run_deleted(run: Run) -> str:
    """What the page and the command say once `run` is deleted."""
    return f"Run {run.name} deleted from collection {run.collection.name}."


@dataclass(frozen=True)
class CollectionContents:
    """What deleting a collection takes with it (a confirmation page says it before, a message after)."""

    documents: int
    topics: int
    runs: int

    @classmethod
    def of(cls, collection: Collection) -> CollectionContents:
        return cls(
            documents=collection.documents.count(),
            topics=collection.topics.count(),
            runs=collection.runs.count(),
        )

    def __str__(self) -> str:
        counts = [(self.documents, "document"), (self.topics, "topic"), (self.runs, "run")]
        return _and([f"{n} {name}{_s(n)}" for n, name in counts])

    def deleted(self, name: str) -> str:
        """What the page and the command say once collection `name` is deleted with these."""
        return f"Collection {name} deleted with its {self}."


def pool_deleted(pool: Pool, items: int) -> str:
    """What the page and the command say once `pool` is deleted with its `items` items."""
    return (
        f"Pool {pool.name} deleted with its {items} item{_s(items)}; its runs stay in collection "
        f"{pool.collection.name}."
    )


def _kept_elsewhere(collection: Collection) -> list[tuple[int, str]]:
    """What the later apps keep on `collection` (click logs, propensity estimates, interleaving and tracked
    experiments: whatever row of a model outside this app names it, read through the relations that point
    at it, since pooling imports none of those apps), each as its count and its model's name, singular or
    plural: `[(1, "click log"), (2, "tracked experiments")]`. Their own rows (a log's clicks, an
    experiment's impressions) hang from those, so those are what is deleted first, each on its own page."""
    kept = []
    for relation in Collection._meta.get_fields(include_hidden=True):
        if not isinstance(relation, ManyToOneRel):
            continue
        meta = cast(type[Model], relation.related_model)._meta
        if meta.app_label == Collection._meta.app_label:
            continue
        count = meta.model._base_manager.filter(**{relation.field.name: collection}).count()
        if count:
            kept.append((count, str(meta.verbose_name if count == 1 else meta.verbose_name_plural)))
    return kept


def _s(count: int) -> str:
    return "s" if count != 1 else ""


def _and(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c` (empty items left out)."""
    items = [item for item in items if item]
    return f"{', '.join(items[:-1])} and {items[-1]}" if len(items) > 1 else "".join(items)


def collection_deletion_refusal(collection: Collection, *, user: Any = None) -> PoolError | None:
    """Why `collection` may not be deleted now, or None when it may (what `delete_unused_collection`
    raises, and what its page asks before offering to delete): while a pool is built on it (a pool is its
    managers' work: it is deleted first, on its own page); while a job of it is queued or running
    (`jobs.active_jobs_of_collection`: an import, a build, a click log's, whose task would fail on a
    missing collection); while another app keeps rows on it (`_kept_elsewhere`: click logs, experiments).
    Deleting is for a collection nothing uses: one imported wrongly, say.

    The pools are named when `user` manages them (all of them when no user is given), the others
    counted: a pool is its managers' own, and its name is not told to anyone else."""
    reasons = []
    pools = Pool.objects.filter(collection=collection)
    if total := pools.count():
        named = pools.managed_by(user) if user is not None else pools
        names = [repr(name) for name in named.order_by("name").values_list("name", flat=True)]
        others = total - len(names)
        if names and others:
            listed = f"pool{_s(len(names))} {_and([*names, f'{others} more you do not manage'])}"
        elif names:
            listed = f"pool{_s(len(names))} {_and(names)}"
        else:
            listed = f"{others} pool{_s(others)} you do not manage"
        many = total != 1
        # a pool that holds people's work is never deleted: "delete it first" would send them to a refusal
        # (of the pools named: of another's pool, no more is told than that it exists)
        held = any(_work_held(pool) for pool in named)
        then = (
            "a pool that holds people's work is kept, and so is its collection"
            if held
            else f"delete {'them' if many else 'it'} first"
        )
        reasons.append(f"{listed} {'are' if many else 'is'} built on it ({then})")
    job = active_jobs_of_collection(collection).first()
    if job is not None:
        reasons.append(f"a job is at work on it ({job.kind}, job {job.pk}): wait for it to finish")
    if kept := _kept_elsewhere(collection):
        many = sum(count for count, _ in kept) != 1
        reasons.append(
            f"{_and([f'{count} {name}' for count, name in kept])} {'depend' if many else 'depends'} on it "
            f"(delete {'them' if many else 'it'} first)"
        )
    if reasons:
        return PoolError(f"collection {collection.name!r} is in use: {'; '.join(reasons)}")
    return None


def delete_unused_collection(*, collection: Collection, user: Any = None) -> CollectionContents:
    """Delete a collection nothing uses, with its documents, topics and runs (`delete_collection`), and
    answer what went: what the API's DELETE and the collection's page call. Refused (`PoolError`, nothing
    changed) for the reasons `collection_deletion_refusal` gives (`user` as there). The collection's row is
    locked first: a pool, a job or a click log, each of which references the row, cannot be made between
    the check and the delete. (The admin calls `delete_collection` itself, once its confirmation page has
    listed every row that goes.)"""
    with transaction.atomic():
        locked = Collection.objects.select_for_update().get(pk=collection.pk)
        refusal = collection_deletion_refusal(locked, user=user)
        if refusal is not None:
            raise refusal
        contents = CollectionContents.of(locked)
        delete_collection(collection=locked)
    return contents


def _work_held(pool: Pool) -> list[str]:
    """The kinds of people's work `pool` holds (judgements, gold labels, adjudications, releases), which
    deleting it would throw away: none for a pool nobody has judged."""
    held = [
        name
        for lookup, name in _HELD_BY_ITEMS.items()
        if PoolItem.objects.filter(pool=pool, **{lookup: False}).exists()
    ]
    if Pool.objects.filter(pk=pool.pk, releases__isnull=False).exists():
        held.append("releases")
    return held


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
    if held := _work_held(pool):
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

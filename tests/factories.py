"""Small `make_*` helpers with keyword defaults, shared by the tests."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group, User

from judgements import leasing, membership, submission
from judgements.models import Assignment, Judgement
from pooling import pool_build
from pooling.models import Collection, Document, Pool, Run, RunRow, Topic

_counter = itertools.count(1)


def every_manager() -> list[User]:
    """Every user with the manager role now (the group, or staff): the default owners of what the
    factories make, as migration 0010 made them of every existing pool, so that a test not about
    ownership needs no set-up. Tests of ownership name the managers."""
    from django.db.models import Q

    from pooling.permissions import MANAGERS_GROUP

    return list(
        User.objects.filter(Q(groups__name=MANAGERS_GROUP) | Q(is_staff=True, is_superuser=False)).distinct()
    )


def make_collection(
    *,
    name: str | None = None,
    docs: int = 20,
    topics: Sequence[str] = ("q1", "q2"),
    managers: Sequence[User] | None = None,
) -> Collection:
    """A collection of `docs` documents d000... and the `topics`; `managers` default: every_manager()."""
    collection = Collection.objects.create(name=name or f"c{next(_counter)}")
    collection.managers.set(every_manager() if managers is None else managers)
    Document.objects.bulk_create(
        Document(
            collection=collection, docid=f"d{i:03d}", title=f"Document {i}", text=f"text of document {i}"
        )
        for i in range(docs)
    )
    Topic.objects.bulk_create(
        Topic(collection=collection, qid=qid, query=f"query {qid}", segments=["head" if n % 2 else "tail"])
        for n, qid in enumerate(topics)
    )
    return collection


def make_run(*, collection: Collection, name: str, lists: Mapping[str, Sequence[str]]) -> Run:
    """A run whose ranked list for each qid is exactly `lists[qid]` (rank 1 first)."""
    run = Run.objects.create(collection=collection, name=name)
    topics = dict(Topic.objects.filter(collection=collection).values_list("qid", "id"))
    docs = dict(Document.objects.filter(collection=collection).values_list("docid", "id"))
    RunRow.objects.bulk_create(
        RunRow(run=run, topic_id=topics[qid], document_id=docs[docid], rank=rank, score=100.0 - rank)
        for qid, docids in lists.items()
        for rank, docid in enumerate(docids, 1)
    )
    run.num_rows = sum(len(v) for v in lists.values())
    run.num_topics = len(lists)
    run.save()
    return run


def make_pool(
    *,
    collection: Collection | None = None,
    runs: Sequence[Run] | None = None,
    name: str | None = None,
    depth: int = 5,
    judgements_per_item: int = 1,
    raters: Sequence[User] = (),
    build: bool = True,
    managers: Sequence[User] | None = None,
    **options,
) -> Pool:
    """A built pool with the default rubric and the given raters; two runs over q1, q2 if none given;
    `managers` default: every_manager()."""
    if collection is None:
        collection = make_collection(managers=managers)
    if runs is None:
        runs = [
            make_run(collection=collection, name="alpha",
                     lists={"q1": ["d001", "d002", "d003", "d004"], "q2": ["d010", "d011", "d012"]}),
            make_run(collection=collection, name="beta",
                     lists={"q1": ["d003", "d005", "d001", "d006"], "q2": ["d013", "d010"]}),
        ]  # fmt: skip
    pool = pool_build.create_pool(
        name=name or f"pool{next(_counter)}",
        collection=collection,
        runs=runs,
        depth=depth,
        judgements_per_item=judgements_per_item,
        **options,
    )
    pool.managers.set(every_manager() if managers is None else managers)
    if build:
        pool_build.build_pool(pool=pool)
        pool.refresh_from_db()
    membership.setup_judging(pool=pool, raters=raters)
    return pool


def make_user(username: str, *, password: str = "pass-word-123", **fields) -> User:
    """A user who logs in with `password`, made by `create_user` (no password: nothing to hash), then
    given the hash made once per process (`hashed`)."""
    user = User.objects.create_user(username, password=None, **fields)
    user.password = hashed(password)
    user.save(update_fields=["password"])
    return user


def hashed(password: str) -> str:
    """`password` hashed by the first of the hashers in force (the project's PBKDF2 takes a third of a
    second a hash: once for every persona, it was minutes of the suite), once per process and hashers;
    the users made with it share the hash and its salt, which any process checks as one made apart."""
    return _hashed(password, tuple(settings.PASSWORD_HASHERS))


@functools.cache
def _hashed(password: str, hashers: tuple[str, ...]) -> str:
    return make_password(password)


def make_manager(username: str, **fields) -> User:
    """A user in the pool managers' group (not staff unless `fields` say so)."""
    from pooling.permissions import MANAGERS_GROUP

    user = make_user(username, **fields)
    user.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    return user


def lease_for(*, pool: Pool, rater: User) -> Assignment | None:
    """`leasing.lease_next`, answered as the assignment it leased (what a test goes on to inspect)."""
    lease = leasing.lease_next(pool=pool, rater=rater)
    if lease is None:
        return None
    return Assignment.objects.select_related("item__topic", "item__document").get(pk=lease.assignment)


def submit_for(*, assignment: Assignment, **label: Any) -> Judgement:
    """`submission.submit_label` on the assignment's own rater's behalf, answered as the judgement stored."""
    judged = submission.submit_label(assignment=assignment.pk, rater=assignment.rater, **label)
    return Judgement.objects.get(pk=judged.id)

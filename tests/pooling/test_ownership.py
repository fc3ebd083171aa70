"""Ownership: who manages a collection or a pool (the QuerySet rules, the services that change them)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from pooling import ownership, services
from pooling.models import Collection, Job, Pool
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_collection, make_pool, make_user


def _manager(username: str) -> User:
    user = make_user(username)
    group, _ = Group.objects.get_or_create(name=MANAGERS_GROUP)
    user.groups.add(group)
    return user


@pytest.fixture
def people(db):
    return {
        "a": _manager("manager-a"),
        "b": _manager("manager-b"),
        "admin": make_user("root", is_staff=True, is_superuser=True),
        "rater": make_user("rater-a"),
    }


def test_it_scopes_pools_and_collections_to_their_managers(people):
    a, b = people["a"], people["b"]
    pool_a = make_pool(name="pa", managers=[a], raters=[people["rater"]])
    pool_b = make_pool(name="pb", managers=[b])
    assert list(Pool.objects.managed_by(a)) == [pool_a]
    assert list(Pool.objects.managed_by(b)) == [pool_b]
    assert set(Pool.objects.managed_by(people["admin"])) == {pool_a, pool_b}
    assert list(Pool.objects.managed_by(people["rater"])) == []
    assert list(Pool.objects.visible_to(people["rater"])) == [pool_a]
    assert list(Collection.objects.managed_by(a)) == [pool_a.collection]
    assert list(Collection.objects.visible_to(b)) == [pool_b.collection]


def test_it_lets_a_pool_manager_read_but_not_manage_the_collection(people):
    a, b = people["a"], people["b"]
    collection = make_collection(managers=[a])
    pool = make_pool(collection=collection, name="shared", managers=[b])
    assert list(Collection.objects.visible_to(b)) == [collection]
    assert list(Collection.objects.managed_by(b)) == []
    # managing the collection does not make one a manager of someone else's pool over it
    assert list(Pool.objects.managed_by(a)) == []
    assert list(Pool.objects.managed_by(b)) == [pool]


def test_it_makes_the_creator_the_first_manager(people):
    a = people["a"]
    collection = services.create_collection(name="mine", created_by=a)
    assert list(collection.managers.all()) == [a]
    other = make_collection(managers=[])
    runs = list(make_pool(collection=other, managers=[]).runs.all())
    pool = services.create_pool(name="new", collection=other, runs=runs, created_by=a)
    assert list(pool.managers.all()) == [a]
    assert services.create_collection(name="nobodys").managers.count() == 0


def test_it_adds_and_removes_managers_but_keeps_the_last(people):
    a, b = people["a"], people["b"]
    pool = make_pool(name="pa", managers=[a])
    assert ownership.add_managers(owned=pool, users=[b, b]) == ["manager-a", "manager-b"]
    assert list(Pool.objects.managed_by(b)) == [pool]
    assert ownership.remove_manager(owned=pool, user=a) == ["manager-b"]
    with pytest.raises(ownership.OwnershipError, match="last manager"):
        ownership.remove_manager(owned=pool, user=b)
    with pytest.raises(ownership.OwnershipError, match="not a manager"):
        ownership.remove_manager(owned=pool, user=a)
    assert ownership.manager_names(owned=pool) == ["manager-b"]


def test_it_refuses_a_manager_without_the_role(people):
    pool = make_pool(name="pa", managers=[people["a"]])
    with pytest.raises(ownership.OwnershipError, match="rater-a"):
        ownership.add_managers(owned=pool, users=[people["b"], people["rater"]])
    assert ownership.manager_names(owned=pool) == ["manager-a"]  # nothing changed


def test_it_scopes_jobs(people):
    a, b = people["a"], people["b"]
    pool_a = make_pool(name="pa", managers=[a])
    build = Job.objects.create(kind=Job.Kind.BUILD_POOL, params={"pool": pool_a.pk})
    release = Job.objects.create(kind=Job.Kind.RELEASE, params={"pool": pool_a.pk})
    imported = Job.objects.create(kind=Job.Kind.RUN, collection=pool_a.collection)
    own = Job.objects.create(kind=Job.Kind.RUN, created_by=b)
    assert set(Job.objects.visible_to(a)) == {build, release, imported}
    assert set(Job.objects.visible_to(b)) == {own}
    assert Job.objects.visible_to(people["admin"]).count() == 4
    assert Job.objects.visible_to(people["rater"]).count() == 0

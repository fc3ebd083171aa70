"""Ownership: who manages a collection or a pool (the QuerySet rules, the services that change them)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from pooling import imports, ownership, pool_build
from pooling.models import Collection, Job, Pool
from tests.factories import make_collection, make_manager, make_pool, make_user


@pytest.fixture
def people(db):
    return {
        "a": make_manager("manager-a"),
        "b": make_manager("manager-b"),
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
    collection = imports.create_collection(name="mine", created_by=a)
    assert list(collection.managers.all()) == [a]
    other = make_collection(managers=[])
    runs = list(make_pool(collection=other, managers=[]).runs.all())
    pool = pool_build.create_pool(name="new", collection=other, runs=runs, created_by=a)
    assert list(pool.managers.all()) == [a]
    assert imports.create_collection(name="nobodys").managers.count() == 0


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


# ----------------------------------------------------------------------------- what each manager is shown


@pytest.fixture
def two_pools(people):
    from judgements import releases
    from tests.judgements.test_releases import judge

    people["b"].is_staff = True
    people["b"].save()
    people["b"].user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=["pooling", "judgements"], codename__startswith="view"
        )
    )
    pool_a = make_pool(name="pool-a", managers=[people["a"]], raters=[people["rater"]])
    pool_b = make_pool(name="pool-b", managers=[people["b"]])
    judge(pool_a, people["rater"], {("q1", "d001"): 2})
    releases.create_release(pool=pool_a)
    return pool_a, pool_b


def test_it_lists_only_a_managers_own_pools_everywhere(people, two_pools):
    client = APIClient()
    client.force_login(people["b"])
    assert [p["name"] for p in client.get("/api/pools/").json()["results"]] == ["pool-b"]
    assert [j["pool"] for j in client.get("/api/judging/").json()["results"]] == ["pool-b"]
    assert client.get("/api/releases/").json()["results"] == []
    assert {c["name"] for c in client.get("/api/collections/").json()["results"]} == {
        two_pools[1].collection.name
    }
    for url in (
        "/pools/",
        "/manage/",
        "/manage/dashboard/",
        "/admin/pooling/pool/",
        "/admin/judgements/judgement/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "pool-a" not in response.content.decode(), url


def test_it_adds_a_manager_through_the_api_and_the_page(people, two_pools):
    pool_a, _ = two_pools
    client = APIClient()
    client.force_login(people["a"])
    added = client.post("/api/pools/pool-a/managers/", {"usernames": ["manager-b"]}, format="json")
    assert added.status_code == 200 and added.json() == {"managers": ["manager-a", "manager-b"]}
    refused = client.post("/api/pools/pool-a/managers/", {"usernames": ["rater-a"]}, format="json")
    assert refused.status_code == 400 and "rater-a" in refused.json()["usernames"][0]
    unknown = client.post("/api/pools/pool-a/managers/", {"usernames": ["nobody"]}, format="json")
    assert unknown.status_code == 400 and "usernames" in unknown.json()
    removed = client.delete("/api/pools/pool-a/managers/manager-b/")
    assert removed.json() == {"managers": ["manager-a"]}
    assert client.delete("/api/pools/pool-a/managers/manager-a/").status_code == 400  # the last one
    page = client.post("/pools/pool-a/managers/", {"username": "manager-b"}, follow=True)
    assert page.status_code == 200 and "manager-b manages pool pool-a now" in page.content.decode()
    assert ownership.manager_names(owned=pool_a) == ["manager-a", "manager-b"]
    collection = client.post(
        f"/api/collections/{pool_a.collection.name}/managers/", {"usernames": ["manager-b"]}, format="json"
    )
    assert collection.status_code == 200 and "manager-b" in collection.json()["managers"]


def test_it_makes_the_api_creator_the_manager_of_a_new_collection_and_pool(people):
    client = APIClient()
    client.force_login(people["b"])
    assert client.post("/api/collections/", {"name": "news"}, format="json").status_code == 201
    assert ownership.manager_names(owned=Collection.objects.get(name="news")) == ["manager-b"]
    assert client.get("/api/collections/news/managers/").json() == {"managers": ["manager-b"]}
    other = APIClient()
    other.force_login(people["a"])
    assert other.get("/api/collections/news/").status_code == 404


def test_it_gives_the_cli_owner_what_the_command_creates(people):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("create_collection", "cli-news", owner="manager-a")
    assert ownership.manager_names(owned=Collection.objects.get(name="cli-news")) == ["manager-a"]
    with pytest.raises(CommandError, match="not a pool manager"):
        call_command("create_collection", "cli-other", owner="rater-a")
    with pytest.raises(CommandError, match="no user named"):
        call_command("create_collection", "cli-other", owner="nobody")
    assert not Collection.objects.filter(name="cli-other").exists()


def test_the_upgrade_gives_existing_pools_to_every_user_who_had_the_manager_role(people):
    """Migration 0010's data step, run on today's models: nobody who managed pools before loses them."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("pooling.migrations.0010_collection_and_pool_managers")
    staff = make_user("staff-only", is_staff=True)
    pool = make_pool(name="old", managers=[])
    pool.collection.managers.clear()
    migration.owned_by_every_manager(apps, None)
    expected = ["manager-a", "manager-b", "staff-only"]  # not the rater, not the superuser (sees all anyway)
    assert ownership.manager_names(owned=pool) == expected
    assert ownership.manager_names(owned=pool.collection) == expected
    migration.owned_by_every_manager(apps, None)  # twice: nothing doubled
    assert pool.managers.count() == 3 and staff in pool.managers.all()


def test_it_keeps_another_managers_pool_rubric_from_being_edited_in_place(people):
    make_pool(name="pool-a", managers=[people["a"]])
    a, b = APIClient(), APIClient()
    a.force_login(people["a"])
    b.force_login(people["b"])
    rubric = a.post("/api/rubrics/", {"name": "mine"}, format="json").json()["id"]
    assert a.patch("/api/judging/pool-a/", {"rubric": rubric}, format="json").status_code == 200
    refused = b.patch(f"/api/rubrics/{rubric}/", {"description": "changed by b"}, format="json")
    assert refused.status_code == 403 and "do not manage" in refused.json()["detail"]
    assert a.get(f"/api/rubrics/{rubric}/").json()["description"] == ""
    assert a.patch(f"/api/rubrics/{rubric}/", {"description": "mine"}, format="json").status_code == 200

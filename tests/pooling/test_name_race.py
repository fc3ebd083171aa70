"""A collection or pool name taken in any case, held by the database too: two creations that race past the
checks (both see the name free, one commits first) end with one created and the other refused as the checks
refuse it, beside the name field, on the page, in the API and by the command; never a 500 or a traceback,
never two names that differ only in case."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse

from pooling.models import Collection, Owned, Pool, Run
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool

pytestmark = pytest.mark.django_db

COLLECTION_TAKEN = "collection 'fresh' already exists as 'Fresh' (names that differ only in case are one)"
POOL_TAKEN = (
    "a pool named 'fresh-pool' already exists as 'Fresh-Pool' (names that differ only in case are one)"
)


@contextmanager
def racing(model: type[Owned]) -> Iterator[None]:
    """As if another creation committed between this one's checks and its insert: the checks see every
    name free; from the insert on (`Owned.creating`), what the database holds is seen."""
    real_check, real_creating = model.name_taken_problem, model.creating
    checking = [True]

    def check(name: str, *, exists: str) -> str | None:
        return None if checking[0] else real_check(name, exists=exists)

    @contextmanager
    def creating(name: str, *, refused: Any) -> Iterator[None]:
        checking[0] = False
        with real_creating(name, refused=refused):
            yield

    with (
        mock.patch.object(model, "name_taken_problem", check),
        mock.patch.object(model, "creating", creating),
    ):
        yield


@pytest.fixture
def manager() -> Any:
    return make_manager("owner")


@pytest.mark.parametrize("model", [Collection, Pool])
def test_the_database_refuses_a_name_taken_in_another_case(model: type[Owned]) -> None:
    pool = make_pool(name="Taken")
    taken = pool if model is Pool else pool.collection
    taken.name = "Taken"
    taken.save()
    fields = {"collection": pool.collection} if model is Pool else {}
    for name in ("taken", "TAKEN", "Taken"):
        with pytest.raises(IntegrityError), transaction.atomic():
            model._default_manager.create(name=name, **fields)
    assert model._default_manager.filter(name__iexact="taken").count() == 1


@pytest.mark.parametrize("way", ["page", "api", "command"])
def test_a_collection_created_in_a_race_is_refused_on_its_name(manager: Any, way: str) -> None:
    Collection.objects.create(name="Fresh")  # the other creation, committed after this one's checks
    with racing(Collection):
        if way == "page":
            client = Client()
            client.force_login(manager)
            response = client.post(reverse("setup:collections"), {"name": "fresh"})
            assert response.status_code == 200
            assert response.context["form"].errors["name"] == [COLLECTION_TAKEN]
        elif way == "api":
            response = client_for(manager).post("/api/collections/", {"name": "fresh"}, format="json")
            assert response.status_code == 400
            assert response.json() == {"name": [COLLECTION_TAKEN]}
        else:
            with pytest.raises(CommandError) as refused:
                call_command("create_collection", "fresh")
            assert str(refused.value) == COLLECTION_TAKEN
    assert list(Collection.objects.values_list("name", flat=True)) == ["Fresh"]


@pytest.mark.parametrize("way", ["page", "api", "command"])
def test_a_pool_created_in_a_race_is_refused_on_its_name(manager: Any, way: str) -> None:
    collection = make_collection(name="news", managers=[manager])
    Run.objects.create(collection=collection, name="alpha")
    Pool.objects.create(name="Fresh-Pool", collection=collection)  # committed after this one's checks
    with racing(Pool):
        if way == "page":
            client = Client()
            client.force_login(manager)
            fields = {"name": "fresh-pool", "runs": [str(Run.objects.get().pk)], "strategy": "depth",
                      "depth": "3", "judgements_per_item": "1", "price_per_judgement": "0"}  # fmt: skip
            response = client.post(reverse("setup:pool-create", kwargs={"name": "news"}), fields)
            assert response.status_code == 200
            assert response.context["form"].errors["name"] == [POOL_TAKEN]
        elif way == "api":
            data = {"name": "fresh-pool", "collection": "news", "runs": ["alpha"]}
            response = client_for(manager).post("/api/pools/", data, format="json")
            assert response.status_code == 400
            assert response.json() == {"name": [POOL_TAKEN]}
        else:
            with pytest.raises(CommandError) as refused:
                call_command(
                    "create_pool", "fresh-pool", "--collection", "news", "--runs", "alpha", "--depth", "3"
                )
            assert POOL_TAKEN in str(refused.value)
    assert list(Pool.objects.values_list("name", flat=True)) == ["Fresh-Pool"]


def test_the_admin_refuses_renaming_a_collection_to_a_name_taken_in_another_case() -> None:
    admin = make_manager("root", is_staff=True, is_superuser=True)
    Collection.objects.create(name="Fresh")
    other = Collection.objects.create(name="other")
    client = Client()
    client.force_login(admin)
    url = reverse("admin:pooling_collection_change", args=[other.pk])
    response = client.post(url, {"name": "fresh", "description": "", "created_at_0": "2026-01-01",
                                 "created_at_1": "00:00:00"})  # fmt: skip
    assert response.status_code == 200
    assert "This name is taken in another case (names that differ only in case are one)." in str(
        response.context["adminform"].form.errors
    )
    assert sorted(Collection.objects.values_list("name", flat=True)) == ["Fresh", "other"]

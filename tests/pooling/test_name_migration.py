"""Migration pooling 0027 (names unique in any case): on a database made before the checks that holds two
names differing only in case, it stops naming them and changes nothing; with those renamed it adds the
constraints; and it goes back."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from tests.migrating import back_to_latest, migrate  # noqa: F401 - back_to_latest: a fixture

BEFORE = [("pooling", "0026_item_need")]
AFTER = [("pooling", "0027_name_unique_in_any_case")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_it_names_the_names_alike_and_changes_nothing_then_adds_the_constraint_once_they_differ() -> None:
    old = migrate(BEFORE)
    Collection, Pool = old.get_model("pooling", "Collection"), old.get_model("pooling", "Pool")
    news = Collection.objects.create(name="News")
    Collection.objects.create(name="news")
    Collection.objects.create(name="sport")
    Pool.objects.create(name="Week-1", collection=news)
    Pool.objects.create(name="week-1", collection=news)
    with pytest.raises(RuntimeError) as stopped:
        migrate(AFTER)
    assert str(stopped.value) == (
        "names that differ only in case are one; rename all but one of each before migrating: "
        "collections News, news; pools Week-1, week-1"
    )
    assert ("pooling", "0027_name_unique_in_any_case") not in MigrationExecutor(
        connection
    ).loader.applied_migrations
    Collection.objects.filter(name="news").update(name="news-2")
    Pool.objects.filter(name="week-1").update(name="week-1-again")
    new = migrate(AFTER)
    with pytest.raises(IntegrityError), transaction.atomic():
        new.get_model("pooling", "Collection").objects.create(name="SPORT")
    old = migrate(BEFORE)  # back: the constraint goes
    old.get_model("pooling", "Collection").objects.create(name="SPORT")
    Collection.objects.filter(name="SPORT").delete()

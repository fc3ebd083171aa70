"""Migration judgements 0016: the releases made before it are numbered per pool in the order they were made
(`created_at`, then id), the job that made each carries its number; and it goes back and forward."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from judgements.models import Release, Rubric
from pooling.models import Job
from tests.factories import make_pool
from tests.migrating import back_to_latest, migrate  # noqa: F401 - back_to_latest: a fixture

BEFORE = [("judgements", "0015_progress_tally_items")]
AFTER = [("judgements", "0016_release_numbers")]


def release_columns() -> set[str]:
    with connection.cursor() as cursor:
        described = connection.introspection.get_table_description(cursor, Release._meta.db_table)
    return {column.name for column in described}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_it_numbers_the_releases_made_before_per_pool_in_the_order_made_and_goes_back():
    news, sport = make_pool(name="news"), make_pool(name="sport")
    rubric_id = Rubric.objects.values_list("pk", flat=True).first()
    old = migrate(BEFORE)
    assert "number" not in release_columns()
    OldRelease = old.get_model("judgements", "Release")
    now = timezone.now()
    made = {}
    # ids in the order written; `created_at` says when each was made: sport's "late" was written first
    written = [("sport-late", sport, 30), ("news-1", news, 0), ("sport-1", sport, 5),
               ("news-2", news, 10), ("sport-2", sport, 10), ("news-3", news, 10)]  # fmt: skip
    for key, pool, minutes in written:
        made[key] = OldRelease.objects.create(
            pool_id=pool.pk, rubric_id=rubric_id, created_at=now + timedelta(minutes=minutes), directory=key
        ).pk
    assert made["sport-1"] > made["news-1"] > made["sport-late"]
    job = Job.objects.create(
        kind=Job.Kind.RELEASE, params={"pool": sport.pk}, result={"release": made["sport-2"]}
    )

    migrate(AFTER)
    numbers = dict(Release.objects.values_list("directory", "number"))
    assert numbers == {"news-1": 1, "news-2": 2, "news-3": 3, "sport-1": 1, "sport-2": 2, "sport-late": 3}
    assert Job.objects.get(pk=job.pk).result == {"release": made["sport-2"], "number": 2}

    migrate(BEFORE)  # backward: the column and its constraint go, the rows stay
    assert "number" not in release_columns()
    assert old.get_model("judgements", "Release").objects.count() == 6
    migrate(AFTER)
    assert dict(Release.objects.values_list("directory", "number")) == numbers
    assert {c.name for c in Release._meta.constraints} <= set(
        connection.introspection.get_constraints(connection.cursor(), Release._meta.db_table)
    )

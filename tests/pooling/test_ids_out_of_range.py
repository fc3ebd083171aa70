"""An id no integer column can hold (22 digits) is an id of nothing: the pool forms and their previews
say it is not one of the choices (SQLite raised OverflowError binding it to `id IN (…)`, a 500), and an
`__in` filter with it finds the rows of the other ids (`pooling.lookups.InWithinRange`)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from pooling.models import Pool, Run
from tests.factories import make_pool, make_run

pytestmark = pytest.mark.django_db

HUGE = "9" * 22


def test_an_in_filter_leaves_out_the_ids_no_column_can_hold() -> None:
    pool = make_pool(name="ids")
    run = pool.runs.first()
    assert run is not None
    for far in (10**21, -(10**21), HUGE):
        assert list(Run.objects.filter(pk__in=[far, run.pk])) == [run]
        assert not Run.objects.filter(pk__in=[far]).exists()
        assert not User.objects.filter(pk__in=[far]).exists()


def page(manager: Any) -> Client:
    client = Client()
    client.force_login(manager)
    return client


def test_the_pool_forms_and_previews_refuse_such_an_id_as_a_choice(manager: Any) -> None:
    pool = make_pool(name="ids", managers=[manager])
    make_run(collection=pool.collection, name="extra", lists={"q1": ["d001"]})  # one the pool could add
    collection = pool.collection.name
    client = page(manager)
    before = Pool.objects.count()
    refused = "not one of the available choices"
    for method, url, says in (
        ("get", f"/collections/{collection}/pools/preview/?runs={HUGE}", refused),
        # as for any id that is not a run of the collection: no figures, the form's prompt
        ("get", f"/pools/{pool.name}/runs/preview/?runs={HUGE}", "Choose runs to see"),
        ("post", f"/collections/{collection}/pools/new/", refused),
        ("post", f"/pools/{pool.name}/runs/add/", refused),
    ):
        data = {"runs": [HUGE], "name": "other", "depth": 10} if method == "post" else None
        answer = getattr(client, method)(url, data) if data else client.get(url)
        assert answer.status_code == 200, (url, answer.status_code)
        assert says in answer.content.decode(), url
    assert Pool.objects.count() == before

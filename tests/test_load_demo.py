"""`make demo` loads a real campaign with the same commands a user runs."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from judgements.models import Judging
from pooling.models import Collection, Pool, PoolItem, Run


@pytest.mark.django_db
def test_it_loads_the_demo_campaign_once(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    out = io.StringIO()
    call_command("load_demo", quick=True, data_dir=str(tmp_path / "demo"), stdout=out)
    collection = Collection.objects.get(name="pydocs")
    assert collection.documents.count() > 100
    assert set(Run.objects.filter(collection=collection).values_list("name", flat=True)) == {
        "bm25",
        "tfidf",
        "lsa",
    }
    pool = Pool.objects.get(name="pydocs-depth10")
    assert pool.status == Pool.Status.BUILT
    assert PoolItem.objects.filter(pool=pool).count() > 0
    judging = Judging.objects.get(pool=pool)
    assert sorted(judging.raters.values_list("username", flat=True)) == ["rater1", "rater2", "rater3"]
    text = out.getvalue()
    assert "log in as admin" in text and "rater3" in text
    admin = User.objects.get(username="admin")
    password = text.split("log in as admin")[1].split("password")[1].split()[0]
    assert admin.check_password(password) and admin.is_superuser

    items = PoolItem.objects.count()
    call_command("load_demo", quick=True, data_dir=str(tmp_path / "demo"), stdout=io.StringIO())
    assert PoolItem.objects.count() == items
    assert Collection.objects.count() == 1

"""`make demo` loads a real campaign with the same commands a user runs."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from demo import online_experiments_demo
from judgements.models import Judging
from online.experiment_models import InterleavingResult, TrackedExperiment
from pooling.models import Collection, Pool, PoolItem, Run


@pytest.mark.django_db
def test_it_loads_the_demo_campaign_once(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    out = io.StringIO()
    call_command("load_demo", quick=True, data_dir=str(tmp_path / "demo"), stdout=out)
    collection = Collection.objects.get(name="pydocs")
    assert collection.documents.count() > 100
    # the three rankers, and the ranking changes the offline-online tracker follows
    assert set(Run.objects.filter(collection=collection).values_list("name", flat=True)) == {
        "bm25",
        "tfidf",
        "lsa",
        *online_experiments_demo.FUSIONS,
    }
    pool = Pool.objects.get(name="pydocs-depth10")
    assert set(pool.pool_runs.values_list("run__name", flat=True)) == {"bm25", "tfidf", "lsa"}
    assert TrackedExperiment.objects.filter(collection=collection, online_delta__isnull=False).count() >= 5
    assert InterleavingResult.objects.filter(experiment__name="tfidf-vs-bm25").exists()
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


@pytest.mark.django_db
def test_it_prints_the_address_it_is_told(tmp_path, settings):
    settings.DATA_DIR = tmp_path
    out = io.StringIO()
    call_command(
        "load_demo", quick=True, data_dir=str(tmp_path / "demo"), url="http://127.0.0.1:8101/", stdout=out
    )
    assert "Demo ready on http://127.0.0.1:8101/" in out.getvalue()
    assert "8000" not in out.getvalue()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_passes_its_port_to_the_server_and_the_message():
    root = Path(__file__).resolve().parent.parent
    dry_run = subprocess.run(
        ["make", "-n", "demo", "PORT=8101"],
        cwd=root, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    assert "load_demo --url http://127.0.0.1:8101/" in dry_run.stdout
    assert "runserver 127.0.0.1:8101" in dry_run.stdout

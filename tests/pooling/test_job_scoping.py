"""Who may read a job and who may start it again. A pool's jobs are its managers' (managing the pool's
collection is not managing the pool, and having started a pool's job once is not either); any other job is
its collection's managers' and, to read, its starter's; starting a job again needs the role now. An audit
found a collection manager retrying (rebuilding) a pool of someone else's, and a manager removed from a
pool retrying a release job of it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from pooling.models import Job
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> dict[str, Any]:
    a, b = make_manager("manager-a"), make_manager("manager-b")
    collection = make_collection(name="news", managers=[a])
    theirs = make_pool(name="b-pool", collection=collection, managers=[b])  # B's pool on A's collection
    build = Job.objects.create(
        kind=Job.Kind.BUILD_POOL, status="failed", collection=collection, created_by=b,
        params={"pool": theirs.pk, "name": theirs.name},
    )  # fmt: skip
    release = Job.objects.create(
        kind=Job.Kind.RELEASE, status="failed", created_by=a,
        params={"pool": theirs.pk, "policy": "majority", "unjudged": "explicit"},
    )  # fmt: skip
    upload = Job.objects.create(kind=Job.Kind.TOPICS, status="failed", collection=collection, created_by=b)
    return {"a": a, "b": b, "collection": collection, "pool": theirs, "build": build, "release": release,
            "import": upload}  # fmt: skip


def listed(user: Any) -> set[int]:
    return {job["id"] for job in client_for(user).get("/api/jobs/?limit=100").json()["results"]}


def test_a_pools_jobs_are_its_managers_not_its_collections(world):
    a, b = world["a"], world["b"]
    pool_jobs = {world["build"].pk, world["release"].pk}
    assert pool_jobs & listed(a) == set()  # A manages the collection, not B's pool; A started the release
    assert pool_jobs <= listed(b)
    for job in pool_jobs:
        assert client_for(a).get(f"/api/jobs/{job}/").status_code == 404
        assert client_for(a).post(f"/api/jobs/{job}/retry/").status_code == 404
        page = Client()
        page.force_login(a)
        assert page.get(f"/jobs/{job}/").status_code == 404
        assert page.post(f"/jobs/{job}/retry/").status_code == 404
    assert not Job.objects.filter(retry_of__in=pool_jobs).exists()


def test_a_manager_of_the_pool_retries_its_job(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(world["b"]).post(f"/api/jobs/{world['build'].pk}/retry/")
    assert response.status_code == 202
    assert Job.objects.filter(retry_of=world["build"]).count() == 1


def test_a_manager_removed_from_a_pool_loses_its_jobs(world):
    pool, a = world["pool"], world["a"]
    pool.managers.add(a)
    assert world["release"].pk in listed(a)
    pool.managers.remove(a)
    assert world["release"].pk not in listed(a)
    assert client_for(a).post(f"/api/jobs/{world['release'].pk}/retry/").status_code == 404


def test_who_started_an_import_reads_it_but_retries_it_only_while_managing_the_collection(world):
    b, job = world["b"], world["import"]
    assert client_for(b).get(f"/api/jobs/{job.pk}/").status_code == 200  # B started it
    assert client_for(b).post(f"/api/jobs/{job.pk}/retry/").status_code == 403
    page = Client()
    page.force_login(b)
    assert page.post(f"/jobs/{job.pk}/retry/").status_code == 403
    assert not Job.objects.filter(retry_of=job).exists()
    assert job.pk in listed(world["a"])  # the collection's manager

"""Jobs that cannot get stuck: a broker down at enqueue, a worker gone, the progress cache down, retries,
temporary files, release directories that exist already, and the job page of every kind of job.

The faults with a real worker that is killed are in test_faults.py.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db.models.signals import pre_delete
from django.test import Client, override_settings
from django.utils import timezone

from judgements import releases
from judgements.models import Release
from labeling.celery import app
from pooling import jobs
from pooling.models import Collection, Job, Pool, Run
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"
CLOSED_PORT = "redis://127.0.0.1:1/0"  # nothing listens on port 1
CACHE_DOWN = {
    "default": {
        "BACKEND": "labeling.cache.RedisCache",
        "LOCATION": CLOSED_PORT,
        "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
    }
}


@contextmanager
def broker_at(url: str) -> Iterator[None]:
    """Tasks go to a broker at `url` (not run in process) for the duration."""
    saved = os.environ.get("CELERY_BROKER_URL")
    app.conf.task_always_eager = False  # the autouse eager_celery fixture restores it
    os.environ["CELERY_BROKER_URL"] = url  # Celery reads the variable before its configuration
    forget_connections()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("CELERY_BROKER_URL")
        else:
            os.environ["CELERY_BROKER_URL"] = saved
        forget_connections()


def forget_connections() -> None:
    """Forget the app's connection and producer pools (kombu keeps one per URL), so the next task is sent
    through the current URL."""
    app._pool = None
    app.amqp._producer_pool = None


def web(user: Any) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def campaign(manager: Any) -> tuple[Pool, Release]:
    """A judged pool with a release, managed by `manager`."""
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(judgements_per_item=2, raters=[alice, bob], name="campaign")
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q2", "d010"): 2})
    judge(pool, bob, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 3, ("q2", "d010"): 2})
    return pool, releases.create_release(pool=pool)


def release_bytes(release: Release, media_root: Path) -> dict[str, bytes]:
    folder = media_root / release.directory
    return {name: (folder / name).read_bytes() for name in sorted(release.files)}


# --------------------------------------------------------------------------------------------- broker down


@pytest.mark.django_db(transaction=True)
def test_it_answers_503_and_fails_the_job_when_the_broker_is_down(manager: Any, campaign: Any) -> None:
    pool, _ = campaign
    api = client_for(manager)
    started = time.monotonic()
    with broker_at(CLOSED_PORT):
        build = api.post(f"/api/pools/{pool.name}/build/")
        release = api.post("/api/releases/", {"pool": pool.name}, format="json")
        with (GOOD / "topics.jsonl").open("rb") as handle:
            upload = api.post(
                f"/api/collections/{pool.collection.name}/imports/",
                {"file": handle, "kind": "topics"},
                format="multipart",
            )
        page = web(manager).post(f"/pools/{pool.name}/build/")
        with (GOOD / "topics.jsonl").open("rb") as handle:
            upload_page = web(manager).post(
                f"/collections/{pool.collection.name}/", {"file": handle, "kind": "topics"}
            )
    assert time.monotonic() - started < 20

    for response in (build, release, upload):
        assert response.status_code == 503, response.content
        body = response.json()
        assert "task queue is unreachable" in body["detail"] and body["status"] == "failed"
        job = Job.objects.get(pk=body["job"])
        assert job.status == "failed" and job.finished_at is not None
        assert "task queue is unreachable" in job.errors[0] and "127.0.0.1:1" in job.errors[0]
    for answer in (page, upload_page):  # every page that starts a job: the failed job's page, a 503
        assert answer.status_code == 503 and b"task queue is unreachable" in answer.content
    assert not Job.objects.filter(status__in=["queued", "running"]).exists()
    pool.refresh_from_db()
    assert pool.status == "built"  # untouched: nothing was started

    # the broker is back (in process here): the pool builds again, no 409 for ever
    app.conf.task_always_eager = True
    again = api.post(f"/api/pools/{pool.name}/build/")
    assert again.status_code == 202 and again.json()["status"] == "done"


@pytest.mark.django_db
def test_an_error_of_a_job_run_in_process_is_the_jobs_not_the_queues(
    manager: Any, campaign: Any, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from pooling import pool_build

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pool_build, "build_pool", broken)
    pool, _ = campaign
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        client_for(manager).post(f"/api/pools/{pool.name}/build/")
    job = Job.objects.get(kind=Job.Kind.BUILD_POOL)
    assert (job.status, job.errors) == ("failed", ["internal error: boom"])


# --------------------------------------------------------------------------------------------- sweep


def running_job(pool: Pool, *, beat_seconds_ago: float, worker: str = "elsewhere:1") -> Job:
    beat = timezone.now() - timedelta(seconds=beat_seconds_ago)
    return Job.objects.create(
        kind=Job.Kind.BUILD_POOL, status="running", params={"pool": pool.pk, "name": pool.name},
        started_at=beat, heartbeat_at=beat, worker=worker, attempts=1,
    )  # fmt: skip


@pytest.mark.django_db
def test_the_sweep_fails_a_job_whose_worker_is_gone_and_frees_its_pool(manager: Any, settings: Any) -> None:
    settings.JOB_STALE_SECONDS = 60
    built = make_pool(name="built")
    never = make_pool(name="never", collection=built.collection, runs=list(Run.objects.all()), build=False)
    gone = running_job(built, beat_seconds_ago=61)
    gone_too = running_job(never, beat_seconds_ago=3600)
    alive = running_job(make_pool(name="alive"), beat_seconds_ago=5)
    Pool.objects.filter(pk__in=[built.pk, never.pk]).update(status=Pool.Status.BUILDING)
    api = client_for(manager)
    assert api.post("/api/pools/built/build/").status_code == 409

    assert jobs.sweep_stale_jobs() == 2

    for job in (gone, gone_too):
        job.refresh_from_db()
        assert job.status == "failed" and job.finished_at is not None
        reason = "the worker running this job (elsewhere:1) stopped: no heartbeat since"
        assert job.errors[0].startswith(reason)
    alive.refresh_from_db()
    assert alive.status == "running"
    assert Pool.objects.get(pk=built.pk).status == "built"  # its earlier build stands
    assert Pool.objects.get(pk=never.pk).status == "failed"
    assert api.post("/api/pools/built/build/").status_code == 202
    assert jobs.sweep_stale_jobs() == 0


@pytest.mark.django_db
def test_a_redelivered_job_runs_again_unless_its_worker_is_alive(settings: Any) -> None:
    pool = make_pool(build=False)
    # the process that ran it is dead (this host, a pid that does not exist): claimed again
    dead = running_job(pool, beat_seconds_ago=1, worker=f"{os.uname().nodename}:{2**22 + 7}")
    claimed = jobs.claim(dead.pk)
    assert claimed is not None and claimed.attempts == 2 and claimed.message == "running (attempt 2)"
    # a live process of this host runs it (a duplicate delivery): left alone
    alive = running_job(pool, beat_seconds_ago=1, worker=f"{os.uname().nodename}:{os.getppid()}")
    assert jobs.claim(alive.pk) is None
    # finished jobs are never run again; a failed one is retried as a new job
    for status in ("done", "failed"):
        job = Job.objects.create(kind=Job.Kind.BUILD_POOL, status=status, params={"pool": pool.pk})
        assert jobs.claim(job.pk) is None


# --------------------------------------------------------------------------------------------- cache down


def upload_documents(api: Any, collection: str, capture: Any) -> Any:
    """POST the good documents file to `collection`'s imports through `api`, its job run on commit."""
    with capture(execute=True), (GOOD / "docs.jsonl").open("rb") as handle:
        return api.post(
            f"/api/collections/{collection}/imports/",
            {"file": handle, "kind": "documents"},
            format="multipart",
        )


@pytest.mark.django_db
def test_progress_and_pages_degrade_when_the_cache_is_down(
    manager: Any, campaign: Any, django_capture_on_commit_callbacks: Any
) -> None:
    pool, _ = campaign
    api = client_for(manager)
    running = running_job(pool, beat_seconds_ago=1)
    with override_settings(CACHES=CACHE_DOWN):
        cache.set("anything", "kept")  # dropped
        assert cache.get("anything", "missed") == "missed"
        upload = upload_documents(api, pool.collection.name, django_capture_on_commit_callbacks)
        assert upload.status_code == 202, upload.content
        job = api.get(f"/api/jobs/{upload.json()['id']}/").json()
        assert (job["status"], job["errors"]) == ("done", [])
        assert job["counts"]["created"] > 0
        listing = api.get("/api/jobs/")
        assert listing.status_code == 200
        assert {"id": running.pk, "progress": 0.0} in [
            {"id": each["id"], "progress": each["progress"]} for each in listing.json()["results"]
        ]
        assert api.get(f"/api/agreement/{pool.name}/").status_code == 200
        assert web(manager).get(f"/campaigns/{pool.name}/agreement/").status_code == 200
        assert web(manager).get(f"/evaluation/{pool.name}/").status_code == 200
        assert api.get(f"/api/evaluation/{pool.name}/report/").status_code == 200
        assert web(manager).get(f"/jobs/{running.pk}/").status_code == 200


# --------------------------------------------------------------------------------------------- retry


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("who", "expected"), [("anonymous", 401), ("outsider", 403), ("rater", 403), ("manager", 202)]
)
def test_only_a_manager_retries_a_failed_job_through_the_api(
    request: Any,
    who: str,
    expected: int,
    campaign: Any,
    media_root: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    pool, first = campaign
    failed = Job.objects.create(
        kind=Job.Kind.RELEASE, status="failed", errors=["the worker running this job stopped"],
        params={"pool": pool.pk, "policy": "majority", "unjudged": "explicit"},
    )  # fmt: skip
    user = None if who == "anonymous" else request.getfixturevalue(who)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(user).post(f"/api/jobs/{failed.pk}/retry/")
    assert response.status_code in ((401, 403) if expected == 401 else (expected,))
    if expected != 202:
        assert not Job.objects.filter(retry_of=failed).exists()
        return
    retry = Job.objects.get(pk=response.json()["id"])
    assert (retry.retry_of_id, retry.kind, retry.status, response.json()["retry_of"]) == (
        failed.pk, "release", "done", failed.pk,
    )  # fmt: skip
    again = Release.objects.get(pk=retry.result["release"])
    assert again.pk != first.pk
    assert release_bytes(again, media_root) == release_bytes(first, media_root)  # byte-identical
    # only a failed job is retried
    assert client_for(user).post(f"/api/jobs/{retry.pk}/retry/").status_code == 409


@pytest.mark.django_db
def test_a_manager_retries_a_failed_import_from_its_page(
    manager: Any, rater: Any, django_capture_on_commit_callbacks: Any
) -> None:
    collection = Collection.objects.create(name="news")
    collection.managers.set([manager])
    api = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True), (GOOD / "topics.jsonl").open("rb") as handle:
        fields = {"file": handle, "kind": "topics"}
        first = api.post("/api/collections/news/imports/", fields, format="multipart")
    job = Job.objects.get(pk=first.json()["id"])
    assert job.status == "done"
    Job.objects.filter(pk=job.pk).update(status="failed", errors=["the worker running this job stopped"])
    collection.topics.all().delete()

    page = web(manager).get(f"/jobs/{job.pk}/")
    assert page.status_code == 200 and b"the worker running this job stopped" in page.content
    assert f'action="/jobs/{job.pk}/retry/"'.encode() in page.content
    assert web(rater).post(f"/jobs/{job.pk}/retry/").status_code == 403
    assert web(None).post(f"/jobs/{job.pk}/retry/").status_code == 302  # to the login page
    assert not Job.objects.filter(retry_of=job).exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = web(manager).post(f"/jobs/{job.pk}/retry/")
    retry = Job.objects.get(retry_of=job)
    assert response.status_code == 302 and response["Location"] == f"/jobs/{retry.pk}/"
    assert retry.status == "done" and retry.upload.name == job.upload.name
    assert collection.topics.count() == retry.counts["created"] > 0
    retried = web(manager).get(f"/jobs/{job.pk}/")
    assert f'href="/jobs/{retry.pk}/"'.encode() in retried.content


# --------------------------------------------------------------------------------------------- job pages


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["run", "build_pool", "release"])
def test_every_kind_of_job_has_a_page_that_follows_it_live(
    kind: str, manager: Any, rater: Any, outsider: Any
) -> None:
    pool = make_pool(name="campaign")
    job = Job.objects.create(
        kind=kind, status="running", params={"pool": pool.pk}, collection=pool.collection, upload_name="r.txt"
    )
    cache.set(f"job-progress:{job.pk}", {"progress": 0.42, "message": "12 items"}, 60)
    page = web(manager).get(f"/jobs/{job.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert '<meta http-equiv="refresh" content="3">' in html
    assert 'value="42"' in html and "12 items" in html
    assert client_for(manager).get(f"/api/jobs/{job.pk}/").json()["page"] == f"/jobs/{job.pk}/"
    for who in (rater, outsider):
        assert web(who).get(f"/jobs/{job.pk}/").status_code == 403
    assert web(None).get(f"/jobs/{job.pk}/").status_code == 302
    Job.objects.filter(pk=job.pk).update(status="done", progress=1.0)
    assert "http-equiv" not in web(manager).get(f"/jobs/{job.pk}/").content.decode()


@pytest.mark.django_db
def test_the_pages_that_start_jobs_link_to_them(manager: Any, campaign: Any) -> None:
    pool, _ = campaign
    build = running_job(pool, beat_seconds_ago=1)
    release = Job.objects.create(kind="release", status="failed", params={"pool": pool.pk}, errors=["x"])
    assert f'href="/jobs/{build.pk}/"' in web(manager).get(f"/pools/{pool.name}/").content.decode()
    assert f'href="/jobs/{build.pk}/"' in web(manager).get("/pools/").content.decode()
    releases_page = web(manager).get(f"/campaigns/{pool.name}/releases/").content.decode()
    assert f'href="/jobs/{release.pk}/"' in releases_page


# --------------------------------------------------------------------------------------------- files


@pytest.mark.django_db
def test_a_release_removes_what_a_killed_release_left_and_keeps_a_live_ones(
    campaign: Any, media_root: Path, settings: Any
) -> None:
    settings.JOB_STALE_SECONDS = 60
    pool, _ = campaign
    root = media_root / "releases" / pool.name
    killed, live = root / ".tmp-killed", root / ".tmp-live"
    for folder in (killed, live):
        folder.mkdir()
        (folder / "qrels.txt").write_text("q1 0 d001 ")
    past = time.time() - 61
    for path in (killed / "qrels.txt", killed):
        os.utime(path, (past, past))

    releases.create_release(pool=pool)

    assert not killed.exists() and live.exists()
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".tmp-")) == [".tmp-live"]
    os.utime(live / "qrels.txt", (past, past))
    os.utime(live, (past, past))
    assert releases.remove_stale_release_workdirs() == [live]


@pytest.mark.django_db
def test_a_release_never_writes_into_a_directory_it_did_not_make(
    campaign: Any, media_root: Path, django_capture_on_commit_callbacks: Any, manager: Any
) -> None:
    pool, first = campaign
    root = media_root / "releases" / pool.name
    for number in range(first.pk + 1, first.pk + 20):  # what a restored database's next releases will hit
        (root / str(number)).mkdir()
        (root / str(number) / "qrels.txt").write_text("not ours\n")
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(manager).post("/api/releases/", {"pool": pool.name}, format="json")
    job = Job.objects.get(pk=response.json()["id"])
    release = Release.objects.get(pk=job.result["release"])

    assert job.status == "done", job.errors
    assert release.directory == f"releases/{pool.name}/{release.pk}-2"
    assert (root / str(release.pk) / "qrels.txt").read_text() == "not ours\n"
    assert release_bytes(release, media_root) == release_bytes(first, media_root)
    assert job.warnings == [
        f"releases/{pool.name}/{release.pk} already existed (qrels.txt), not written by this database "
        f"(restored from a backup, or reset while the media stayed?): left untouched, this release is in "
        f"releases/{pool.name}/{release.pk}-2"
    ]


# --------------------------------------------------------------------------------------------- runs


def test_no_signal_carries_the_deletion_of_a_run() -> None:
    assert not pre_delete.has_listeners(Run)


@pytest.mark.django_db
def test_the_admin_deletes_runs_and_collections_with_their_rows(admin_user: Any) -> None:
    from pooling import runrows
    from pooling.models import RunRow

    pool = make_pool()
    alpha, beta = Run.objects.filter(collection=pool.collection).order_by("name")
    other = make_pool(name="other")
    kept = RunRow.objects.filter(run__collection=other.collection).count()
    dropped: list[int] = []
    real = runrows.drop_partition

    def spy(run_id: int) -> None:
        dropped.append(run_id)
        real(run_id)

    client = web(admin_user)
    runrows.drop_partition = spy
    try:
        response = client.post(
            "/admin/pooling/run/",
            {"action": "delete_selected", "_selected_action": [alpha.pk], "post": "yes"},
        )
        assert response.status_code == 302
        assert dropped == [alpha.pk]
        pool.delete()
        response = client.post(f"/admin/pooling/collection/{pool.collection_id}/delete/", {"post": "yes"})
        assert response.status_code == 302
    finally:
        runrows.drop_partition = real
    assert dropped == [alpha.pk, beta.pk]
    assert not RunRow.objects.filter(run_id__in=[alpha.pk, beta.pk]).exists()
    assert RunRow.objects.count() == kept


@pytest.mark.django_db
def test_an_import_jobs_page_names_its_collection_once_as_the_way_back(
    manager: Any, campaign: Any, django_capture_on_commit_callbacks: Any
) -> None:
    pool, _ = campaign
    upload = upload_documents(client_for(manager), pool.collection.name, django_capture_on_commit_callbacks)
    page = web(manager).get(f"/jobs/{upload.json()['id']}/").content.decode()
    assert (
        page.count(f"collection {pool.collection.name}")
        + page.count(f"collection <strong>{pool.collection.name}")
        == 1
    )
    assert f'href="/collections/{pool.collection.name}/"' in page

"""The production setup end to end: PostgreSQL, Redis and a real Celery worker import an upload.

`celery.contrib.testing.worker.start_worker` runs a worker in a thread of this process, consuming from the
Redis broker of the settings. The worker's thread opens its own database connection: with
`django_db(transaction=True)` the test's writes are committed, and Django's connection settings already
name the test database, so the worker sees the collection and the upload and its writes are visible here.
Celery's Django fixup closes the worker thread's connection after each task, so the test database can be
flushed and dropped afterwards.

The tasks go to a queue of this test's own (routed by name, consumed by this worker only): other test runs
sharing the Redis server cannot take them, and this worker takes nothing of theirs.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_prerun
from django.core.management import call_command

from labeling.celery import app
from pooling.models import Run, Topic
from tests.conftest import client_for, require_services

DATA = Path(__file__).resolve().parent.parent / "data"
GOOD = DATA / "good"
BAD = DATA / "bad"

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@contextmanager
def private_queue(name: str) -> Iterator[None]:
    """Route the pooling tasks to queue `name` for the duration; restore the app's routing after."""
    saved = app.conf.task_routes
    app.conf.task_routes = {"pooling.tasks.*": {"queue": name}}
    app.amqp.flush_routes()
    app.amqp.__dict__.pop("router", None)  # a cached property, rebuilt from the new routes
    try:
        yield
    finally:
        app.conf.task_routes = saved
        app.amqp.flush_routes()
        app.amqp.__dict__.pop("router", None)
        app.amqp.__dict__.pop("queues", None)  # forget the worker's consume-from selection
        with app.connection_for_write() as connection:
            redis = connection.default_channel.client  # the queue and kombu's binding keys for it
            keys = redis.keys(f"*{name}*")
            if keys:
                redis.delete(*keys)


def wait_for(client: Any, job_id: int, *, timeout: float = 20.0) -> dict[str, Any]:
    """Poll the job through the API until it is finished."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/api/jobs/{job_id}/")
        assert response.status_code == 200
        job = response.json()
        if job["status"] in ("done", "failed"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['status']} after {timeout} s"
        time.sleep(0.1)


def upload(client: Any, path: Path, **fields: str) -> int:
    with path.open("rb") as handle:
        response = client.post(
            "/api/collections/news/imports/", {"file": handle, **fields}, format="multipart"
        )
    assert response.status_code == 202, response.content
    assert response.json()["status"] == "queued"
    return int(response.json()["id"])


def test_it_imports_an_upload_in_a_real_worker(manager: Any, settings: Any) -> None:
    require_services()
    app.conf.task_always_eager = False  # the autouse eager_celery fixture restores it afterwards
    call_command("create_collection", "news", "--owner", "manager")
    call_command("import_documents", "news", str(GOOD / "docs.jsonl"))
    call_command("import_topics", "news", str(GOOD / "topics.jsonl"))
    client = client_for(manager)
    queue = f"test-worker-{uuid.uuid4().hex}"

    executed: list[tuple[bool, int]] = []

    def record(task: Any, **kwargs: Any) -> None:
        executed.append((bool(getattr(task.request, "is_eager", False)), threading.get_ident()))

    started = time.monotonic()
    task_prerun.connect(record, weak=False)
    try:
        with private_queue(queue):
            good = upload(
                client, GOOD / "run_b.txt.gz", kind="run", name="bm25", description="negative scores"
            )
            time.sleep(0.3)
            # no worker yet: the task waits in Redis, it did not run in process
            assert client.get(f"/api/jobs/{good}/").json()["status"] == "queued"
            with start_worker(
                app, pool="solo", perform_ping_check=False, queues=[queue], shutdown_timeout=20
            ):
                settings.IMPORT_CHECK_MAX_BYTES = 0  # a file too large to check first: its job fails
                bad = upload(client, BAD / "run_nan_score.txt", kind="run")
                good_job = wait_for(client, good)
                bad_job = wait_for(client, bad)
    finally:
        task_prerun.disconnect(record)

    assert time.monotonic() - started < 30
    assert len(executed) == 2
    assert all(not eager and thread != threading.get_ident() for eager, thread in executed)
    assert good_job["status"] == "done", good_job["errors"]
    assert (good_job["counts"]["rows"], good_job["counts"]["topics"], good_job["progress"]) == (9, 3, 1.0)
    assert good_job["started_at"] is not None
    run = Run.objects.get(collection__name="news", name="bm25")
    assert (run.num_rows, run.num_topics, run.description) == (9, 3, "negative scores")
    lists = {topic.qid: run.ranked_list(topic) for topic in Topic.objects.order_by("qid")}
    assert lists == {
        "301": [("d02", -1.2), ("d01", -2.5), ("d05", -3.0)],
        "302": [("d05", -0.5), ("d06", -0.9), ("d08", -1.1)],
        "303": [("d10", -0.3), ("d12", -0.4), ("d09", -0.4)],
    }
    assert bad_job["status"] == "failed"
    assert bad_job["errors"] == ["run_nan_score.txt:2: score 'nan' is not a finite number"]
    assert not Run.objects.filter(name="run_nan_score").exists()

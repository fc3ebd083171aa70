"""Faults with a real worker, real Redis and real PostgreSQL: the worker is killed (SIGKILL) mid-import,
mid-build and mid-release, and every job still ends `done` or `failed` with a reason, in bounded time, with
nothing half-written left and a byte-identical result.

The worker is a separate process (`tests.pooling.fault_worker`, prefork with one child) consuming a queue of
this test's own; it reads the test database and this test's MEDIA_ROOT. Its hold points let the test kill
it at a known moment of the work (see that module). Two kills:
- the child running the task (what the OOM killer does): the broker gives the message back at once
  (acks late + reject on worker lost) and the job runs again, to `done`;
- the whole worker: nothing is left to give the message back before Redis's visibility timeout; the job's
  heartbeat stops, the sweep fails it with the reason and frees the pool, and the retry builds it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command

from judgements import releases
from judgements.models import Release
from labeling.celery import app
from pooling import jobs
from pooling.models import Job, Pool, Run, Topic
from tests.conftest import client_for, require_services
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

ROOT = Path(__file__).resolve().parent.parent.parent
GOOD = ROOT / "tests" / "data" / "good"
HEARTBEAT, STALE = 0.3, 2.0

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


def database_url() -> str:
    db = django_settings.DATABASES["default"]
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@contextmanager
def private_queue(name: str) -> Iterator[None]:
    """Route every task to queue `name` for the duration (only this test's worker consumes it)."""
    saved = app.conf.task_routes
    app.conf.task_routes = {"pooling.tasks.*": {"queue": name}, "judgements.tasks.*": {"queue": name}}
    app.amqp.flush_routes()
    app.amqp.__dict__.pop("router", None)
    try:
        yield
    finally:
        app.conf.task_routes = saved
        app.amqp.flush_routes()
        app.amqp.__dict__.pop("router", None)
        with app.connection_for_write() as connection:
            redis = connection.default_channel.client
            keys = redis.keys(f"*{name}*")
            if keys:
                redis.delete(*keys)


class Worker:
    """The fault worker process (its own session, so the whole worker can be killed at once)."""

    def __init__(self, queue: str, fault_dir: Path, media_root: Path, *, split: bool = False) -> None:
        env = {
            **os.environ,
            **({"FAULT_SPLIT_RELEASES": "1"} if split else {}),
            "DATABASE_URL": database_url(),
            "MEDIA_ROOT": str(media_root),
            "FAULT_DIR": str(fault_dir),
            "JOB_HEARTBEAT_SECONDS": str(HEARTBEAT),
            "JOB_STALE_SECONDS": str(STALE),
            "CELERY_VISIBILITY_TIMEOUT": "60",
        }
        self.log = fault_dir / f"worker-{uuid.uuid4().hex[:6]}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.pooling.fault_worker", queue],
            cwd=ROOT,
            env=env,
            stdout=self.log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill_all(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill_all()


def wait(condition: Callable[[], Any], *, timeout: float, what: str, worker: Worker | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            log = worker.log.read_text(errors="replace")[-3000:] if worker else ""
            pytest.fail(f"{what}: not within {timeout} s\n{log}")
        time.sleep(0.1)


def finished(job_id: int) -> Job | None:
    job = Job.objects.get(pk=job_id)
    return job if job.finished else None


def kill_child_at(point: str, fault_dir: Path, worker: Worker) -> int:
    """Wait until the worker's child holds at `point`, SIGKILL that child; its pid."""
    reached = fault_dir / f"reached-{point}"
    wait(reached.exists, timeout=40, what=f"the worker reaching {point}", worker=worker)
    wait(lambda: reached.read_text(), timeout=5, what="the pid")
    pid = int(reached.read_text())
    assert pid != worker.process.pid  # a child of the worker, not the worker itself
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.fixture
def fault_env(tmp_path: Path, settings: Any) -> Iterator[tuple[str, Path, Path]]:
    require_services()
    app.conf.task_always_eager = False  # the autouse eager_celery fixture restores it afterwards
    settings.JOB_STALE_SECONDS = STALE
    fault_dir = tmp_path / "faults"
    fault_dir.mkdir()
    queue = f"test-faults-{uuid.uuid4().hex}"
    with private_queue(queue):
        yield queue, fault_dir, Path(settings.MEDIA_ROOT)


def test_a_killed_process_is_redelivered_and_its_job_ends_done(fault_env: Any, manager: Any) -> None:
    queue, fault_dir, media_root = fault_env
    started = time.monotonic()
    call_command("create_collection", "news", "--owner", "manager")
    call_command("import_documents", "news", str(GOOD / "docs.jsonl"))
    call_command("import_topics", "news", str(GOOD / "topics.jsonl"))
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(judgements_per_item=2, raters=[alice, bob], name="campaign")
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q2", "d010"): 2})
    judge(pool, bob, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 3, ("q2", "d010"): 2})
    reference = releases.create_release(pool=pool)  # what the killed release must still write
    api = client_for(manager)
    worker = Worker(queue, fault_dir, media_root)
    try:
        # mid-import: the run's rows are written in the import's transaction, not committed
        (fault_dir / "hold-import").touch()
        with (GOOD / "run_b.txt.gz").open("rb") as handle:
            response = api.post(
                "/api/collections/news/imports/", {"file": handle, "kind": "run", "name": "bm25"},
                format="multipart",
            )  # fmt: skip
        assert response.status_code == 202, response.content
        imported = response.json()["id"]
        first = Job.objects.get(pk=imported).heartbeat_at
        killed = kill_child_at("import", fault_dir, worker)
        held = Job.objects.get(pk=imported)
        assert held.status == "running" and held.worker.endswith(f":{killed}")
        assert held.heartbeat_at is not None and first is None  # stamped once it ran
        job = wait(lambda: finished(imported), timeout=30, what="the import", worker=worker)
        assert (job.status, job.errors, job.attempts) == ("done", [], 2)
        run = Run.objects.get(collection__name="news", name="bm25")
        assert (run.num_rows, run.num_topics) == (9, 3)
        assert [docid for docid, _ in run.ranked_list(Topic.objects.get(qid="301"))] == ["d02", "d01", "d05"]

        # mid-build: the items are inserted in the build's transaction; the heartbeat beats meanwhile
        (fault_dir / "hold-build").touch()
        build = api.post(f"/api/pools/{pool.name}/build/").json()["id"]
        kill_child_at("build", fault_dir, worker)
        beat = Job.objects.get(pk=build).heartbeat_at
        wait(
            lambda: Job.objects.get(pk=build).heartbeat_at != beat or finished(build),
            timeout=5,
            what="a beat",
        )
        job = wait(lambda: finished(build), timeout=30, what="the build", worker=worker)
        assert (job.status, job.errors, job.attempts) == ("done", [], 2)
        assert Pool.objects.get(pk=pool.pk).status == "built"

        # mid-release: the work directory is open, the first item read
        (fault_dir / "hold-release").touch()
        made = api.post("/api/releases/", {"pool": pool.name}, format="json").json()["id"]
        kill_child_at("release", fault_dir, worker)
        root = media_root / "releases" / pool.name
        left = [path for path in root.iterdir() if path.name.startswith(".tmp-")]
        assert [path.name for path in left[0].iterdir()] != []  # the killed attempt's half-written files
        job = wait(lambda: finished(made), timeout=30, what="the release", worker=worker)
        assert (job.status, job.errors, job.attempts) == ("done", [], 2)
    finally:
        worker.stop()
    release = Release.objects.get(pk=job.result["release"])
    for name in ("qrels.txt", "judgements.jsonl", "manifest.json"):
        ours = (media_root / release.directory / name).read_bytes()
        assert ours == (media_root / reference.directory / name).read_bytes(), name
    time.sleep(STALE + 0.2)
    releases.remove_stale_release_workdirs()  # the periodic sweep (beat)
    assert sorted(path.name for path in root.iterdir()) == sorted([str(reference.pk), str(release.pk)])
    assert time.monotonic() - started < 90


def test_a_release_of_two_processes_in_a_prefork_worker(fault_env: Any, manager: Any) -> None:
    """A worker's child (billiard's prefork) forks the release's second process and reaps it; the files are
    those of one process."""
    queue, fault_dir, media_root = fault_env
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(judgements_per_item=2, raters=[alice, bob], name="campaign")
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q2", "d010"): 2})
    judge(pool, bob, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q2", "d010"): 1})
    reference = releases.create_release(pool=pool)  # one process (below release_halves.MIN_ROWS here)
    worker = Worker(queue, fault_dir, media_root, split=True)
    try:
        made = client_for(manager).post("/api/releases/", {"pool": pool.name}, format="json").json()["id"]
        job = wait(lambda: finished(made), timeout=40, what="the release", worker=worker)
    finally:
        worker.stop()
    assert (job.status, job.errors, job.attempts) == ("done", [], 1)
    assert [path.name for path in fault_dir.glob("split-*")] == ["split-q2"]
    release = Release.objects.get(pk=job.result["release"])
    for name in ("qrels.txt", "qrels.unjudged.txt", "judgements.jsonl", "manifest.json"):
        ours = (media_root / release.directory / name).read_bytes()
        assert ours == (media_root / reference.directory / name).read_bytes(), name


def test_a_killed_worker_is_swept_and_the_retry_builds_the_pool(fault_env: Any, manager: Any) -> None:
    queue, fault_dir, media_root = fault_env
    started = time.monotonic()
    pool = make_pool(name="campaign", build=False)
    api = client_for(manager)
    worker = Worker(queue, fault_dir, media_root)
    try:
        (fault_dir / "hold-build").touch()
        build = api.post(f"/api/pools/{pool.name}/build/").json()["id"]
        wait((fault_dir / "reached-build").exists, timeout=40, what="the build", worker=worker)
        worker.kill_all()  # the whole worker: no one is left to give the message back
        assert Pool.objects.get(pk=pool.pk).status == "building"
        assert api.post(f"/api/pools/{pool.name}/build/").status_code == 409
        assert jobs.sweep_stale_jobs() == 0  # its heartbeat is still fresh
        time.sleep(STALE + 0.5)
        assert jobs.sweep_stale_jobs() == 1
        job = Job.objects.get(pk=build)
        assert job.status == "failed" and "stopped: no heartbeat since" in job.errors[0]
        assert Pool.objects.get(pk=pool.pk).status == "failed" and not pool.items.exists()

        retry = api.post(f"/api/jobs/{build}/retry/")
        assert retry.status_code == 202
        worker = Worker(queue, fault_dir, media_root)
        job = wait(lambda: finished(retry.json()["id"]), timeout=40, what="the retry", worker=worker)
    finally:
        worker.stop()
    assert (job.status, job.errors, job.retry_of_id) == ("done", [], build)
    assert Pool.objects.get(pk=pool.pk).status == "built" and pool.items.exists()
    assert time.monotonic() - started < 60

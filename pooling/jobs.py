"""Jobs: starting, running, failing, retrying and sweeping the status rows of long tasks.

Every kind of job has one `start_*` service (imports, pool builds here; releases in `judgements.releases`);
each records a `Job` row and enqueues its task once that row is committed. A task takes the job's id and
calls `run_job`, which claims the job, stamps a heartbeat while it works and records the outcome.

What ends a job, whatever happens:
- the task finishes: `done`, or `failed` with the refusal's errors or the internal error;
- the process running it is killed: the broker gives the message back (acks late, reject on worker lost)
  and the task runs the job again from the start (every job is atomic and safe to re-run);
- the whole worker is gone: the job's heartbeat stops, and `sweep_stale_jobs` (beat, every minute) fails
  it with the reason, after JOB_STALE_SECONDS; a manager retries it;
- the broker is down when the job is enqueued: the job is failed at once with the reason and the caller
  gets `QueueUnavailable` (the API and pages answer 503); nothing is left queued for ever.
A failed build gives its pool back (`built` if an earlier build stands, else `failed`), so it can be built
again.

Over 400 lines on purpose: this is one state machine (queued → running → done/failed → retried), and its
start, claim, heartbeat, failure and sweep are read together or not understood at all.
"""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import close_old_connections, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from pooling.formats import client_name
from pooling.job_summary import JobSummary
from pooling.models import Collection, Job, Pool, Run

logger = logging.getLogger(__name__)

#: The task that runs each kind of job (looked up by name: the judging app's task is not imported here).
TASKS = {
    Job.Kind.DOCUMENTS: "pooling.tasks.import_file",
    Job.Kind.TOPICS: "pooling.tasks.import_file",
    Job.Kind.RUN: "pooling.tasks.import_file",
    Job.Kind.BUILD_POOL: "pooling.tasks.build_pool",
    Job.Kind.ADD_RUNS: "pooling.tasks.add_runs",
    Job.Kind.RELEASE: "judgements.tasks.create_release",
    Job.Kind.JUDGEMENTS: "judgements.tasks.import_crowd_labels",
    Job.Kind.CLICK_LOG: "online.tasks.import_click_log",
    Job.Kind.PROPENSITY: "online.tasks.estimate_propensity",
    Job.Kind.CLICK_LABELS: "online.tasks.derive_click_labels",
    Job.Kind.JUDGE: "evaluation.tasks.run_judge",
}

ACTIVE = (Job.Status.QUEUED, Job.Status.RUNNING)

#: What a job of a later app's kind made, as links on the job's page: `LINKS[kind](job, user)` gives a
#: `{"label", "url"}` for each page of it `user` may open, by that page's own rule, and none for another.
#: Filled by the app owning those pages in its `ready()` (`add_links`): pooling imports nothing of theirs.
JobLinks = Callable[[Job, Any], list[dict[str, str]]]
LINKS: dict[str, JobLinks] = {}


def add_links(kind: str, links: JobLinks) -> None:
    """Let the page of every job of `kind` link what it made, for a viewer who may open it (`LINKS`)."""
    LINKS[kind] = links


class QueueUnavailable(Exception):
    """The broker refused the job's task: the job is marked failed with the reason (`job.errors`)."""

    def __init__(self, job: Job, reason: str) -> None:
        super().__init__(reason)
        self.job = job
        self.reason = reason


class JobRefused(Exception):
    """A job cannot be started or retried now (the message says why); nothing changed."""


def _user(user: Any) -> Any:
    return user if user is not None and getattr(user, "is_authenticated", False) else None


# --------------------------------------------------------------------------------------------- starting


def enqueue(job: Job) -> None:
    """Send the task of `job`. A broker failure fails the job with the reason and raises QueueUnavailable.

    Called once the job row is committed (`transaction.on_commit`): in autocommit (a request, a command)
    that is at once, so the caller sees the exception.
    """
    from labeling.celery import app

    name = TASKS[Job.Kind(job.kind)]
    importlib.import_module(name.rpartition(".")[0])  # registers it (autodiscovery runs in workers only)
    task = app.tasks[name]
    if app.conf.task_always_eager:
        # In process (the embedded setup): the task runs here and records its own outcome; an error it
        # raises is the job's, not the queue's.
        task.apply_async(args=[job.pk])
        return
    try:
        task.apply_async(args=[job.pk])
    except Exception as exc:  # whatever stopped the message (broker down, refused, misconfigured)
        reason = f"the task queue is unreachable, the job was not queued ({exc}); retry it when it is back"
        logger.error("job %s: %s", job.pk, reason)
        fail_job(job=job, reason=reason)
        raise QueueUnavailable(job, reason) from exc


def start_job(
    *,
    kind: str,
    params: dict[str, Any],
    user: Any = None,
    collection: Collection | None = None,
    upload: str = "",
    upload_name: str = "",
    retry_of: Job | None = None,
) -> Job:
    """Record a job and enqueue its task once the row is committed (see `enqueue` for a broker failure).

    The common part of every `start_*` service; they validate, then call this.
    """
    with transaction.atomic():
        job = Job.objects.create(
            kind=kind,
            collection=collection,
            params=params,
            upload=upload,
            upload_name=upload_name,
            created_by=_user(user),
            retry_of=retry_of,
            message="queued",
        )
        transaction.on_commit(lambda: enqueue(job))
    return job


def start_import(*, collection: Collection, kind: str, upload: Any, params: dict[str, Any], user: Any) -> Job:
    """Store an uploaded file and start its import job (documents, topics or a run).

    A file up to IMPORT_CHECK_MAX_BYTES is first imported in a transaction that is rolled back: if it would
    fail, `Refused` carries the errors by line and nothing is stored (no job, no file). A larger file is
    checked by its job.
    """
    from pooling import imports, upload_checks

    name = client_name(upload.name)
    job = Job(kind=kind, collection=collection, params=params, upload_name=name)
    job.upload.save(name, upload, save=False)
    upload_checks.refuse_failing_upload(
        job=job,
        size=upload.size,
        work=lambda: imports.import_file(
            kind=kind, collection=collection, path=job.upload.path, display_name=name, params=params
        ),
    )
    return start_job(
        kind=kind,
        collection=collection,
        params=params,
        user=user,
        upload=job.upload.name or "",
        upload_name=name,
    )


def active_jobs_of(pool: Pool) -> QuerySet[Job]:
    """The queued or running jobs of `pool` (every job about a pool names it in `params["pool"]`: a build,
    runs added, a crowd import, a model judge, a release), newest first."""
    return Job.objects.filter(params__pool=pool.pk, status__in=ACTIVE).order_by("-created_at", "-pk")


def active_jobs_of_collection(collection: Collection) -> QuerySet[Job]:
    """The queued or running jobs of `collection` (every job that writes into a collection names it in
    `Job.collection`: its imports, its pools' builds and runs added, its click logs' imports and
    estimates), newest first."""
    return Job.objects.filter(collection=collection, status__in=ACTIVE).order_by("-created_at", "-pk")


def active_build(pool: Pool) -> Job | None:
    """The queued or running build job of `pool`, if any (the newest)."""
    return active_jobs_of(pool).filter(kind=Job.Kind.BUILD_POOL).first()


def latest_builds(pools: Iterable[Pool]) -> dict[int, Job]:
    """The newest build job of each of `pools` that has one, by pool id (`latest_build` for many)."""
    latest: dict[int, Job] = {}
    builds = Job.objects.filter(kind=Job.Kind.BUILD_POOL, params__pool__in=[pool.pk for pool in pools])
    for job in builds.order_by("created_at", "pk"):
        latest[job.params["pool"]] = job
    return latest


def latest_build(pool: Pool) -> Job | None:
    """The newest build job of `pool`, whatever its status."""
    return (
        Job.objects.filter(kind=Job.Kind.BUILD_POOL, params__pool=pool.pk)
        .order_by("-created_at", "-pk")
        .first()
    )


def start_build(*, pool: Pool, user: Any = None) -> Job:
    """Start a build job for `pool` (API, page, admin action, retry). With no broker (the embedded setup)
    the task runs in process when the transaction commits."""
    return start_job(
        kind=Job.Kind.BUILD_POOL,
        collection=pool.collection,
        params={"pool": pool.pk, "name": pool.name},
        user=user,
    )


def start_add_runs(*, pool: Pool, runs: list[Run], user: Any = None) -> Job:
    """Start a job adding `runs` to `pool` (a built pool gains only documents not already pooled); the
    runs are checked first, so a run of another collection is refused before any job exists."""
    from pooling import errors as pooling_errors

    foreign = [run.name for run in runs if run.collection_id != pool.collection_id]
    if foreign:
        raise pooling_errors.PoolError(
            f"runs not in collection {pool.collection.name!r}: {', '.join(foreign)}"
        )
    return start_job(
        kind=Job.Kind.ADD_RUNS,
        collection=pool.collection,
        params={"pool": pool.pk, "name": pool.name, "runs": [run.pk for run in runs]},
        user=user,
    )


def retry_refusal(*, job: Job, user: Any = None) -> PermissionDenied | JobRefused | None:
    """Why `job` may not be started again now (None: it may), the one rule `retry_job` keeps and a job's
    page asks before it offers Retry: PermissionDenied unless `user` may start it now
    (`Job.objects.retryable_by`: who may read a job may not always start it again; no user: no check);
    JobRefused unless the job failed, or while a build of the same pool is under way."""
    if user is not None and not Job.objects.retryable_by(user).filter(pk=job.pk).exists():
        return PermissionDenied(f"job {job.pk} is not yours to start again: manage its pool or collection")
    if job.status != Job.Status.FAILED:
        return JobRefused(f"job {job.pk} is {job.status}: only a failed job can be retried")
    if job.kind == Job.Kind.BUILD_POOL:
        running = Job.objects.filter(kind=job.kind, params__pool=job.params.get("pool"), status__in=ACTIVE)
        if running.exists():
            return JobRefused(f"the pool of job {job.pk} is being built already")
    return None


def retry_job(*, job: Job, user: Any = None) -> Job:
    """Start a failed job again, as a new job with the same kind, parameters and upload (`retry_of` says
    which); refused (PermissionDenied, JobRefused) as `retry_refusal` says."""
    if (refusal := retry_refusal(job=job, user=user)) is not None:
        raise refusal
    return start_job(
        kind=job.kind,
        collection=job.collection,
        params=dict(job.params),
        user=user,
        upload=job.upload.name or "",
        upload_name=job.upload_name,
        retry_of=job,
    )


# --------------------------------------------------------------------------------------------- running


class Heartbeat:
    """Stamps `heartbeat_at` of a running job every JOB_HEARTBEAT_SECONDS from a thread of its own (with its
    own database connection, so the stamp commits even while the job's work runs in a transaction)."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"heartbeat-{job_id}", daemon=True)

    def _beat(self) -> None:
        interval = settings.JOB_HEARTBEAT_SECONDS
        try:
            while not self.stopped.wait(interval):
                try:
                    Job.objects.filter(pk=self.job_id, status=Job.Status.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except Exception:  # a missed beat is not fatal; the next one may get through
                    logger.warning("job %s: heartbeat not recorded", self.job_id, exc_info=True)
                    close_old_connections()
        finally:
            connection.close()

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive_elsewhere(job: Job) -> bool:
    """Whether another live process of this host is running `job` (a second delivery of its message)."""
    host, _, pid = job.worker.rpartition(":")
    if host != socket.gethostname() or not pid.isdecimal() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def claim(job_id: int) -> Job | None:
    """Mark the job running for this attempt; None when there is nothing to run.

    A queued job is claimed. A running one is claimed again when its message came back because the process
    running it died (the broker redelivers it); not while its heartbeat is fresh and its worker is alive
    (a duplicate delivery), nor when it is done or failed (a failed job is retried as a new job).
    """
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status not in ACTIVE:
            return None
        if job.status == Job.Status.RUNNING and not _stale(job):
            same_host = job.worker.rpartition(":")[0] == socket.gethostname()
            if not same_host or _alive_elsewhere(job):
                logger.warning(
                    "job %s is running in %s already: this delivery is dropped", job.pk, job.worker
                )
                return None
        if job.status == Job.Status.RUNNING and job.attempts >= settings.JOB_MAX_ATTEMPTS:
            # the process running it died every time (out of memory?): a job that kills its worker must
            # not be delivered for ever
            fail_job(
                job=job,
                reason=f"the worker running this job died {job.attempts} times (last {job.worker}); "
                "it was not started again",
            )
            return None
        now = timezone.now()
        job.status = Job.Status.RUNNING
        job.started_at = now
        job.heartbeat_at = now
        job.attempts += 1
        job.worker = _worker_name()
        job.errors = []
        job.progress = 0.0
        job.message = "running" if job.attempts == 1 else f"running (attempt {job.attempts})"
        job.save(
            update_fields=[
                "status", "started_at", "heartbeat_at", "attempts", "worker", "errors", "progress", "message",
            ]
        )  # fmt: skip
    return job


def run_job(job_id: int, work: Callable[[Job], JobSummary], *, heartbeat: bool = True) -> None:
    """Claim job `job_id`, run `work(job)` and record status, progress, counts and errors on the job row:
    the counts are the summary's own (`JobSummary.as_dict`), its warnings beside them.

    Safe to run twice (see `claim`). With `heartbeat` (a real worker), a thread stamps the job while it
    runs; tasks run in process (eager) need none, they finish or fail with their caller.
    """
    from pooling import errors as pooling_errors

    job = claim(job_id)
    if job is None:
        return
    with Heartbeat(job.pk) if heartbeat else _nothing():
        try:
            summary = work(job)
        except pooling_errors.Refused as exc:
            fail_job(job=job, errors=exc.errors)
            return
        except Exception as exc:  # the status row must say what happened, whatever it was
            fail_job(job=job, errors=[f"internal error: {_client_message(exc)}"])
            raise
    job.report(
        status=Job.Status.DONE,
        progress=1.0,
        message="done",  # not the 'running' its claim wrote
        counts=(counts := summary.as_dict()),
        count_order=list(counts),  # (PostgreSQL's jsonb keeps the keys in an order of its own)
        warnings=list(summary.warnings),
        finished_at=timezone.now(),
    )


def _client_message(exc: Exception) -> str:
    """What an unexpected error tells the job's readers: a file the error names (an OSError's) by its
    `client_name`, never its path on the server."""
    if not isinstance(exc, OSError):
        return str(exc)
    files = [name for name in (exc.filename, exc.filename2) if name]
    if files and all(isinstance(name, str | os.PathLike) for name in files):
        return f"{exc.strerror or type(exc).__name__}: {', '.join(client_name(name) for name in files)}"
    return str(exc)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def job_task(work: Callable[[Job], JobSummary]) -> Any:
    """`@job_task` makes `work(job)` the Celery task of a kind of job: the task takes the job's id and runs
    `work` through `run_job` (a heartbeat in a real worker; a task run in process needs none). It keeps
    `work`'s module, name and docstring, so its name is the one `TASKS` enqueues."""
    from labeling.celery import shared_task

    def task(self: Any, job_id: int) -> None:
        run_job(job_id, work, heartbeat=not self.request.is_eager)

    task.__module__, task.__name__, task.__qualname__ = work.__module__, work.__name__, work.__qualname__
    task.__doc__ = work.__doc__
    return shared_task(bind=True)(task)


def job_progress(job: Job, *, scale: float = 1.0) -> Callable[[float, str], None]:
    """A service's progress callback that records on the job row, up to `scale` (what is left is the job's
    own work after the service's, or its being recorded done)."""
    return lambda fraction, message: job.report(progress=fraction * scale, message=message)


# --------------------------------------------------------------------------------------------- failing


def fail_job(*, job: Job, reason: str = "", errors: list[str] | None = None) -> None:
    """Mark `job` failed with its errors, and give back what it held: a build's pool leaves `building`
    (`built` if an earlier build stands, else `failed`), so it can be built again."""
    job.report(
        status=Job.Status.FAILED,
        message="failed",
        errors=errors if errors is not None else [reason],
        finished_at=timezone.now(),
    )
    if job.kind == Job.Kind.BUILD_POOL:
        pool = Pool.objects.filter(pk=job.params.get("pool"), status=Pool.Status.BUILDING).first()
        if pool is not None:
            pool.status = Pool.Status.BUILT if pool.built_at is not None else Pool.Status.FAILED
            pool.save(update_fields=["status"])


def _stale(job: Job) -> bool:
    stamp = job.heartbeat_at or job.started_at
    return stamp is None or stamp < timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS)


def sweep_stale_jobs() -> int:
    """Periodic (beat, every minute): fail each running job whose worker is gone (no heartbeat for
    JOB_STALE_SECONDS), with the reason, and give back what it held. Returns how many were failed."""
    bound = timezone.now() - timedelta(seconds=settings.JOB_STALE_SECONDS)
    failed = 0
    candidates = Job.objects.filter(status=Job.Status.RUNNING, heartbeat_at__lt=bound).values_list(
        "pk", flat=True
    )
    for job_id in list(candidates):
        with transaction.atomic():
            job = Job.objects.select_for_update(skip_locked=True).filter(pk=job_id).first()
            if job is None or job.status != Job.Status.RUNNING or not _stale(job):
                continue
            seen = (
                timezone.localtime(job.heartbeat_at).strftime("%Y-%m-%d %H:%M:%S %Z")
                if job.heartbeat_at
                else "?"
            )
            fail_job(
                job=job,
                reason=f"the worker running this job ({job.worker or 'unknown'}) stopped: no heartbeat since "
                f"{seen}; retry the job",
            )
            failed += 1
    return failed


# ----------------------------------------------------------------------------------------- temporary files


def remove_uploads_of(jobs: QuerySet[Job]) -> None:
    """Once the transaction commits, remove the files `jobs` stored for their uploads (a file, or a click
    log's folder of files), which are gone with them: what deleting their collection calls, since a job's
    row going does not take its file. Read now, removed only once the rows are gone for good (a rollback
    keeps both); a retry shares its job's file, which goes with the last of them."""
    names = set(jobs.exclude(upload="").values_list("upload", flat=True))
    if not names:
        return
    root = Path(settings.MEDIA_ROOT).resolve()

    def remove() -> None:
        for name in names:
            path = (root / name).resolve()
            if root not in path.parents:  # a name that would leave MEDIA_ROOT (none does) is left alone
                continue
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    transaction.on_commit(remove)


def remove_stale_workdirs(root: Path, *, prefix: str = ".tmp-") -> list[Path]:
    """Remove the work directories `root/<prefix>*` left by a job whose process died: those in which
    nothing changed for JOB_STALE_SECONDS (a live job writes on, and its heartbeat would be as old).
    Returns what was removed."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    bound = time.time() - settings.JOB_STALE_SECONDS
    for path in root.glob(f"{prefix}*"):
        if not path.is_dir():
            continue
        try:
            newest = max([path.stat().st_mtime, *(child.stat().st_mtime for child in path.iterdir())])
        except FileNotFoundError:  # removed meanwhile
            continue
        if newest < bound:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed

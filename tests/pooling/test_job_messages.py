"""A finished job's message says it finished: `GET /api/jobs/<id>/` of an import, a pool build or a failed
job does not say "running" once it is done or failed.

The message is the job row's (`Job.live`, read by `pooling.api.JobSerializer`); `jobs.claim` writes
"running" and neither `jobs.run_job`'s last report nor `jobs.fail_job` writes another, so the row keeps it.
The change belongs to pooling/jobs.py (a `message=` in both reports); until it is made these tests are
expected to fail (strict: once it is made, drop the marks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pooling import jobs
from pooling.errors import Refused
from pooling.job_summary import JobSummary, RecordCounts
from pooling.models import Job
from tests.conftest import client_for
from tests.factories import make_pool
from tests.pooling.test_jobs import upload_documents

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"

pytestmark = pytest.mark.django_db


def test_a_finished_import_does_not_say_running(manager, django_capture_on_commit_callbacks):
    pool = make_pool(name="p")
    api = client_for(manager)
    upload = upload_documents(api, pool.collection.name, django_capture_on_commit_callbacks)
    assert upload.status_code == 202, upload.content
    job = api.get(f"/api/jobs/{upload.json()['id']}/").json()
    assert job["status"] == "done"
    assert "running" not in job["message"]


def test_a_finished_build_does_not_say_running(manager, django_capture_on_commit_callbacks):
    pool = make_pool(name="p", build=False)
    api = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True):
        build = api.post("/api/pools/p/build/")
    assert build.status_code == 202, build.content
    job = api.get(f"/api/jobs/{build.json()['id']}/").json()
    assert job["status"] == "done" and pool.pk
    assert "running" not in job["message"]


def test_a_failed_job_does_not_say_running(manager):
    job = Job.objects.create(kind=Job.Kind.DOCUMENTS, params={}, created_by=manager, message="queued")

    def refuse(job: Job) -> None:
        raise Refused("nothing to import")

    jobs.run_job(job.pk, refuse, heartbeat=False)
    answer = client_for(manager).get(f"/api/jobs/{job.pk}/").json()
    assert answer["status"] == "failed" and answer["errors"] == ["nothing to import"]
    assert "running" not in answer["message"]


def test_it_names_a_file_an_internal_error_names_by_its_name_never_its_path(manager, settings):
    job = Job.objects.create(kind=Job.Kind.DOCUMENTS, params={}, created_by=manager, message="queued")
    gone = Path(settings.MEDIA_ROOT) / "uploads" / "2024" / "05" / "docs.jsonl"

    def lose_the_file(job: Job) -> JobSummary:
        return RecordCounts(counts={"bytes": len(gone.read_bytes())})  # it is not there

    with pytest.raises(FileNotFoundError):  # the worker's log keeps the whole error
        jobs.run_job(job.pk, lose_the_file, heartbeat=False)
    answer = client_for(manager).get(f"/api/jobs/{job.pk}/")
    assert answer.json()["errors"] == ["internal error: No such file or directory: docs.jsonl"]
    assert str(settings.MEDIA_ROOT) not in answer.content.decode()

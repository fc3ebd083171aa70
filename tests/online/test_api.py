"""The online API end to end (upload → job → log → θ → labels → release) and its 400s, each naming the
field; raters and other managers see none of it."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from online.jobs import click_files
from online.models import ClickLabelSet, ClickLog, PropensityEstimate
from pooling.models import Job
from tests.conftest import client_for
from tests.online.helpers import judged_pool

pytestmark = pytest.mark.django_db


def jsonl(pages: list[dict]) -> SimpleUploadedFile:
    return SimpleUploadedFile("clicks.jsonl", "".join(json.dumps(p) + "\n" for p in pages).encode())


PAGES = [
    {"session": f"s{i}", "qid": "q1", "docids": ["d001", "d003", "d002"], "clicks": [1] if i % 2 else [1, 2]}
    for i in range(40)
]


def test_a_manager_runs_the_whole_path_through_the_api(manager, django_capture_on_commit_callbacks) -> None:
    pool = judged_pool(grades={"d001": 3, "d003": 1}, managers=[manager])
    api = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            "/api/click-logs/",
            {
                "collection": pool.collection.name,
                "name": "week",
                "format": "jsonl",
                "pool": pool.name,
                "file": jsonl(PAGES),
            },
            format="multipart",
        )
    assert answer.status_code == 202, answer.json()
    job = Job.objects.get(pk=answer.json()["id"])
    assert job.status == Job.Status.DONE and job.kind == "click_log"
    log = ClickLog.objects.get(name="week")
    assert api.get(f"/api/click-logs/{log.pk}/queries/").json()["results"][0]["qid"] == "q1"
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            f"/api/click-logs/{log.pk}/propensities/",
            {"method": "given", "theta": [1, 0.5, 0.3]},
            format="json",
        )
    assert answer.status_code == 202
    estimate = PropensityEstimate.objects.get(log=log)
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(
            f"/api/click-logs/{log.pk}/labels/",
            {"estimator": "ips", "propensity": estimate.pk, "thresholds": "0.3:1,0.8:3"},
            format="json",
        )
    assert answer.status_code == 202, answer.json()
    label_set = ClickLabelSet.objects.get(log=log)
    detail = api.get(f"/api/click-labels/{label_set.pk}/").json()
    # d002, never clicked at position 3 (θ 0.3) in 40 pages: 12 examinations expected, a score possibly up
    # to 3.69 / 12 = 0.31 >= the first threshold, so no grade (not seen enough to be called irrelevant)
    assert detail["agreement"]["n"] == 2
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(f"/api/click-labels/{label_set.pk}/release/")
    assert answer.status_code == 201
    assert answer.json()["manifest"]["agreement_with_humans"]["kappa"] == detail["agreement"]["kappa"]


def test_bad_input_is_a_400_naming_the_field(manager, django_capture_on_commit_callbacks) -> None:
    pool = judged_pool(grades={}, managers=[manager])
    api = client_for(manager)
    name = pool.collection.name
    bad = api.post(
        "/api/click-logs/",
        {
            "collection": name,
            "name": "w",
            "format": "jsonl",
            "file": jsonl([*PAGES[:2], {"qid": "q1", "docids": ["d001"], "clicks": [2]}]),
        },
        format="multipart",
    )
    assert bad.status_code == 400
    assert bad.json()["file"] == ["clicks.jsonl:3: click on position 2, but only 1 results were shown"]
    assert not ClickLog.objects.exists() and not Job.objects.filter(kind="click_log").exists()
    ubi = api.post(
        "/api/click-logs/",
        {"collection": name, "name": "u", "format": "ubi", "file": jsonl(PAGES)},
        format="multipart",
    )
    assert ubi.status_code == 400 and "events" in ubi.json()
    with django_capture_on_commit_callbacks(execute=True):
        ok = api.post(
            "/api/click-logs/",
            {"collection": name, "name": "ok", "format": "jsonl", "pool": pool.name, "file": jsonl(PAGES)},
            format="multipart",
        )
    assert ok.status_code == 202, ok.json()
    log = ClickLog.objects.get(name="ok")
    theta = api.post(
        f"/api/click-logs/{log.pk}/propensities/", {"method": "given", "theta": [1, 1.5]}, format="json"
    )
    assert theta.status_code == 400 and "outside (0, 1]" in theta.json()["theta"][0]
    method = api.post(f"/api/click-logs/{log.pk}/propensities/", {"method": "magic"}, format="json")
    assert method.status_code == 400 and "method" in method.json()
    labels = api.post(
        f"/api/click-logs/{log.pk}/labels/", {"estimator": "ips", "propensity": 999999}, format="json"
    )
    assert labels.status_code == 400 and "propensity" in labels.json()
    grades = api.post(
        f"/api/click-logs/{log.pk}/labels/", {"estimator": "coec", "thresholds": "0.5:9"}, format="json"
    )
    assert grades.status_code == 400 and "not a grade of the rubric" in grades.json()["thresholds"][0]
    with django_capture_on_commit_callbacks(execute=True):
        no_gate = api.post(f"/api/click-logs/{log.pk}/labels/", {"estimator": "coec"}, format="json")
    assert no_gate.status_code == 202
    release = api.post(f"/api/click-labels/{ClickLabelSet.objects.get().pk}/release/")
    assert release.status_code == 400 and "agreement" in release.json()


def test_raters_and_other_managers_see_no_click_data(manager, rater, tmp_path) -> None:
    from django.contrib.auth.models import Group

    from pooling.permissions import MANAGERS_GROUP
    from tests.factories import make_user
    from tests.online.helpers import pool_log

    other = make_user("other-manager")
    other.groups.add(Group.objects.get(name=MANAGERS_GROUP))
    pool = judged_pool(grades={}, managers=[manager], rater=rater)
    pool.collection.managers.set([manager])
    log = pool_log(tmp_path, pool, PAGES)
    assert client_for(rater).get("/api/click-logs/").status_code == 403
    assert client_for(rater).get(f"/api/click-logs/{log.pk}/").status_code == 403
    assert client_for(other).get("/api/click-logs/").json()["results"] == []
    assert client_for(other).get(f"/api/click-logs/{log.pk}/").status_code == 404
    assert client_for(manager).get(f"/api/click-logs/{log.pk}/").status_code == 200
    page = client_for(rater)
    page.force_login(rater)
    assert page.get(f"/online/logs/{log.pk}/").status_code == 403


def test_a_click_log_expanding_past_the_check_limit_goes_to_its_job(manager, settings) -> None:
    """The web request reads at most IMPORT_CHECK_MAX_DECOMPRESSED_BYTES of an upload (a small gzip file
    may expand a thousandfold): a click log whose only bad line comes after that limit is not refused in
    the request (it would be, read whole) but queued, and its job finds the line."""
    import gzip

    from online import clicklogs
    from pooling.errors import ImportFailed

    settings.IMPORT_CHECK_MAX_DECOMPRESSED_BYTES = 1 << 16
    pool = judged_pool(grades={}, managers=[manager])
    good = "".join(json.dumps(page) + "\n" for page in PAGES * 100)  # ~400 kB, past the limit
    bad = json.dumps({"qid": "q1", "docids": ["d001"], "clicks": [2]}) + "\n"
    data = gzip.compress((good + bad).encode(), compresslevel=9)
    assert (
        len(data) < settings.IMPORT_CHECK_MAX_BYTES
        and len(good) > 4 * settings.IMPORT_CHECK_MAX_DECOMPRESSED_BYTES
    )
    response = client_for(manager).post(
        "/api/click-logs/",
        {
            "collection": pool.collection.name,
            "name": "big",
            "format": "jsonl",
            "file": SimpleUploadedFile("clicks.jsonl.gz", data),
        },
        format="multipart",
    )
    assert response.status_code == 202, response.content
    job = Job.objects.get(kind="click_log")
    assert job.status == Job.Status.QUEUED and not ClickLog.objects.exists()
    with pytest.raises(ImportFailed) as info:  # the job, in a worker, reads it whole
        clicklogs.import_click_log(
            collection=pool.collection,
            name="big",
            format="jsonl",
            paths=click_files(job),
            display_names=["clicks.jsonl.gz"],
        )
    assert [str(error) for error in info.value.errors] == [
        f"clicks.jsonl.gz:{len(PAGES) * 100 + 1}: click on position 2, but only 1 results were shown"
    ]


def test_it_names_a_click_logs_files_by_their_own_names_never_a_server_path(
    manager, tmp_path, settings, django_capture_on_commit_callbacks
) -> None:
    """The job's parameters (the API shows them) and the log's `source_file` name the files as their user
    gave them; where the server keeps them stays the server's (the job's upload, `click_files`)."""
    from online.clicklogs import import_click_log
    from tests.online.helpers import write_log

    pool = judged_pool(grades={}, managers=[manager])
    api = client_for(manager)
    fields = {"collection": pool.collection.name, "name": "week", "format": "jsonl", "file": jsonl(PAGES)}
    with django_capture_on_commit_callbacks() as queued:
        answer = api.post("/api/click-logs/", fields, format="multipart")
    assert answer.status_code == 202, answer.content
    job = api.get(f"/api/jobs/{answer.json()['id']}/")
    assert job.json()["params"]["names"] == ["clicks.jsonl"] and "paths" not in job.json()["params"]
    assert str(settings.MEDIA_ROOT) not in job.content.decode()
    for run in queued:  # the job, as a worker runs it, finds its files
        run()
    log = ClickLog.objects.get(name="week")
    assert Job.objects.get(pk=answer.json()["id"]).status == Job.Status.DONE
    assert api.get(f"/api/click-logs/{log.pk}/").json()["source_file"] == "clicks.jsonl"
    imported = import_click_log(  # the command line's: a path on the server, named by its file's name
        collection=pool.collection, name="cli", format="jsonl", paths=[write_log(tmp_path, PAGES)]
    )
    shown = api.get(f"/api/click-logs/{imported.pk}/")
    assert shown.json()["source_file"] == "log.jsonl" and str(tmp_path) not in shown.content.decode()

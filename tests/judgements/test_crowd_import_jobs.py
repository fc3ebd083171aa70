"""Importing crowd labels from the pool's manager page and the API: a job with the command's options and
its summary (every skipped row counted by reason) on the job page and in the API; a bad option is a 400
naming it, a bad line a 400 with FILE:LINE and nothing stored; only the pool's managers may."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from judgements import crowd_import
from judgements.models import Judgement
from pooling.models import Job, Pool
from tests.conftest import client_for
from tests.factories import make_manager, make_pool, make_user
from tests.judgements.test_crowd_import import CROWD, make_worker

BAD = "worker,qid,docid,label\nw1,q1,d001,2\nw2,q1,d001,high\n"


@pytest.fixture
def people(db: None) -> dict[str, Any]:
    make_worker("w1"), make_worker("w2")
    return {
        "manager": make_manager("crowd-manager"),
        "other_manager": make_manager("other-manager"),
        "rater": make_user("crowd-rater"),
    }


@pytest.fixture
def pool(people: dict[str, Any]) -> Pool:
    make_pool(name="elsewhere", managers=[people["other_manager"]])
    return make_pool(name="crowd", managers=[people["manager"]], raters=[people["rater"]])


def upload(text: str = CROWD, name: str = "crowd.tsv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode())


def post_api(user: User | None, data: dict[str, Any], capture: Any) -> Any:
    with capture(execute=True):
        return client_for(user).post("/api/judging/crowd/crowd-imports/", data, format="multipart")


def uploads_left(media: Path) -> list[Path]:
    return [p for p in media.rglob("*") if p.is_file()] if media.exists() else []


# ----------------------------------------------------------------------------------------------- the API


def test_it_imports_a_crowd_file_through_the_api_with_the_commands_options(
    people: dict[str, Any], pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    answer = post_api(
        people["manager"],
        {"file": upload(), "duplicates": "revisions", "unrateable_labels": "-2", "skip_unpooled": "true"},
        django_capture_on_commit_callbacks,
    )
    assert answer.status_code == 202, answer.content
    job = client_for(people["manager"]).get(f"/api/jobs/{answer.json()['id']}/").json()
    assert (job["kind"], job["status"]) == ("judgements", "done")
    counts = job["counts"]
    assert counts["skipped"] == {"negative label": 1, "unpooled": 1, "unknown worker": 1}
    assert (counts["rows"], counts["created"], counts["revised"], counts["unrateable"]) == (7, 3, 1, 1)
    assert counts["duplicate_rule"] == "revisions"
    broken = Judgement.objects.get(rater__username="w1", item__document__docid="d002")
    assert broken.unrateable and broken.grade is None
    assert Judgement.objects.get(rater__username="w1", item__document__docid="d001").revisions.count() == 1


def test_it_credits_no_persons_account_named_as_a_worker_through_the_api(
    people: dict[str, Any], pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    text = "worker,qid,docid,label\ncrowd-manager,q1,d001,2\ncrowd-rater,q1,d002,1\n"
    answer = post_api(
        people["manager"], {"file": upload(text, "mine.csv"), "create_raters": "true"},
        django_capture_on_commit_callbacks,
    )  # fmt: skip
    assert answer.status_code == 202, answer.content
    job = client_for(people["manager"]).get(f"/api/jobs/{answer.json()['id']}/").json()
    assert job["counts"]["raters_renamed"] == 2
    assert [w.split(":")[0] for w in job["warnings"]] == [
        "worker 'crowd-manager' has the account 'crowd-crowd-manager'",
        "worker 'crowd-rater' has the account 'crowd-crowd-rater'",
    ]
    assert not Judgement.objects.filter(rater__in=[people["manager"], people["rater"]]).exists()
    assert Judgement.objects.count() == 2


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"duplicates": "first"}, "duplicates"),
        ({"unrateable_labels": "-2,broken"}, "unrateable_labels"),
        ({"unrateable_labels": "2"}, "unrateable_labels"),  # a grade of the rubric is no special label
        ({"skip_unpooled": "maybe"}, "skip_unpooled"),
        ({}, "file"),
    ],
)
def test_a_bad_option_is_a_400_naming_it_and_stores_nothing(
    people: dict[str, Any],
    pool: Pool,
    data: dict[str, Any],
    field: str,
    django_capture_on_commit_callbacks: Any,
    media_root: Path,
) -> None:
    body = {"file": upload(), "skip_unpooled": "true", **data}
    if field == "file":
        del body["file"]
    answer = post_api(people["manager"], body, django_capture_on_commit_callbacks)
    assert answer.status_code == 400
    assert list(answer.json()) == [field]
    assert not Job.objects.exists() and not Judgement.objects.exists() and not uploads_left(media_root)


def test_a_bad_line_is_a_400_with_file_and_line_and_stores_nothing(
    people: dict[str, Any], pool: Pool, django_capture_on_commit_callbacks: Any, media_root: Path
) -> None:
    answer = post_api(people["manager"], {"file": upload(BAD, "bad.csv")}, django_capture_on_commit_callbacks)
    assert answer.status_code == 400
    assert answer.json() == {"file": ["bad.csv:3: label 'high' is not an integer"]}
    assert not Job.objects.exists() and not Judgement.objects.exists() and not uploads_left(media_root)
    # without skip_unpooled an unpooled row is an error of its line, too
    answer = post_api(people["manager"], {"file": upload()}, django_capture_on_commit_callbacks)
    assert answer.status_code == 400 and "crowd.tsv:7: q1 nope is not in pool crowd" in answer.json()["file"]
    assert not Judgement.objects.exists()


def test_a_file_too_large_to_check_at_once_fails_its_job_with_the_lines_and_stores_nothing(
    people: dict[str, Any], pool: Pool, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.IMPORT_CHECK_MAX_BYTES = 10
    answer = post_api(people["manager"], {"file": upload(BAD, "bad.csv")}, django_capture_on_commit_callbacks)
    assert answer.status_code == 202
    job = Job.objects.get(pk=answer.json()["id"])
    assert job.status == Job.Status.FAILED and job.errors == ["bad.csv:3: label 'high' is not an integer"]
    assert not Judgement.objects.exists()


@pytest.mark.parametrize(("who", "code"), [("anonymous", 401), ("rater", 403), ("other_manager", 404)])
def test_only_the_pools_managers_may_import_through_the_api(
    people: dict[str, Any], pool: Pool, who: str, code: int, django_capture_on_commit_callbacks: Any
) -> None:
    user = None if who == "anonymous" else people[who]
    answer = post_api(user, {"file": upload(), "skip_unpooled": "true"}, django_capture_on_commit_callbacks)
    assert answer.status_code == code
    assert not Job.objects.exists() and not Judgement.objects.exists()


# --------------------------------------------------------------------------------------------- the pages


def browser(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_a_manager_imports_from_the_pool_page_and_reads_the_summary_on_the_job_page(
    people: dict[str, Any], pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    client = browser(people["manager"])
    page = client.get("/manage/pools/crowd/crowd/")
    assert page.status_code == 200 and b'name="unrateable_labels"' in page.content
    assert b"/manage/pools/crowd/crowd/" in client.get("/manage/pools/crowd/").content  # linked from the nav
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/manage/pools/crowd/crowd/",
            {"file": upload(), "duplicates": "last", "unrateable_labels": "-2", "skip_unpooled": "on"},
        )
    job = Job.objects.get()
    assert answer.status_code == 302 and answer["Location"] == f"/jobs/{job.pk}/"
    shown = client.get(answer["Location"]).content.decode()
    assert "skipped: <strong>1 negative label, 1 unknown worker, 1 unpooled</strong>" in shown
    assert "unrateable: <strong>1</strong>" in shown and "/manage/pools/crowd/crowd/" in shown
    assert job.created_by == people["manager"] and Judgement.objects.count() == 3
    assert f"/jobs/{job.pk}/" in client.get("/manage/pools/crowd/crowd/").content.decode()  # recent imports


def test_the_page_shows_a_bad_line_and_a_bad_option_and_stores_nothing(
    people: dict[str, Any], pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    client = browser(people["manager"])
    with django_capture_on_commit_callbacks(execute=True):
        bad_line = client.post(
            "/manage/pools/crowd/crowd/", {"file": upload(BAD, "bad.csv"), "duplicates": "last"}
        )
        bad_option = client.post(
            "/manage/pools/crowd/crowd/", {"file": upload(), "duplicates": "last", "unrateable_labels": "1"}
        )
    assert bad_line.status_code == 400 and "bad.csv:3: label &#x27;high&#x27; is not an integer" in (
        bad_line.content.decode()
    )
    assert bad_option.status_code == 400 and bad_option.context["form"].errors["unrateable_labels"]
    assert not Job.objects.exists() and not Judgement.objects.exists()


@pytest.mark.parametrize(("who", "code"), [("anonymous", 302), ("rater", 403), ("other_manager", 404)])
def test_only_the_pools_managers_may_use_the_import_page(
    people: dict[str, Any], pool: Pool, who: str, code: int, django_capture_on_commit_callbacks: Any
) -> None:
    client = browser(None if who == "anonymous" else people[who])
    assert client.get("/manage/pools/crowd/crowd/").status_code == code
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/manage/pools/crowd/crowd/", {"file": upload(), "duplicates": "last"})
    assert answer.status_code == code
    if who == "anonymous":
        assert answer["Location"].startswith("/accounts/login/")
    assert not Job.objects.exists() and not Judgement.objects.exists()


def test_the_other_manager_does_not_see_the_job(
    people: dict[str, Any], pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    answer = post_api(
        people["manager"], {"file": upload(), "skip_unpooled": "true"}, django_capture_on_commit_callbacks
    )
    job_id = answer.json()["id"]
    assert client_for(people["other_manager"]).get(f"/api/jobs/{job_id}/").status_code == 404
    assert browser(people["other_manager"]).get(f"/jobs/{job_id}/").status_code == 404


# --------------------------------------------------------------------------------------------- the service


def test_the_import_reports_its_progress(pool: Pool, tmp_path: Path) -> None:
    path = tmp_path / "crowd.tsv"
    path.write_text(CROWD)
    seen: list[tuple[float, str]] = []
    crowd_import.import_crowd_judgements(
        pool=pool, path=path, skip_unpooled=True, progress=lambda f, m: seen.append((f, m))
    )
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.2 and "read 7 rows" in seen[0][1]
    assert any("stored 0 of" in m for _, m in seen)

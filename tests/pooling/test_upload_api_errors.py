"""`POST /api/collections/<name>/imports/` meets an upload's errors as the page does (one message each:
`imports.empty_upload`, `imports.run_name_taken`): an empty file is named; a run name the collection already
has is a 400 on `name`, before any job starts, however large the file (a large one is otherwise checked by its
job, after a 202); a file read in a guessed format says so. Nothing is stored for a refusal."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from pooling.models import Collection, Job, Run
from tests.conftest import client_for
from tests.factories import make_run
from tests.pooling import test_upload_page_errors as page_errors

pytestmark = pytest.mark.django_db

LINES = b"301 Q0 d02 1 5.0 new\n"


# the page's tests' collection: documents and topics the runs name
news = page_errors.news


def post(user: User, **data: object) -> Any:
    return client_for(user).post("/api/collections/news/imports/", data, format="multipart")


def test_an_empty_file_is_named(manager: User, news: Collection) -> None:
    answer = post(manager, kind="documents", file=SimpleUploadedFile("week-12.jsonl", b""))
    assert answer.status_code == 400
    assert answer.json() == {
        "file": [
            "The file 'week-12.jsonl' given as file is empty (0 bytes): there is nothing in it to import."
        ]
    }
    assert not Job.objects.exists()


@pytest.mark.parametrize("size_checked", [True, False], ids=["checked-at-once", "large"])
def test_a_taken_run_name_is_a_400_on_name_before_any_job(
    manager: User, news: Collection, size_checked: bool
) -> None:
    make_run(collection=news, name="gamma", lists={"301": ["d02"]})
    before = Job.objects.count()
    with override_settings(IMPORT_CHECK_MAX_BYTES=10**9 if size_checked else 1):
        named = post(manager, kind="run", name="gamma", file=SimpleUploadedFile("other.run", LINES))
        from_file = post(manager, kind="run", file=SimpleUploadedFile("gamma.txt", LINES))
    assert named.status_code == from_file.status_code == 400
    assert set(named.json()) == set(from_file.json()) == {"name"}
    assert "a run named 'gamma' already exists" in named.json()["name"][0]
    assert "the name is the file's ('gamma.txt'), as no name was given" in from_file.json()["name"][0]
    assert Job.objects.count() == before and Run.objects.filter(collection=news).count() == 1


def test_replace_lets_a_taken_name_through(manager: User, news: Collection) -> None:
    make_run(collection=news, name="gamma", lists={"301": ["d02"]})
    again = post(manager, kind="run", name="gamma", replace=True, file=SimpleUploadedFile("g.run", LINES))
    assert again.status_code == 202, again.content


def test_a_guessed_format_is_said_in_the_errors(manager: User, news: Collection) -> None:
    answer = post(manager, kind="documents", file=SimpleUploadedFile("more.data", b'{"docid": "x"}\n'))
    assert answer.status_code == 400
    assert "read as TREC SGML, a guess: the extension '.data'" in answer.json()["file"][0]


def test_others_may_not_upload(news: Collection) -> None:
    from tests.factories import make_manager, make_user

    for user in (make_manager("other"), make_user("a-rater")):
        assert post(user, kind="run", name="gamma", file=SimpleUploadedFile("g.run", LINES)).status_code in (
            403,
            404,
        )
    assert not Job.objects.exists()

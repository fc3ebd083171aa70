"""A crowd file's seconds: a finite number from 0 to the longest time a judgement may report
(`labels.MAX_SECONDS`, the judging page's bound), else an error on its line and nothing stored, through the
API, the command and the service alike."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from judgements import labels
from judgements.crowd_import import import_crowd_judgements
from judgements.models import Judgement
from pooling.errors import ImportFailed
from pooling.models import Job
from tests.conftest import client_for
from tests.factories import make_pool
from tests.judgements.test_crowd_import import make_worker

pytestmark = pytest.mark.django_db

BAD_SECONDS = ["NaN", "nan", "inf", "-inf", "-5", "-0.001", str(labels.MAX_SECONDS + 1), "1e400"]


def crowd(seconds: str) -> str:
    return f"worker\tqid\tdocid\tlabel\tseconds\nw1\tq1\td001\t2\t{seconds}\nw1\tq1\td002\t1\t3\n"


@pytest.fixture
def pool(manager):
    make_worker("w1")
    return make_pool(name="crowd", managers=[manager])


@pytest.mark.parametrize("seconds", BAD_SECONDS)
def test_the_api_refuses_seconds_out_of_bounds_on_their_line(
    manager, pool, seconds, django_capture_on_commit_callbacks
):
    upload = SimpleUploadedFile("crowd.tsv", crowd(seconds).encode())
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(
            "/api/judging/crowd/crowd-imports/", {"file": upload}, format="multipart"
        )
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"file": [f"crowd.tsv:2: seconds {seconds!r} is not a number from 0 to 86400"]}
    assert not Judgement.objects.exists() and not Job.objects.exists()


@pytest.mark.parametrize("seconds", BAD_SECONDS)
def test_the_command_and_the_service_refuse_them_too(pool, tmp_path, seconds):
    path = tmp_path / "crowd.tsv"
    path.write_text(crowd(seconds))
    with pytest.raises(ImportFailed, match=r"crowd.tsv:2: seconds .* is not a number from 0 to 86400"):
        import_crowd_judgements(pool=pool, path=path)
    with pytest.raises(CommandError, match="crowd.tsv:2: seconds"):
        call_command("import_judgements", "crowd", str(path), "--crowd")
    assert not Judgement.objects.exists()


@pytest.mark.parametrize(
    ("seconds", "stored"), [("0", 0.0), ("12.5", 12.5), ("86400", labels.MAX_SECONDS), ("", 0.0)]
)
def test_seconds_within_the_bounds_are_stored(pool, tmp_path, seconds, stored):
    path = tmp_path / "crowd.tsv"
    path.write_text(crowd(seconds))
    assert import_crowd_judgements(pool=pool, path=path).created == 2
    assert Judgement.objects.get(item__document__docid="d001").seconds == stored


def test_the_judging_page_and_the_services_keep_the_same_bound():
    from judgements import forms, submission

    assert forms.MAX_SECONDS == labels.MAX_SECONDS
    assert submission.Label.of({"grade": 1, "seconds": 10**9}).seconds == labels.MAX_SECONDS

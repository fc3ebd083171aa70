"""A crowd upload's errors name the file as the manager uploaded it (`c.csv:N`), every one of them: the
reader's own (a line that is not UTF-8) as the import's (a bad label), never the server's storage path."""

from __future__ import annotations

from typing import Any

from django.core.files.uploadedfile import SimpleUploadedFile

from judgements.models import Judgement
from tests.conftest import client_for
from tests.factories import make_manager, make_pool
from tests.judgements.test_crowd_import import make_worker


def test_a_line_that_is_not_utf8_is_a_400_naming_the_upload_and_its_line(
    db: None, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    manager = make_manager("crowd-manager")
    make_worker("w1")
    make_pool(name="crowd", managers=[manager])
    text = b"worker,qid,docid,label\nw1,q1,d001,2\nw1,q1,d002,\xff\n"
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(
            "/api/judging/crowd/crowd-imports/",
            {"file": SimpleUploadedFile("c.csv", text)},
            format="multipart",
        )
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"file": ["c.csv:3: invalid UTF-8 (byte 0xff at byte column 12)"]}
    assert str(settings.MEDIA_ROOT) not in answer.content.decode()
    assert not Judgement.objects.exists()

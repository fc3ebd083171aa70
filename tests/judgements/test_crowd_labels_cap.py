"""The crowd import's `unrateable_labels` has one cap (`crowd_import.MAX_LABELS_TEXT`, checked by
`crowd_import.parse_labels`): the command, the page's form and the API refuse a longer value with the
same message on the same field, and import nothing; a value of exactly the cap is taken."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from judgements import crowd_import
from judgements.crowd_import import MAX_LABELS_TEXT, CrowdOptionError, parse_labels
from judgements.models import Judgement
from pooling.models import Job
from tests.factories import make_manager, make_pool
from tests.judgements.test_crowd_import import CROWD, make_worker
from tests.judgements.test_crowd_import_jobs import browser, post_api, upload


@pytest.fixture
def manager_of_crowd(db: None) -> Any:
    """The manager of the pool `crowd`, into which the workers w1 and w2 may import."""
    make_worker("w1"), make_worker("w2")
    manager = make_manager("crowd-manager")
    make_pool(name="crowd", managers=[manager])
    return manager


def long_labels(n: int) -> str:
    """`n` characters of valid labels, with no spaces to strip."""
    text = "-2" + ",-3" * ((n - 2) // 3)
    text += "," * (n - len(text))  # empty parts are ignored by parse_labels
    assert len(text) == n
    return text


TOO_LONG = long_labels(MAX_LABELS_TEXT + 1)
MESSAGE = f"at most {MAX_LABELS_TEXT} characters, not {MAX_LABELS_TEXT + 1}"


def test_the_service_refuses_a_value_over_the_cap_on_its_field():
    assert parse_labels(long_labels(MAX_LABELS_TEXT)) == [-3, -2]
    assert parse_labels(f"  {long_labels(MAX_LABELS_TEXT)}  ") == [-3, -2]  # surrounding spaces aside
    with pytest.raises(CrowdOptionError) as refused:
        parse_labels(TOO_LONG)
    assert refused.value.field == "unrateable_labels" and refused.value.message == MESSAGE


def test_the_command_refuses_a_value_over_the_cap_and_changes_nothing(
    manager_of_crowd: Any, tmp_path: Path
) -> None:
    path = tmp_path / "crowd.tsv"
    path.write_text(CROWD)
    with pytest.raises(CommandError) as refused:
        call_command("import_judgements", "crowd", str(path), "--crowd", "--skip-unpooled",
                     f"--unrateable-labels={TOO_LONG}")  # fmt: skip
    assert str(refused.value) == f"nothing imported: unrateable_labels: {MESSAGE}"
    assert not Judgement.objects.exists() and not Job.objects.exists()
    call_command("import_judgements", "crowd", str(path), "--crowd", "--skip-unpooled",
                 f"--unrateable-labels={long_labels(MAX_LABELS_TEXT)}", stdout=io.StringIO())  # fmt: skip
    assert Judgement.objects.exists()


def test_the_api_and_the_form_refuse_it_with_the_same_message(
    manager_of_crowd: Any, django_capture_on_commit_callbacks: Any
) -> None:
    answer = post_api(
        manager_of_crowd,
        {"file": upload(), "skip_unpooled": "true", "unrateable_labels": TOO_LONG},
        django_capture_on_commit_callbacks,
    )
    assert answer.status_code == 400 and answer.json() == {"unrateable_labels": [MESSAGE]}
    client = browser(manager_of_crowd)
    page = client.post(
        "/manage/pools/crowd/crowd/",
        {"file": upload(), "duplicates": "last", "unrateable_labels": TOO_LONG, "skip_unpooled": "on"},
    )
    assert page.status_code == 400 and page.context["form"].errors["unrateable_labels"] == [MESSAGE]
    assert f'maxlength="{MAX_LABELS_TEXT}"' in client.get("/manage/pools/crowd/crowd/").content.decode()
    assert not Job.objects.exists() and not Judgement.objects.exists()
    ok = post_api(
        manager_of_crowd,
        {"file": upload(), "skip_unpooled": "true", "unrateable_labels": long_labels(MAX_LABELS_TEXT)},
        django_capture_on_commit_callbacks,
    )
    assert ok.status_code == 202, ok.content
    assert crowd_import.MAX_LABELS_TEXT == 200  # the cap the form and the API had

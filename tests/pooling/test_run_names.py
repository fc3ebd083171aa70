"""A run's name is written comma-separated (a pool's export) and put in URLs (a pool's runs in the API), so
it may hold no whitespace, ',', '/' or control character, and at most 200 characters: one rule
(`imports.check_run_name`), asked of a given name and of one taken from the file's name, by every way a run
is named — the command (a CommandError), the API (a 400 naming `name`), the collection page (an error
beside Name) and the admin — each refusing before anything is stored."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.forms import modelform_factory
from django.test import Client
from django.urls import reverse

from pooling.admin import RunAdminForm
from pooling.errors import PoolError
from pooling.imports import check_run_name
from pooling.models import Collection, Job, Run
from tests.conftest import client_for

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"
BAD_NAMES = ["c,d", "a/b", "x y", "tab\tbed", "line\nbreak", "bell\x07", "nbsp\xa0x", "x" * 201]


@pytest.fixture
def news(db: None, manager: Any) -> Collection:
    call_command("create_collection", "news", owner="manager")
    call_command("import_documents", "news", str(GOOD / "docs.jsonl"))
    call_command("import_topics", "news", str(GOOD / "topics.jsonl"))
    return Collection.objects.get(name="news")


def spaced_file(tmp_path: Path) -> Path:
    """A good run file whose name gives a run name with a space."""
    path = tmp_path / "my run.txt"
    shutil.copy(GOOD / "run_a.txt", path)
    return path


def upload(name: str = "run_a.txt") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (GOOD / "run_a.txt").read_bytes())


# ------------------------------------------------------------------------------------------ the one rule


@pytest.mark.parametrize(
    "name", ["alpha", "gamma.v2", "run_a", "rrf-bm25-tfidf", "bm25", "Ab", "runA", "ünï-名+1@x", "x" * 200]
)
def test_it_takes_the_names_runs_have_had(name: str) -> None:
    assert check_run_name(name=name, file_name="whatever.txt") == name


def test_it_takes_a_name_from_the_file_without_its_extensions() -> None:
    assert check_run_name(name=None, file_name="/tmp/up/run_b.txt.gz") == "run_b"
    assert check_run_name(name="", file_name="bm25.txt") == "bm25"


@pytest.mark.parametrize("name", BAD_NAMES)
def test_it_refuses_a_name_that_breaks_the_export_or_a_url_naming_the_field(name: str) -> None:
    with pytest.raises(PoolError) as refused:
        check_run_name(name=name, file_name="run_a.txt")
    (message,) = refused.value.fields["name"]
    assert message.startswith("the run name ") and "no whitespace, ',', '/' or control character" in message
    assert str(refused.value) == message


def test_it_says_what_is_wrong_with_a_name() -> None:
    with pytest.raises(PoolError, match=r"'c,d' holds ','"):
        check_run_name(name="c,d", file_name="")
    with pytest.raises(PoolError, match=r"holds '\\n'"):
        check_run_name(name="line\nbreak", file_name="")
    with pytest.raises(PoolError, match="is 201 characters long: a run's name is at most 200 characters"):
        check_run_name(name="x" * 201, file_name="")
    with pytest.raises(PoolError, match="is empty"):
        check_run_name(name=None, file_name=".txt")


def test_a_name_from_the_file_says_how_to_give_one() -> None:
    with pytest.raises(PoolError) as refused:
        check_run_name(name=None, file_name="/uploads/my run.txt")
    (message,) = refused.value.fields["name"]
    assert message.startswith("the run name 'my run', from the file name 'my run.txt', holds ' '")
    assert message.endswith("Give the run a name (--name, the form's Name, the API's name)")


# -------------------------------------------------------------------------------------------- the command


@pytest.mark.parametrize("name", ["c,d", "a/b", "x y"])
def test_the_command_refuses_a_bad_name_and_imports_nothing(news: Collection, name: str) -> None:
    with pytest.raises(CommandError, match=f"the run name {name!r} holds"):
        call_command("import_run", "news", str(GOOD / "run_a.txt"), "--name", name)
    assert not Run.objects.exists()


def test_the_command_refuses_a_bad_name_from_the_file_and_suggests_name(
    news: Collection, tmp_path: Path
) -> None:
    path = spaced_file(tmp_path)
    with pytest.raises(CommandError, match=r"from the file name 'my run.txt', holds ' '.*--name"):
        call_command("import_run", "news", str(path))
    assert not Run.objects.exists()
    call_command("import_run", "news", str(path), "--name", "my-run")
    assert list(Run.objects.values_list("name", "num_rows")) == [("my-run", 10)]


# ------------------------------------------------------------------------------------------------ the API


@pytest.mark.parametrize("big", [False, True])
def test_the_api_answers_400_naming_name_and_stores_nothing(
    news: Collection, manager: Any, settings: Any, django_capture_on_commit_callbacks: Any, big: bool
) -> None:
    if big:  # a file too large to check at once is refused at once all the same: no job
        settings.IMPORT_CHECK_MAX_BYTES = 0
    api = client_for(manager)
    with django_capture_on_commit_callbacks(execute=True):
        given = api.post(
            "/api/collections/news/imports/",
            {"kind": "run", "file": upload(), "name": "c,d"},
            format="multipart",
        )
        from_file = api.post(
            "/api/collections/news/imports/",
            {"kind": "run", "file": upload("my run.txt")},
            format="multipart",
        )
    assert given.status_code == from_file.status_code == 400
    assert list(given.json()) == list(from_file.json()) == ["name"]
    assert given.json()["name"][0].startswith("the run name 'c,d' holds ','")
    assert "Give the run a name" in from_file.json()["name"][0]
    assert not Job.objects.exists() and not Run.objects.exists()


def test_the_api_imports_a_good_name(
    news: Collection, manager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(
            "/api/collections/news/imports/",
            {"kind": "run", "file": upload("my run.txt"), "name": "my-run"},
            format="multipart",
        )
    assert answer.status_code == 202, answer.content
    assert list(Run.objects.values_list("name", flat=True)) == ["my-run"]


# ----------------------------------------------------------------------------------------------- the page


def test_the_collection_page_shows_the_error_beside_name_and_stores_nothing(
    news: Collection, manager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = Client()
    client.force_login(manager)
    url = reverse("setup:collection", kwargs={"name": "news"})
    with django_capture_on_commit_callbacks(execute=True):
        given = client.post(url, {"kind": "run", "file": upload(), "name": "a/b"})
        from_file = client.post(url, {"kind": "run", "file": upload("my run.txt")})
    assert given.context["form"].errors["name"][0].startswith("the run name 'a/b' holds '/'")
    assert "Give the run a name" in from_file.context["form"].errors["name"][0]
    assert "the run name &#x27;a/b&#x27; holds" in given.content.decode()
    assert not Job.objects.exists() and not Run.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        good = client.post(url, {"kind": "run", "file": upload("my run.txt"), "name": "my-run"})
    assert good.status_code == 302 and list(Run.objects.values_list("name", flat=True)) == ["my-run"]


# ---------------------------------------------------------------------------------------------- the admin


def test_the_admin_refuses_a_bad_new_name_and_keeps_an_old_one(news: Collection) -> None:
    form_class = modelform_factory(Run, form=RunAdminForm, fields=["name", "description"])
    run = Run.objects.create(collection=news, name="old name")  # stored before the rule
    renamed = form_class({"name": "c,d", "description": ""}, instance=run)
    assert not renamed.is_valid() and str(renamed.errors["name"][0]).startswith("the run name 'c,d' holds")
    described = form_class({"name": "old name", "description": "kept"}, instance=run)
    assert described.is_valid(), described.errors
    assert form_class({"name": "new-name", "description": ""}, instance=run).is_valid()

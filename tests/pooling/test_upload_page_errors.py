"""The collection page's upload (`setup:collection`), as a manager meets its errors: each says what is wrong
where the manager will look for it, and a refused upload stores nothing (no job, no rows).

- An empty file is named, with the field it was given in (Django's own words named neither).
- A file whose extension names no format is read as TREC SGML (`formats.format_guess`, the one rule of a
  file's format from its name); when that fails, the errors say the format was a guess and which
  extensions name one, whether the upload is checked at once or by its job.
- A run whose name the collection already has is refused beside Name, not File, saying when the name was
  the file's because none was given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from pooling import formats
from pooling.models import Collection, Job, Run

pytestmark = pytest.mark.django_db

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"
KNOWN_DOCUMENTS = ".jsonl, .json, .tsv, .txt, .trec, .sgml, .xml"


@pytest.fixture
def news(manager: User) -> Collection:
    """A collection the manager manages, with the documents and topics the good runs name."""
    call_command("create_collection", "news", owner="manager")
    call_command("import_documents", "news", str(GOOD / "docs.jsonl"))
    call_command("import_topics", "news", str(GOOD / "topics.jsonl"))
    return Collection.objects.get(name="news")


def post_upload(manager: User, capture: Any, **fields: Any) -> Any:  # the test client's response
    client = Client()
    client.force_login(manager)
    with capture(execute=True):  # a job, if one starts, runs once its row is committed
        return client.post(reverse("setup:collection", kwargs={"name": "news"}), fields)


def stored(collection: Collection) -> tuple[int, int, list[str]]:
    names = sorted(collection.runs.values_list("name", flat=True))
    return collection.documents.count(), collection.topics.count(), names


def a_run(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (GOOD / "run_a.txt").read_bytes())


# ------------------------------------------------------------------------------------------ an empty file


@pytest.mark.parametrize("kind", ["documents", "topics", "run"])
def test_it_names_an_empty_file_and_the_field_it_was_given_in(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any, kind: str
) -> None:
    before = stored(news)
    empty = SimpleUploadedFile("week-12.jsonl", b"")

    response = post_upload(manager, django_capture_on_commit_callbacks, kind=kind, file=empty)

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == ["file"]
    assert errors["file"] == [
        "The file 'week-12.jsonl' given as File is empty (0 bytes): there is nothing in it to import."
    ]
    assert "The file &#x27;week-12.jsonl&#x27; given as File is empty" in response.content.decode()
    assert not Job.objects.exists() and stored(news) == before


# ---------------------------------------------------------------------------------- a guessed format


def test_the_format_is_chosen_from_the_name_by_one_rule() -> None:
    """`format_guess`: a known extension names the format and needs no word; any other, or none, is read
    as TREC SGML with the reason the errors will give."""
    assert formats.format_guess("docs.jsonl.GZ", "documents") == ("jsonl", None)
    assert formats.format_guess("docs.txt", "documents") == ("tsv", None)
    assert formats.format_guess("docs.sgml", "documents") == ("trec", None)
    assert formats.format_guess("run.txt", "run") == ("trec", None)
    fmt, why = formats.format_guess("uploads/docs.data.gz", "documents")
    assert fmt == "trec"
    assert why is not None and why.startswith(
        f"read as TREC SGML, a guess: the extension '.data' is not one of {KNOWN_DOCUMENTS}; give the format"
    )
    fmt, why = formats.format_guess("disk4/ft/FT911_1", "documents")
    assert fmt == "trec" and why is not None and "the name has no extension" in why
    fmt, why = formats.format_guess(
        "topics.txt", "topics"
    )  # a topics file's .txt names no format: TREC is a guess
    assert fmt == "trec" and why is not None and "'.txt' is not one of .jsonl, .json, .tsv," in why


@pytest.mark.parametrize("big", [False, True], ids=["checked-at-once", "checked-by-its-job"])
def test_an_unknown_extension_read_as_trec_says_so_when_reading_fails(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any, settings: Any, big: bool
) -> None:
    if big:  # too large to check in the request: the job reads it and fails with the same errors
        settings.IMPORT_CHECK_MAX_BYTES = 0
    before = stored(news)
    misnamed = SimpleUploadedFile("more-docs.data", (GOOD / "docs.jsonl").read_bytes())

    response = post_upload(manager, django_capture_on_commit_callbacks, kind="documents", file=misnamed)

    if big:
        assert response.status_code == 302
        job = Job.objects.get()
        assert job.status == Job.Status.FAILED
        errors = list(job.errors)
        page = Client()
        page.force_login(manager)
        shown = page.get(response["Location"]).content.decode()
        assert "read as TREC SGML, a guess: the extension &#x27;.data&#x27; is not one of" in shown
    else:
        assert response.status_code == 200 and not Job.objects.exists()
        errors = response.context["form"].errors["file"]
    assert errors[0] == (
        f"more-docs.data: read as TREC SGML, a guess: the extension '.data' is not one of {KNOWN_DOCUMENTS}; "
        "give the format if the file is in another (--format, the upload form's Format, the API's format)"
    )
    assert errors[1] == "more-docs.data:1: text outside <DOC> … </DOC>"
    assert stored(news) == before


def test_a_file_whose_extension_names_its_format_gets_no_word_of_a_guess(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any
) -> None:
    """JSON lines in a `.sgml` file: the name says TREC SGML, and the errors are the reader's alone."""
    misnamed = SimpleUploadedFile("more-docs.sgml", (GOOD / "docs.jsonl").read_bytes())

    response = post_upload(manager, django_capture_on_commit_callbacks, kind="documents", file=misnamed)

    errors = response.context["form"].errors["file"]
    assert errors[0] == "more-docs.sgml:1: text outside <DOC> … </DOC>"
    assert not any("a guess" in error for error in errors)


def test_a_topics_file_read_as_trec_by_a_guess_says_so(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any
) -> None:
    """TSV topics in a `.txt` file: for topics `.txt` names no format, so TREC was a guess."""
    misnamed = SimpleUploadedFile("more-topics.txt", (GOOD / "topics.tsv").read_bytes())

    response = post_upload(manager, django_capture_on_commit_callbacks, kind="topics", file=misnamed)

    errors = response.context["form"].errors["file"]
    assert errors[0].startswith(
        "more-topics.txt: read as TREC SGML, a guess: the extension '.txt' is not one"
    )
    assert errors[1] == "more-topics.txt:1: text outside <top> … </top>"


def test_a_format_given_is_no_guess(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any
) -> None:
    misnamed = SimpleUploadedFile("more-docs.data", (GOOD / "docs.jsonl").read_bytes())

    response = post_upload(
        manager, django_capture_on_commit_callbacks, kind="documents", file=misnamed, format="trec"
    )

    errors = response.context["form"].errors["file"]
    assert errors[0] == "more-docs.data:1: text outside <DOC> … </DOC>"
    assert not any("a guess" in error for error in errors)


# ------------------------------------------------------------------------------------- a run name taken


@pytest.mark.parametrize("big", [False, True], ids=["checked-at-once", "too-large-to-check"])
def test_a_run_name_taken_is_refused_beside_name(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any, settings: Any, big: bool
) -> None:
    call_command("import_run", "news", str(GOOD / "run_a.txt"), name="bm25")
    if big:  # refused before any job starts, however large the file
        settings.IMPORT_CHECK_MAX_BYTES = 0
    before = stored(news)

    response = post_upload(
        manager, django_capture_on_commit_callbacks, kind="run", file=a_run("run_b.txt"), name="bm25"
    )

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == ["name"]
    assert errors["name"] == [
        "a run named 'bm25' already exists (to replace its rows: --replace, the upload form's Replace, the "
        "API's replace)"
    ]
    assert not Job.objects.exists() and stored(news) == before


def test_a_run_name_taken_from_the_file_says_it_was_the_files(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any
) -> None:
    call_command("import_run", "news", str(GOOD / "run_a.txt"))  # run run_a
    before = stored(news)

    response = post_upload(manager, django_capture_on_commit_callbacks, kind="run", file=a_run("run_a.txt"))

    errors = response.context["form"].errors
    assert list(errors) == ["name"]
    (message,) = errors["name"]
    assert message.startswith(
        "a run named 'run_a' already exists: the name is the file's ('run_a.txt'), as no name was given"
    )
    assert "give the run another name: --name, the form's Name, the API's name" in message
    assert not Job.objects.exists() and stored(news) == before


def test_a_run_name_taken_is_taken_with_replace_or_another_name(
    news: Collection, manager: User, django_capture_on_commit_callbacks: Any
) -> None:
    call_command("import_run", "news", str(GOOD / "run_a.txt"), name="bm25")

    replaced = post_upload(
        manager, django_capture_on_commit_callbacks, kind="run", file=a_run("run_a.txt"), name="bm25",
        replace="on",
    )  # fmt: skip
    other = post_upload(
        manager, django_capture_on_commit_callbacks, kind="run", file=a_run("run_a.txt"), name="bm25-b"
    )

    assert replaced.status_code == other.status_code == 302
    assert set(Job.objects.values_list("status", flat=True)) == {Job.Status.DONE}
    assert sorted(Run.objects.values_list("name", flat=True)) == ["bm25", "bm25-b"]


def test_the_command_words_a_taken_name_from_the_file_the_same_way(news: Collection) -> None:
    """One rule (`imports.run_name_taken`): the import, whoever calls it, says what the page says."""
    from django.core.management.base import CommandError

    call_command("import_run", "news", str(GOOD / "run_a.txt"))
    with pytest.raises(CommandError, match=r"the name is the file's \('run_a\.txt'\), as no name was given"):
        call_command("import_run", "news", str(GOOD / "run_a.txt"))

"""One rule for an import, whichever way the file comes: the collection page's upload form, the API's
`POST /api/collections/<name>/imports/` and the import commands take the same files, refuse the same ones
with the same `FILE:LINE` errors, and name a run the same way. Each edge case (a gzipped file, an unknown
extension, an empty file, a file too large to check at once, a name with a dot, a blank name or format (a
browser sends an empty field as ""), a name over the limit, a `.GZ` in capitals) is sent all three ways
and the outcomes compared. And one rule for who sees a job: the collection page lists only the jobs whose
pages its viewer may open, and a job's page offers Retry only to who may retry it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from pooling import formats
from pooling.api import ImportSerializer
from pooling.forms import UploadForm
from pooling.management.commands import import_documents, import_topics
from pooling.models import Collection, Job
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool

pytestmark = pytest.mark.django_db

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"
BAD = GOOD.parent / "bad"
COMMANDS = {"documents": "import_documents", "topics": "import_topics", "run": "import_run"}

Outcome = tuple[str, object]


def _collection(name: str, *, with_topics: bool) -> Collection:
    call_command("create_collection", name, owner="manager")
    if with_topics:  # a run names the collection's topics and documents
        call_command("import_documents", name, str(GOOD / "docs.jsonl"))
        call_command("import_topics", name, str(GOOD / "topics.jsonl"))
    return Collection.objects.get(name=name)


def _stored(collection: Collection) -> object:
    return (
        collection.documents.count(),
        collection.topics.count(),
        sorted(collection.runs.values_list("name", "num_rows")),
    )


def _finished(job: Job, collection: Collection) -> Outcome:
    job.refresh_from_db()
    if job.status == Job.Status.DONE:
        return "stored", _stored(collection)
    return "refused", list(job.errors)


def by_command(collection: Collection, kind: str, path: Path, fields: dict[str, str]) -> Outcome:
    try:
        call_command(COMMANDS[kind], collection.name, str(path), **fields)
    except CommandError as exc:
        lines = str(exc).removeprefix("nothing imported:\n").replace(f"{path.parent}/", "").splitlines()
        return "refused", lines
    return "stored", _stored(collection)


def by_api(user: User, collection: Collection, kind: str, path: Path, fields: dict[str, str]) -> Outcome:
    upload = SimpleUploadedFile(path.name, path.read_bytes())
    answer = client_for(user).post(
        f"/api/collections/{collection.name}/imports/", {"kind": kind, "file": upload, **fields}, "multipart"
    )
    if answer.status_code == 400:
        return "refused", [message for messages in answer.json().values() for message in messages]
    assert answer.status_code == 202, answer.content
    return "job", Job.objects.get(pk=answer.json()["id"])


def by_page(user: User, collection: Collection, kind: str, path: Path, fields: dict[str, str]) -> Outcome:
    client = Client()
    client.force_login(user)
    upload = SimpleUploadedFile(path.name, path.read_bytes())
    url = reverse("setup:collection", kwargs={"name": collection.name})
    response = client.post(url, {"kind": kind, "file": upload, **fields})
    if response.status_code == 200:
        return "refused", [
            message for messages in response.context["form"].errors.values() for message in messages
        ]
    assert response.status_code == 302, response.status_code
    return "job", Job.objects.get(pk=response["Location"].rstrip("/").rsplit("/", 1)[1])


def three_ways(
    manager: User,
    tmp_path: Path,
    kind: str,
    file_name: str,
    data: bytes,
    fields: dict[str, str],
    capture: Any,
) -> dict[str, Outcome]:
    """The outcome of one upload by the command, the API and the page, each into a collection of its own."""
    path = tmp_path / file_name
    path.write_bytes(data)
    outcomes: dict[str, Outcome] = {}
    for way in ("command", "api", "page"):
        collection = _collection(f"news-{way}", with_topics=kind == "run")
        if way == "command":
            outcomes[way] = by_command(collection, kind, path, fields)
            continue
        with capture(execute=True):  # the job runs once its row is committed
            outcome = (by_api if way == "api" else by_page)(manager, collection, kind, path, fields)
        outcomes[way] = _finished(outcome[1], collection) if outcome[0] == "job" else outcome  # type: ignore[arg-type]  # a job outcome's second item is its id
    return outcomes


CASES = {
    "gzipped documents": ("documents", "docs.jsonl.gz", (GOOD / "docs.jsonl.gz").read_bytes(), {}),
    "an unknown extension (read as TREC SGML)": (
        "documents", "docs.data", (GOOD / "docs.jsonl").read_bytes(), {},
    ),
    "an empty file": ("documents", "docs.jsonl", (BAD / "docs_empty.jsonl").read_bytes(), {}),
    "topics in TSV": ("topics", "topics.tsv", (GOOD / "topics.tsv").read_bytes(), {}),
    "a run whose file name has dots": ("run", "my.run.v2.txt", (GOOD / "run_a.txt").read_bytes(), {}),
    "a run naming an unknown topic": (
        "run", "run.txt", (BAD / "run_unknown_topic.txt").read_bytes(), {},
    ),
    "a run gzipped, .GZ in capitals": ("run", "run_b.txt.GZ", (GOOD / "run_b.txt.gz").read_bytes(), {}),
    "a run with a blank name": ("run", "run_a.txt", (GOOD / "run_a.txt").read_bytes(), {"name": ""}),
    "documents with a blank format": (
        "documents", "docs.jsonl", (GOOD / "docs.jsonl").read_bytes(), {"format": ""},
    ),
    "documents with a format given": (
        "documents", "docs.txt", (GOOD / "docs.jsonl").read_bytes(), {"format": "jsonl"},
    ),
    "a run name over the limit": ("run", "run_a.txt", (GOOD / "run_a.txt").read_bytes(), {"name": "x" * 201}),
    "a run name with spaces around it": (
        "run", "run_a.txt", (GOOD / "run_a.txt").read_bytes(), {"name": " run-1 "},
    ),
    "a run name of spaces": ("run", "run_a.txt", (GOOD / "run_a.txt").read_bytes(), {"name": "  "}),
    "a run name with a slash": ("run", "run_a.txt", (GOOD / "run_a.txt").read_bytes(), {"name": "a/b"}),
}  # fmt: skip


@pytest.mark.parametrize("big", [False, True], ids=["checked-at-once", "too-large-to-check"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_page_the_api_and_the_command_agree_on_an_upload(
    manager: User,
    tmp_path: Path,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
    case: str,
    big: bool,
) -> None:
    """The same file with the same fields: stored alike (the same counts, the same run names) or refused
    alike (the same messages, the file named by its own name), whether the upload is checked before its
    job starts or by the job."""
    if big:
        settings.IMPORT_CHECK_MAX_BYTES = 0
    kind, file_name, data, fields = CASES[case]
    outcomes = three_ways(
        manager, tmp_path, kind, file_name, data, fields, django_capture_on_commit_callbacks
    )
    assert outcomes["api"] == outcomes["command"], outcomes
    assert outcomes["page"] == outcomes["command"], outcomes


def test_a_run_is_named_by_its_file_the_same_way_whatever_the_gz_suffixs_case(
    manager: User, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """`.gz` is read whatever its case (`formats.open_binary`, `format_guess`); a run's name from the file
    drops it the same way: `run_b.txt.GZ` is run `run_b`, as `run_b.txt.gz` is, not `run_b.txt`."""
    data = (GOOD / "run_b.txt.gz").read_bytes()
    outcomes = three_ways(
        manager, tmp_path, "run", "run_b.txt.GZ", data, {}, django_capture_on_commit_callbacks
    )
    assert outcomes["command"] == ("stored", (12, 3, [("run_b", 9)])), outcomes
    assert outcomes["api"] == outcomes["page"] == outcomes["command"]


def test_a_run_name_over_the_limit_is_refused_by_the_one_rule_everywhere(
    manager: User, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """201 characters: the page and the API said it in their fields' own words (Django's, DRF's), the
    command by the rule of a run's name; now all three give the rule (`imports.check_run_name`)."""
    outcomes = three_ways(
        manager, tmp_path, "run", "run_a.txt", (GOOD / "run_a.txt").read_bytes(), {"name": "x" * 201},
        django_capture_on_commit_callbacks,
    )  # fmt: skip
    status, messages = outcomes["command"]
    assert status == "refused" and "is 201 characters long: a run's name is at most 200" in messages[0]  # type: ignore[index]  # a refusal's second item is its messages
    assert outcomes["api"] == outcomes["page"] == outcomes["command"]


def test_a_run_name_is_trimmed_and_a_blank_one_is_the_files_everywhere(
    manager: User, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """A form's field trims what is typed: `' run-1 '` was run `run-1` on the page and in the API but refused
    by the command (whitespace); `'  '` was the file's name on the page, a 400 in the API ("may not be
    blank") and refused by the command. Now the rule (`imports.check_run_name`) trims, and a blank name is
    the file's, whichever way."""
    data = (GOOD / "run_a.txt").read_bytes()
    for given, stored in ((" run-1 ", "run-1"), ("  ", "run_a")):
        outcomes = three_ways(
            manager, tmp_path, "run", "run_a.txt", data, {"name": given}, django_capture_on_commit_callbacks
        )
        assert outcomes["command"] == ("stored", (12, 3, [(stored, 10)])), outcomes
        assert outcomes["api"] == outcomes["page"] == outcomes["command"]
        Collection.objects.all().delete()


def test_the_formats_offered_are_the_readers() -> None:
    """The formats the form, the API and the commands offer are the readers' own (`DOCUMENT_FORMATS`,
    `TOPIC_FORMATS`), not lists of their own."""
    readers = set(formats.DOCUMENT_FORMATS) | set(formats.TOPIC_FORMATS)
    offered = {value for value, _ in UploadForm.base_fields["format"].choices if value}  # type: ignore[attr-defined]  # a ChoiceField's choices
    assert offered == set(ImportSerializer().fields["format"].choices) == readers
    assert import_documents.Command.formats == formats.DOCUMENT_FORMATS
    assert import_topics.Command.formats == formats.TOPIC_FORMATS


# ------------------------------------------------------------------------------------------- collections


def _new_collection(manager: User, way: str, name: str) -> Outcome:
    if way == "command":
        try:
            call_command("create_collection", name, owner="manager")
        except CommandError as exc:
            return "refused", str(exc).splitlines()
    elif way == "api":
        answer = client_for(manager).post("/api/collections/", {"name": name}, format="json")
        if answer.status_code == 400:
            return "refused", answer.json()["name"]
        assert answer.status_code == 201, answer.content
    else:
        client = Client()
        client.force_login(manager)
        response = client.post("/collections/", {"name": name})
        if response.status_code == 200:
            return "refused", response.context["form"].errors["name"]
        assert response.status_code == 302
    return "stored", sorted(Collection.objects.values_list("name", flat=True))


@pytest.mark.parametrize("name", [" news ", "", "  ", "a.b", "a/b", "x" * 101, "taken", "Taken", "news"])
def test_a_collection_is_named_by_one_rule_on_the_page_in_the_api_and_by_the_command(
    manager: User, name: str
) -> None:
    """`imports.collection_name_problems`, asked by all three: the same names taken (trimmed, as a form's
    field trims them: `' news '` was refused by the command alone) and the same words for those refused
    (each had its own for a name blank, taken, not a slug or too long)."""
    outcomes = {}
    for way in ("command", "api", "page"):
        Collection.objects.all().delete()
        Collection.objects.create(name="taken")
        outcomes[way] = _new_collection(manager, way, name)
    assert outcomes["api"] == outcomes["page"] == outcomes["command"], outcomes
    if name.strip() == "news":
        assert outcomes["command"] == ("stored", ["news", "taken"])
    if name == "Taken":  # differs only in case: one name
        assert outcomes["command"] == (
            "refused",
            ["collection 'Taken' already exists as 'taken' (names that differ only in case are one)"],
        )


# --------------------------------------------------------------------------------------------------- jobs


def test_the_collection_page_lists_only_jobs_the_viewer_may_open(manager: User) -> None:
    """A collection's manager who does not manage a pool of it: that pool's jobs (runs added, a release)
    are not theirs (`Job.objects.visible_to`, the job's page and the API: 404), so their collection's page
    does not list them either; the collection's imports it does."""
    owner, pool_manager = make_manager("owner"), make_manager("pool-manager")
    collection = make_collection(name="news", managers=[owner])
    pool = make_pool(collection=collection, name="theirs", managers=[pool_manager])
    added = Job.objects.create(
        kind=Job.Kind.ADD_RUNS, status="done", collection=collection, created_by=pool_manager,
        params={"pool": pool.pk, "name": pool.name, "runs": []},
    )  # fmt: skip
    upload = Job.objects.create(kind=Job.Kind.TOPICS, status="done", collection=collection, created_by=owner)
    client = Client()
    client.force_login(owner)
    assert client.get(f"/jobs/{added.pk}/").status_code == 404
    assert client_for(owner).get(f"/api/jobs/{added.pk}/").status_code == 404
    listed = {job.pk for job in client.get("/collections/news/").context["jobs"]}
    assert listed == {upload.pk}
    # Nor, to the pool's manager, a pool's job among the collection's imports: "Recent imports" are the
    # uploads of the collection's form (the pool's page has its jobs).
    pool_manager.groups.set(owner.groups.all())
    collection.managers.add(pool_manager)
    client.force_login(pool_manager)
    page = client.get("/collections/news/")
    assert {job.pk for job in page.context["jobs"]} == {upload.pk}
    assert "<td>Topics</td>" in page.content.decode()


def test_a_jobs_page_offers_retry_only_to_who_may_retry_it() -> None:
    """Who started an import reads its page, but may not start it again once they no longer manage the
    collection (`retry_job`: 403); the page offers them no Retry button. The collection's manager gets it."""
    owner, starter = make_manager("owner"), make_manager("starter")
    collection = make_collection(name="news", managers=[owner])
    job = Job.objects.create(kind=Job.Kind.TOPICS, status="failed", collection=collection, created_by=starter)
    retry = reverse("jobs:job-retry", args=[job.pk])
    pages = {}
    for user in (owner, starter):
        client = Client()
        client.force_login(user)
        pages[user.username] = client.get(f"/jobs/{job.pk}/").content.decode()
    assert retry in pages["owner"]
    assert retry not in pages["starter"]
    client = Client()
    client.force_login(starter)
    assert client.post(retry).status_code == 403  # what the button would have led to


def test_a_jobs_page_links_only_the_retries_the_viewer_may_open() -> None:
    """Who started an import and no longer manages the collection reads their job, not the retry the
    collection's manager started (`visible_to`: 404); their job's page does not link it, and the retry's
    page, for the manager, links the job it retried."""
    owner, starter = make_manager("owner"), make_manager("starter")
    collection = make_collection(name="news", managers=[owner])
    job = Job.objects.create(kind=Job.Kind.TOPICS, status="failed", collection=collection, created_by=starter)
    retry = Job.objects.create(
        kind=Job.Kind.TOPICS, status="failed", collection=collection, created_by=owner, retry_of=job
    )
    pages = {}
    for user in (owner, starter):
        client = Client()
        client.force_login(user)
        assert client.get(f"/jobs/{retry.pk}/").status_code == (200 if user is owner else 404)
        pages[user.username] = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/jobs/{retry.pk}/"' in pages["owner"]
    assert f'href="/jobs/{retry.pk}/"' not in pages["starter"]
    client = Client()
    client.force_login(owner)
    assert f'href="/jobs/{job.pk}/"' in client.get(f"/jobs/{retry.pk}/").content.decode()

"""Every malformed file of tests/data/bad/, through the CLI and through the API: a clear error, no 500.

The corpus and its README (which import each file is for, and the error expected) are the contract: the
tests are parametrised over the directory listing, and a file the README does not describe fails. Each
import must name the file (and the line, where one applies) and leave the database exactly as it was.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from pooling import trec_io
from pooling.models import Collection, Document, Job, Run, RunRow, Topic
from tests.conftest import client_for
from tests.processes import manage_in_a_process

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data"
BAD = DATA / "bad"
GOOD = DATA / "good"

pytestmark = pytest.mark.django_db

IMPORT_KINDS = {"documents": "import_documents", "topics": "import_topics", "run": "import_run"}
KINDS = {*IMPORT_KINDS, "qrels"}

# Two files the importer refuses in its own words (the README describes them in prose).
IMPORTER_ERRORS = {
    "run_duplicate_doc_noncontiguous.txt": ("3", "duplicate"),
    "run_unknown_topic.txt": ("2", "unknown topic '999'"),
}


@dataclass(frozen=True)
class Expected:
    """What the README says about one file: the import kind, the line (None: file-level, "any": some line
    the test cannot know in advance) and the message the error must carry."""

    kind: str
    line: str | None
    message: str

    def pattern(self, display: str) -> re.Pattern[str]:
        if self.line is None:
            where = re.escape(display) + ":"
        elif self.line == "any":
            where = re.escape(display) + r":\d+:"
        else:
            where = re.escape(display) + f":{self.line}:"
        return re.compile(rf"^{where} .*{re.escape(self.message)}", re.MULTILINE)


def read_readme() -> dict[str, Expected]:
    """The table of tests/data/bad/README.md: file → (kind, line, message)."""
    table: dict[str, Expected] = {}
    line: str | None
    for row in (BAD / "README.md").read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\| `([^`]+)` \| (\w+) \| (.*) \|", row.strip())
        if not match:
            continue
        name, kind, text = match.groups()
        if name in IMPORTER_ERRORS:
            line, message = IMPORTER_ERRORS[name]
            table[name] = Expected(kind, line, message)
            continue
        quoted = re.search(r"`([^`]+)`", text)
        assert quoted, f"README row for {name} has no quoted error"
        message = quoted.group(1).removesuffix("…").strip()
        line_match = re.search(r"\bline (\d+)", text)
        if text.startswith("file-level"):
            line = None
        elif "on the line being read" in text:
            line = "any"
        elif line_match:
            line = line_match.group(1)
        else:
            line = "any"
        table[name] = Expected(kind, line, message)
    return table


README = read_readme()
FILES = sorted(path.name for path in BAD.iterdir() if path.is_file() and path.name != "README.md")


def expected_for(name: str) -> Expected:
    if name not in README:
        pytest.fail(f"tests/data/bad/{name} is not described in tests/data/bad/README.md")
    expected = README[name]
    assert expected.kind in KINDS, f"README gives {name} the unknown kind {expected.kind!r}"
    return expected


def importable(names: list[str]) -> list[str]:
    """Files meant for an import of this layer (plus any file the README lacks, so that it fails)."""
    return [name for name in names if name not in README or README[name].kind in IMPORT_KINDS]


# ------------------------------------------------------------------------------------------- fixtures


def snapshot() -> dict[str, Any]:
    """Everything an import may write, for before/after comparisons."""
    return {
        "collections": sorted(Collection.objects.values_list("name", "description")),
        "documents": sorted(Document.objects.values_list("collection_id", "docid", "title", "text", "url")),
        "metadata": sorted(str(m) for m in Document.objects.values_list("metadata", flat=True)),
        "topics": sorted(
            Topic.objects.values_list("collection_id", "qid", "query", "description", "narrative")
        ),
        "runs": sorted(
            Run.objects.values_list("collection_id", "name", "description", "num_rows", "num_topics")
        ),
        "rows": sorted(RunRow.objects.values_list("run_id", "topic_id", "document_id", "rank", "score")),
    }


def partial_run_ids(path: Path) -> tuple[set[str], set[str]]:
    """The qids and docids of the rows a (possibly broken) run file yields before its error."""
    qids: set[str] = set()
    docids: set[str] = set()
    for chunk in trec_io.iter_run(path, trec_io.ErrorLog(str(path))):
        qids.update(chunk.qids)
        docids.update(docid.decode() for docid in chunk.docid.tolist())
    return qids, docids


@pytest.fixture
def news(db: None, manager: Any) -> Collection:
    """The good collection, with a run, plus every topic and document the bad run files name (but 999),
    so that a run file fails for its own defect, not for ids the collection lacks."""
    call_command("create_collection", "news", owner="manager")
    call_command("import_documents", "news", str(GOOD / "docs.jsonl"))
    call_command("import_topics", "news", str(GOOD / "topics.jsonl"))
    call_command("import_run", "news", str(GOOD / "run_a.txt"))
    collection = Collection.objects.get(name="news")
    qids: set[str] = set()
    docids: set[str] = set()
    for name in FILES:
        if name.startswith("run_") and name != "run_unknown_topic.txt":
            more_qids, more_docids = partial_run_ids(BAD / name)
            qids |= more_qids
            docids |= more_docids
    known_qids = set(Topic.objects.values_list("qid", flat=True))
    known_docids = set(Document.objects.values_list("docid", flat=True))
    Topic.objects.bulk_create(Topic(collection=collection, qid=q, query=f"q {q}") for q in qids - known_qids)
    Document.objects.bulk_create(Document(collection=collection, docid=d) for d in docids - known_docids)
    return collection


# ------------------------------------------------------------------------------------------ the corpus


def test_it_describes_every_bad_file_in_the_readme() -> None:
    assert FILES, "tests/data/bad/ is empty"
    assert sorted(set(FILES) - set(README)) == []
    assert sorted(set(README) - set(FILES)) == [], "README describes files that are not there"
    assert {expected.kind for expected in README.values()} <= KINDS


# --------------------------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("name", importable(FILES))
def test_it_refuses_a_bad_file_on_the_command_line_naming_file_and_line(news: Collection, name: str) -> None:
    expected = expected_for(name)
    path = str(BAD / name)
    before = snapshot()

    with pytest.raises(CommandError) as info:
        call_command(IMPORT_KINDS[expected.kind], "news", path)

    assert snapshot() == before
    message = str(info.value)
    assert message.startswith("nothing imported:")
    assert expected.pattern(path).search(message), f"expected {expected} in:\n{message}"


def test_it_exits_non_zero_without_a_traceback_in_a_real_process(tmp_path: Path) -> None:
    manage = manage_in_a_process(tmp_path, timeout=120)
    database = tmp_path / "db.sqlite3"

    for args in (
        ("migrate", "--noinput", "-v0"),
        ("create_collection", "news"),
        ("import_documents", "news", str(GOOD / "docs.jsonl")),
        ("import_topics", "news", str(GOOD / "topics.jsonl")),
    ):
        done = manage(*args)
        assert done.returncode == 0, done.stderr

    bad = BAD / "run_short_line.txt"
    done = manage("import_run", "news", str(bad))

    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert f"{bad}:3: expected 6 fields 'qid Q0 docid rank score tag', found 5" in done.stderr
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM pooling_run").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM pooling_runrow").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM pooling_document").fetchone() == (12,)


# --------------------------------------------------------------------------------------------- the API


def upload(client: Any, kind: str, path: Path, **fields: str) -> Any:
    with path.open("rb") as handle:
        return client.post(
            "/api/collections/news/imports/", {"kind": kind, "file": handle, **fields}, format="multipart"
        )


@pytest.mark.parametrize("name", importable(FILES))
def test_it_answers_400_with_errors_by_line_for_a_bad_upload(
    news: Collection, manager: Any, name: str, django_capture_on_commit_callbacks: Any
) -> None:
    expected = expected_for(name)
    before = snapshot()
    uploads = list(Path(settings.MEDIA_ROOT).rglob("*")) if Path(settings.MEDIA_ROOT).exists() else []

    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_for(manager), expected.kind, BAD / name)

    assert response.status_code == 400, response.content
    assert snapshot() == before
    assert Job.objects.count() == 0
    assert [p for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()] == [
        p for p in uploads if p.is_file()
    ]  # the upload is not kept
    errors = response.json()["file"]
    if (BAD / name).stat().st_size:
        text = "\n".join(errors)
        assert expected.pattern(name).search(text), f"expected {expected} in:\n{text}"
        assert not any(error.startswith("internal error") for error in errors)


@pytest.mark.parametrize("name", importable(FILES))
def test_it_fails_the_job_of_a_bad_upload_too_large_to_check_first(
    news: Collection, manager: Any, name: str, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.IMPORT_CHECK_MAX_BYTES = 0  # every upload goes straight to its job
    expected = expected_for(name)
    client = client_for(manager)
    before = snapshot()

    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, expected.kind, BAD / name)

    assert snapshot() == before
    if (BAD / name).stat().st_size == 0:
        # DRF refuses an empty upload before any job exists: a 400 naming the field.
        assert response.status_code == 400, response.content
        assert "file" in response.json()
        assert Job.objects.count() == 0
    else:
        assert response.status_code == 202, response.content
        job_id = response.json()["id"]
        status = client.get(f"/api/jobs/{job_id}/")
        assert status.status_code == 200
        job = status.json()
        assert job["status"] == "failed"
        assert job["kind"] == expected.kind
        assert job["upload_name"] == name
        assert job["finished_at"] is not None
        errors = "\n".join(job["errors"])
        assert expected.pattern(name).search(errors), f"expected {expected} in:\n{errors}"
        assert not any(error.startswith("internal error") for error in job["errors"])


@pytest.mark.parametrize(
    "name", [name for name in FILES if README.get(name, Expected("", None, "")).kind == "qrels"]
)
def test_it_refuses_qrels_uploads_as_an_unknown_kind(
    news: Collection, manager: Any, name: str, django_capture_on_commit_callbacks: Any
) -> None:
    # Qrels are judgements of a pool (judgements.imports.import_judgements), not a collection import.
    before = snapshot()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = upload(client_for(manager), "qrels", BAD / name)

    assert response.status_code == 400
    assert "kind" in response.json()
    assert callbacks == []
    assert Job.objects.count() == 0
    assert snapshot() == before


def test_it_refuses_an_upload_without_a_file_naming_the_field(news: Collection, manager: Any) -> None:
    response = client_for(manager).post("/api/collections/news/imports/", {"kind": "run"}, format="multipart")

    assert response.status_code == 400
    assert list(response.json()) == ["file"]
    assert Job.objects.count() == 0


def test_it_refuses_an_unknown_kind_naming_the_field(news: Collection, manager: Any) -> None:
    response = upload(client_for(manager), "pictures", GOOD / "run_a.txt")

    assert response.status_code == 400
    assert list(response.json()) == ["kind"]
    assert Job.objects.count() == 0


def test_it_refuses_a_missing_kind_and_an_unknown_format(news: Collection, manager: Any) -> None:
    client = client_for(manager)

    with (GOOD / "docs.jsonl").open("rb") as handle:
        response = client.post("/api/collections/news/imports/", {"file": handle}, format="multipart")
    assert response.status_code == 400
    assert list(response.json()) == ["kind"]

    response = upload(client, "documents", GOOD / "docs.jsonl", format="xml")
    assert response.status_code == 400
    assert list(response.json()) == ["format"]
    assert Job.objects.count() == 0


def test_a_checked_upload_that_would_replace_a_run_badly_leaves_it_alone(
    news: Collection, manager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    run = Run.objects.get(name="run_a")
    topic = Topic.objects.filter(collection=news).order_by("qid").first()
    assert topic is not None
    before = run.ranked_list(topic)
    client = client_for(manager)

    with django_capture_on_commit_callbacks(execute=True):
        refused = upload(client, "run", BAD / "run_nan_score.txt", name="run_a", replace="true")
        taken = upload(client, "run", GOOD / "run_a.txt", name="run_a")  # no replace: the name is taken

    assert refused.status_code == 400
    assert refused.json()["file"] == ["run_nan_score.txt:2: score 'nan' is not a finite number"]
    assert taken.status_code == 400
    assert "already exists" in taken.json()["name"][0]  # on the field at fault (it was on `file`)
    assert Run.objects.get(name="run_a").ranked_list(topic) == before
    assert Job.objects.count() == 0


def test_it_answers_404_for_an_upload_to_a_missing_collection(news: Collection, manager: Any) -> None:
    with (GOOD / "run_a.txt").open("rb") as handle:
        response = client_for(manager).post(
            "/api/collections/nowhere/imports/", {"kind": "run", "file": handle}, format="multipart"
        )

    assert response.status_code == 404
    assert Job.objects.count() == 0


def test_it_imports_a_good_upload_through_the_same_job(
    news: Collection, manager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = client_for(manager)

    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, "run", GOOD / "run_b.txt.gz", description="negative scores")

    assert response.status_code == 202
    job = client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert (job["status"], job["errors"], job["progress"]) == ("done", [], 1.0)
    assert job["counts"]["rows"] == 9
    assert job["counts"]["topics"] == 3
    run = Run.objects.get(name="run_b")
    assert (run.num_rows, run.description, run.source_file) == (9, "negative scores", "run_b.txt.gz")
    assert run.ranked_list(Topic.objects.get(qid="303")) == [("d10", -0.3), ("d12", -0.4), ("d09", -0.4)]


def test_it_reports_skipped_topics_as_job_warnings(
    news: Collection, manager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    client = client_for(manager)

    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, "run", BAD / "run_unknown_topic.txt", skip_unknown_topics="true")

    job = client.get(f"/api/jobs/{response.json()['id']}/").json()
    assert job["status"] == "done"
    assert len(job["warnings"]) == 1
    assert "skipped 1 rows of 1 topics" in job["warnings"][0]
    assert "999" in job["warnings"][0]
    assert Run.objects.get(name="run_unknown_topic").num_rows == 1

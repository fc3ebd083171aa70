"""What a click log can hold: positions 1 to 1000 (one rule for every format) and counts that fit the
columns; beyond either, an error on the line, nothing stored."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from online.clicklogs import import_click_log
from online.logformats import MAX_POSITION, read_counts
from online.models import ClickCount, ClickLog
from pooling.errors import ImportFailed
from pooling.formats import FormatError
from pooling.models import Job
from tests.conftest import client_for
from tests.factories import make_collection

pytestmark = pytest.mark.django_db

TOO_DEEP = "position 1001 is too deep (positions are at most 1000)"


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def failure(collection, fmt: str, paths: list[str]) -> list[str]:
    with pytest.raises(ImportFailed) as caught:
        import_click_log(collection=collection, name="bad", format=fmt, paths=paths)
    assert not ClickLog.objects.exists() and not ClickCount.objects.exists()
    return caught.value.errors


def test_a_counts_position_past_the_deepest_is_an_error_on_its_line(tmp_path) -> None:
    collection = make_collection(docs=3)
    path = write(tmp_path, "c.txt", "q1 d001 1000 5 1\nq1 d001 1001 5 1\n")
    assert failure(collection, "counts", [path]) == [f"{path}:2: {TOO_DEEP}"]


def test_a_jsonl_page_past_the_deepest_position_has_the_same_error(tmp_path) -> None:
    collection = make_collection(docs=3)
    page = {"qid": "q1", "docids": [f"x{i}" for i in range(MAX_POSITION + 1)], "clicks": [1]}
    path = write(tmp_path, "log.jsonl", json.dumps(page) + "\n")
    (error,) = failure(collection, "jsonl", [path])
    assert error.startswith(f"{path}:1: ") and error.endswith(TOO_DEEP)


def test_the_deepest_position_itself_is_stored_where_it_was_shown(tmp_path) -> None:
    collection = make_collection(docs=3)
    path = write(tmp_path, "c.txt", "q1 d001 1000 5 1\nq1 d002 1 5 2\n")
    log = import_click_log(collection=collection, name="deep", format="counts", paths=[path])
    cells = {(c.document.docid, c.position): c.clicks for c in ClickCount.objects.filter(log=log)}
    assert cells == {("d001", 1000): 1, ("d002", 1): 2} and log.max_position == 1000


def test_a_ubi_ordinal_past_the_deepest_is_an_error_on_its_line(tmp_path) -> None:
    collection = make_collection(docs=3)
    queries = write(tmp_path, "q.ndjson", json.dumps({"query_id": "a", "user_query": "query q1"}) + "\n")
    event = {
        "action_name": "impression",
        "query_id": "a",
        "event_attributes": {"object": {"object_id": "d001"}, "position": {"ordinal": 10**20}},
    }
    events = write(tmp_path, "e.ndjson", json.dumps(event) + "\n")
    (error,) = failure(collection, "ubi", [queries, events])
    assert error == f"{events}:1: impression position {10**20} is too deep (positions are at most 1000)"


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("py01 json.loads 1 99999999999999999999999 5\n", "impressions 99999999999999999999999 is more"),
        (f"q1 d001 1 {2**63} 0\n", f"impressions {2**63} is more"),
        (f"q1 d001 1 {2**62} 0\nq1 d001 2 {2**62} 0\n", "impressions add up to more"),
    ],
)
def test_counts_beyond_what_the_columns_hold_are_an_error_on_the_line(tmp_path, lines, message) -> None:
    path = write(tmp_path, "c.txt", lines)
    with pytest.raises(FormatError) as caught:
        list(read_counts(path))
    (error,) = caught.value.errors
    assert str(error).startswith(f"{path}:{lines.count(chr(10))}: {message}"), str(error)


def test_the_most_a_log_can_count_is_stored(tmp_path) -> None:
    collection = make_collection(docs=3)
    path = write(tmp_path, "c.txt", f"q1 d001 1 {2**63 - 2} 3\nq1 d002 1 1 0\n")
    log = import_click_log(collection=collection, name="big", format="counts", paths=[path])
    assert log.counts["impressions"] == 2**63 - 1


def test_the_command_says_which_line_holds_a_huge_number(tmp_path) -> None:
    make_collection(name="pydocs")
    path = write(tmp_path, "c.txt", "q1 d001 1 99999999999999999999999 5\n")
    with pytest.raises(CommandError, match=f"{path}:1: impressions 99999999999999999999999 is more"):
        call_command(
            "import_clicks", "pydocs", path, "--format", "counts", "--name", "x",
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
    assert not ClickLog.objects.exists()


def test_the_api_answers_a_huge_number_with_a_400_and_keeps_no_upload(manager) -> None:
    collection = make_collection(managers=[manager])
    answer = client_for(manager).post(
        "/api/click-logs/",
        {
            "collection": collection.name,
            "name": "x",
            "format": "counts",
            "file": SimpleUploadedFile("c.txt", b"q1 d001 1 99999999999999999999999 5\n"),
        },
        format="multipart",
    )
    assert answer.status_code == 400
    assert answer.json()["file"][0].startswith("c.txt:1: impressions 99999999999999999999999 is more")
    uploads = Path(settings.MEDIA_ROOT) / "uploads" / "clicks"
    assert not uploads.exists() or not any(p.is_file() for p in uploads.rglob("*"))
    assert not Job.objects.exists() and not ClickLog.objects.exists()

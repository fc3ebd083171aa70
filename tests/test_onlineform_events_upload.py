"""An events file goes with the UBI format only: uploaded with a JSONL or counts log it is refused beside
the events field, on the manager's page (`online.forms.ClickLogUploadForm`), in the admin's upload (the same
form) and by `POST /api/click-logs/`, all three asking `jobs.click_uploads`; nothing is stored. Before, the
file was dropped without a word and the log imported from the other file alone."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from online.models import ClickLog
from pooling.models import Collection, Job
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool

ONLY_UBI = "only the UBI format takes an events file"
PAGES = [{"session": f"s{i}", "qid": "q1", "docids": ["d001", "d002"], "clicks": [1]} for i in range(5)]


def ndjson(name: str, rows: list[dict[str, Any]]) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, "".join(json.dumps(row) + "\n" for row in rows).encode())


def counts_file() -> SimpleUploadedFile:
    return SimpleUploadedFile("counts.txt", b"q1 d001 1 5 5\nq1 d002 2 5 0\n")


def events_file() -> SimpleUploadedFile:
    event = {"action_name": "click", "query_id": "a1", "session_id": "s", "client_id": "c1", "event_id": "e1",
             "event_attributes": {"object": {"object_id": "d001"}, "position": {"ordinal": 1}}}  # fmt: skip
    return ndjson("ubi_events.ndjson", [event])


def main_file(format: str) -> SimpleUploadedFile:
    return ndjson("clicks.jsonl", PAGES) if format == "jsonl" else counts_file()


@pytest.fixture
def mia(db) -> Any:
    """A non-staff manager of collection `news` and its pool."""
    mia = make_manager("mia")
    news = make_collection(name="news", managers=[mia])
    make_pool(collection=news, name="news-pool", managers=[mia])
    return mia


def nothing_stored() -> bool:
    return not ClickLog.objects.exists() and not Job.objects.filter(kind="click_log").exists()


@pytest.mark.parametrize("format", ["jsonl", "counts"])
def test_it_refuses_an_events_file_with_another_format_beside_the_field_on_the_page(
    mia, format, django_capture_on_commit_callbacks
) -> None:
    client = Client()
    client.force_login(mia)
    news = Collection.objects.get(name="news")
    sent = {"collection": news.pk, "name": "week", "format": format, "ordinal_base": 1,
            "file": main_file(format), "events": events_file()}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/online/logs/upload/", sent)
    assert answer.status_code == 400
    assert answer.context["form"].errors == {"events": [ONLY_UBI]}
    beside = re.search(r'<ul class="errors" id="id_events-errors">(.*?)</ul>', answer.content.decode(), re.S)
    assert beside and ONLY_UBI in beside.group(1)
    assert nothing_stored()


@pytest.mark.parametrize("format", ["jsonl", "counts"])
def test_the_api_refuses_an_events_file_with_another_format_naming_the_field(
    mia, format, django_capture_on_commit_callbacks
) -> None:
    sent = {"collection": "news", "name": "week", "format": format, "file": main_file(format),
            "events": events_file()}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(mia).post("/api/click-logs/", sent, format="multipart")
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"events": [ONLY_UBI]}
    assert nothing_stored()


def test_a_jsonl_log_without_events_and_a_ubi_pair_are_still_taken(
    mia, django_capture_on_commit_callbacks
) -> None:
    queries = [{"query_id": "a1", "user_query": "query q1", "client_id": "c1",
                "query_response_hit_ids": ["d001", "d002"]}]  # fmt: skip
    api = client_for(mia)
    with django_capture_on_commit_callbacks(execute=True):
        jsonl = api.post("/api/click-logs/", {"collection": "news", "name": "week", "format": "jsonl",
                                               "file": main_file("jsonl")}, format="multipart")  # fmt: skip
        ubi = api.post("/api/click-logs/", {"collection": "news", "name": "ubi", "format": "ubi",
                                             "file": ndjson("ubi_queries.ndjson", queries),
                                             "events": events_file()}, format="multipart")  # fmt: skip
    assert (jsonl.status_code, ubi.status_code) == (202, 202), (jsonl.content, ubi.content)
    assert sorted(ClickLog.objects.values_list("name", flat=True)) == ["ubi", "week"]

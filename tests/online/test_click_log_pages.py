"""A click log's `pages` has one meaning in every format: the result pages (one ranked list shown once)
whose query maps to a topic. The counts format has no pages, so its `pages` is unknown: null in the API,
"—" on the pages, never 0 and never its rows (which it counts under their own name, `rows`)."""

from __future__ import annotations

import importlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.test import Client

from online.clicklogs import import_click_log
from online.models import ClickLog
from tests.conftest import client_for
from tests.factories import make_collection

# Two pages of q1 (mapped by qid), one of q2 by its text, one of a query no topic has.
PAGES: list[dict[str, Any]] = [
    {"session": "s1", "qid": "q1", "docids": ["d001", "d002", "d003"], "clicks": [1]},
    {"session": "s2", "qid": "q1", "docids": ["d002", "d001"], "clicks": []},
    {"session": "s3", "query": "Query  Q2", "docids": ["d004"], "clicks": [1]},
    {"session": "s4", "qid": "nope", "docids": ["d001", "d002"], "clicks": [2]},
]
# The same shown lists as counts rows (qid docid position impressions clicks): 7 rows, and no pages.
COUNTS = (
    "q1 d001 1 1 1\nq1 d002 2 1 0\nq1 d003 3 1 0\n"
    "q1 d002 1 1 0\nq1 d001 2 1 0\n"
    "q2 d004 1 1 1\n"
    "nope d001 1 1 0\n"
)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


@pytest.fixture
def news(db, manager):
    return make_collection(name="news", managers=[manager])


def test_it_counts_the_mapped_pages_of_a_jsonl_log(news, tmp_path) -> None:
    log = import_click_log(
        collection=news, name="week", format="jsonl", paths=[write(tmp_path, "p.jsonl", jsonl(PAGES))]
    )
    assert log.counts["pages"] == 3  # the page of "nope" maps to no topic
    assert "rows" not in log.counts


def test_it_counts_the_mapped_pages_of_a_ubi_log(news, tmp_path) -> None:
    queries = [
        {"query_id": "a", "user_query": "query q1", "query_response_hit_ids": ["d001", "d002"]},
        {"query_id": "b", "user_query": "query q1", "query_response_hit_ids": ["d002"]},
        {"query_id": "c", "user_query": "nothing like it", "query_response_hit_ids": ["d003"]},
    ]
    events = [{"action_name": "click", "query_id": "a", "event_attributes": {"position": {"ordinal": 1},
               "object": {"object_id": "d001"}}}]  # fmt: skip
    paths = [write(tmp_path, "q.ndjson", jsonl(queries)), write(tmp_path, "e.ndjson", jsonl(events))]
    log = import_click_log(collection=news, name="ubi", format="ubi", paths=paths)
    assert log.counts["pages"] == 2


def test_a_counts_log_has_no_pages_but_its_rows(news, tmp_path) -> None:
    log = import_click_log(
        collection=news, name="agg", format="counts", paths=[write(tmp_path, "c.txt", COUNTS)]
    )
    assert log.counts["pages"] is None  # unknown: neither 0 nor the 7 rows
    assert log.counts["rows"] == 7
    assert (log.counts["impressions"], log.counts["clicks"]) == (6, 2)  # the unmapped row is counted apart


def test_the_pages_and_the_api_show_a_counts_logs_pages_as_unknown(news, manager, tmp_path) -> None:
    log = import_click_log(
        collection=news, name="agg", format="counts", paths=[write(tmp_path, "c.txt", COUNTS)]
    )
    page = Client()
    page.force_login(manager)
    detail = page.get(f"/online/logs/{log.pk}/").content.decode()
    assert '<tr><td class="num">—</td><td class="num">6</td>' in detail  # pages, then impressions
    listing = page.get("/online/logs/").content.decode()
    assert '<td class="num">—</td><td class="num">2</td>' in listing  # pages, then clicks
    for answer in (client_for(manager).get(f"/api/click-logs/{log.pk}/").json(),
                   client_for(manager).get("/api/click-logs/").json()["results"][0]):  # fmt: skip
        assert answer["counts"]["pages"] is None and answer["counts"]["rows"] == 7


def test_the_pages_show_a_jsonl_logs_pages(news, manager, tmp_path) -> None:
    log = import_click_log(
        collection=news, name="week", format="jsonl", paths=[write(tmp_path, "p.jsonl", jsonl(PAGES))]
    )
    page = Client()
    page.force_login(manager)
    assert '<tr><td class="num">3</td>' in page.get(f"/online/logs/{log.pk}/").content.decode()
    assert client_for(manager).get(f"/api/click-logs/{log.pk}/").json()["counts"]["pages"] == 3


def test_the_command_says_rows_for_a_counts_log_and_pages_for_a_jsonl_log(news, tmp_path) -> None:
    out = io.StringIO()
    call_command("import_clicks", "news", write(tmp_path, "c.txt", COUNTS), "--format", "counts",
                 "--name", "agg", stdout=out, stderr=io.StringIO())  # fmt: skip
    assert "click log agg" in out.getvalue() and "7 rows (pages unknown" in out.getvalue()
    assert " pages," not in out.getvalue()
    out = io.StringIO()
    call_command("import_clicks", "news", write(tmp_path, "p.jsonl", jsonl(PAGES)), "--format", "jsonl",
                 "--name", "week", stdout=out, stderr=io.StringIO())  # fmt: skip
    assert ": 3 pages, " in out.getvalue()


def test_the_migration_moves_an_old_counts_logs_rows_out_of_its_pages(news) -> None:
    old = ClickLog.objects.create(collection=news, name="agg", format="counts",
                                  counts={"pages": 7, "impressions": 6, "clicks": 2})  # fmt: skip
    paged = ClickLog.objects.create(collection=news, name="week", format="jsonl", counts={"pages": 3})
    importlib.import_module("online.migrations.0008_counts_logs_pages_unknown").forward(apps, None)
    old.refresh_from_db()
    paged.refresh_from_db()
    assert old.counts == {"pages": None, "rows": 7, "impressions": 6, "clicks": 2}
    assert paged.counts == {"pages": 3}


def test_the_import_jobs_page_and_api_show_a_counts_logs_pages_as_unknown(
    news, manager, django_capture_on_commit_callbacks
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from pooling.models import Job

    upload = SimpleUploadedFile("agg.txt", COUNTS.encode())
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(manager).post(
            "/api/click-logs/", {"collection": "news", "name": "agg", "format": "counts", "file": upload},
            format="multipart",
        )  # fmt: skip
    job = Job.objects.get(pk=answer.json()["id"])
    assert job.status == Job.Status.DONE
    page = Client()
    page.force_login(manager)
    assert (
        "pages: <strong>—</strong> · rows: <strong>7</strong>"
        in page.get(f"/jobs/{job.pk}/").content.decode()
    )
    counts = client_for(manager).get(f"/api/jobs/{job.pk}/").json()["counts"]
    assert counts["pages"] is None and counts["rows"] == 7

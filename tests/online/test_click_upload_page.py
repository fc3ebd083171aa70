"""A pool manager without staff status uploads a click log from the click logs page: the upload page
(`/online/logs/upload/`) takes the admin's form (`online.forms.ClickLogUploadForm`) and starts the job of
the API and the admin (`jobs.start_click_import`), then shows the job's page; a bad upload comes back with
each error beside its field and the choices kept; only the collections and pools the manager manages are
offered. The admin's upload still works, with the same form. One walk in Chromium, from the list to the
job's page."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from playwright.sync_api import expect

from online.models import ClickCount, ClickLog
from pooling.models import Job
from tests.browser import PASSWORD, log_in
from tests.factories import make_collection, make_manager, make_pool

pytestmark = pytest.mark.usefixtures("fast_passwords")

URL = "/online/logs/upload/"
TAKEN = "collection news already has a click log named 'week'"
PAGES = [
    {"session": f"s{i}", "qid": "q1", "docids": ["d001", "d003", "d002"], "clicks": [1] if i % 2 else [1, 2]}
    for i in range(20)
]


def jsonl(pages: list[dict[str, Any]], name: str = "clicks.jsonl") -> SimpleUploadedFile:
    return ndjson(name, pages)


def ubi_pair() -> tuple[SimpleUploadedFile, SimpleUploadedFile]:
    """UBI queries (q1's page of three documents) and events: clicks on positions 2 and 1."""
    queries = [{"query_id": "a1", "user_query": "query q1", "client_id": "c1",
                "query_response_hit_ids": ["d001", "d002", "d003"]}]  # fmt: skip
    events = [
        {"action_name": "click", "query_id": "a1", "session_id": "s", "client_id": "c1", "event_id": f"e{i}",
         "event_attributes": {"object": {"object_id": docid}, "position": {"ordinal": ordinal}}}
        for i, (docid, ordinal) in enumerate([("d002", 2), ("d001", 1)])
    ]  # fmt: skip
    return ndjson("ubi_queries.ndjson", queries), ndjson("ubi_events.ndjson", events)


def ndjson(name: str, rows: list[dict[str, Any]]) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, "".join(json.dumps(row) + "\n" for row in rows).encode())


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def shop(db) -> dict[str, Any]:
    """A non-staff manager `mia` of collections `news` (pool `news-pool`) and `web` (pool `web-pool`);
    `sports` and its pool are another manager's."""
    mia = make_manager("mia", password=PASSWORD)
    news = make_collection(name="news", managers=[mia])
    web = make_collection(name="web", managers=[mia])
    other = make_manager("otto")
    sports = make_collection(name="sports", managers=[other])
    return {
        "mia": mia,
        "client": logged_in(mia),
        "news": news,
        "pool": make_pool(collection=news, name="news-pool", managers=[mia]),
        "web": web,
        "web_pool": make_pool(collection=web, name="web-pool", managers=[mia]),
        "other": other,
        "sports": sports,
        "sports_pool": make_pool(collection=sports, name="sports-pool", managers=[other]),
    }


def form(shop: dict[str, Any], **change: Any) -> dict[str, Any]:
    return {"collection": shop["news"].pk, "name": "week", "format": "jsonl", "pool": shop["pool"].pk,
            "ordinal_base": 1, "file": jsonl(PAGES), **change}  # fmt: skip


def nothing_stored() -> bool:
    return not ClickLog.objects.exists() and not Job.objects.filter(kind="click_log").exists()


# ------------------------------------------------------------------------------------------ uploads


def test_it_uploads_a_jsonl_log_and_shows_its_job(shop, django_capture_on_commit_callbacks) -> None:
    assert not shop["mia"].is_staff
    with django_capture_on_commit_callbacks(execute=True):
        answer = shop["client"].post(URL, form(shop))
    job = Job.objects.get(kind="click_log")
    assert answer.status_code == 302 and answer["Location"] == f"/jobs/{job.pk}/"
    assert job.status == Job.Status.DONE and job.created_by == shop["mia"]
    log = ClickLog.objects.get(name="week")
    assert (log.collection, log.pool, log.format) == (shop["news"], shop["pool"], "jsonl")
    assert log.counts["pages"] == 20 and log.counts["clicks"] == 30
    shown = shop["client"].get(answer["Location"]).content.decode()
    assert "done" in shown and f'href="/online/logs/{log.pk}/"' in shown  # the log, one link away


def test_it_uploads_a_ubi_pair_queries_then_events(shop, django_capture_on_commit_callbacks) -> None:
    queries, events = ubi_pair()
    with django_capture_on_commit_callbacks(execute=True):
        answer = shop["client"].post(
            URL, form(shop, name="ubi-may", format="ubi", file=queries, events=events)
        )
    job = Job.objects.get(kind="click_log")
    assert answer.status_code == 302 and answer["Location"] == f"/jobs/{job.pk}/"
    assert job.status == Job.Status.DONE, job.errors
    log = ClickLog.objects.get(name="ubi-may")
    assert log.format == "ubi" and log.counts["clicks"] == 2
    clicked = {(c.document.docid, c.position) for c in ClickCount.objects.filter(log=log, clicks__gt=0)}
    assert clicked == {("d002", 2), ("d001", 1)}


def test_a_bad_file_too_large_to_check_at_once_ends_its_job_failed_with_the_errors(
    shop, settings, django_capture_on_commit_callbacks
) -> None:
    settings.IMPORT_CHECK_MAX_BYTES = 10  # the file is checked by its job, not on the form
    bad = jsonl([*PAGES[:2], {"qid": "q1", "docids": ["d001"], "clicks": [2]}])
    with django_capture_on_commit_callbacks(execute=True):
        answer = shop["client"].post(URL, form(shop, file=bad))
    job = Job.objects.get(kind="click_log")
    assert answer.status_code == 302 and job.status == Job.Status.FAILED
    shown = shop["client"].get(answer["Location"]).content.decode()
    assert "clicks.jsonl:3: click on position 2, but only 1 results were shown" in shown
    assert not ClickLog.objects.exists()


# ------------------------------------------------------------------------------------------ the page


def test_the_click_logs_list_links_to_the_upload_page(shop) -> None:
    listing = shop["client"].get("/online/logs/").content.decode()
    assert re.search(rf'<a [^>]*href="{URL}"[^>]*>Upload a click log</a>', listing)
    assert "upload page" in listing  # the text no longer sends a manager to the command or the API only


def test_it_offers_only_the_collections_and_pools_the_manager_manages(shop) -> None:
    answer = shop["client"].get(URL)
    assert answer.status_code == 200
    fields = answer.context["form"].fields
    assert list(fields["collection"].queryset) == [shop["news"], shop["web"]]
    assert set(fields["pool"].queryset) == {shop["pool"], shop["web_pool"]}
    text = answer.content.decode()
    assert "sports" not in text and "news-pool (collection news)" in text


# ------------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    ("case", "field", "message"),
    [
        ("bad name", "name", "Enter a valid"),
        ("ubi with one file", "events", "a UBI log needs the ubi_events export too"),
        ("pool of another collection", "pool", "pool web-pool is not a pool of collection news"),
        ("bad line", "file", "clicks.jsonl:3: click on position 2, but only 1 results were shown"),
        ("line too long", "file", "clicks.jsonl:1: line longer than the limit of 100 bytes"),
    ],
)
def test_it_shows_each_error_beside_its_field_with_the_choices_kept(
    shop, settings, case, field, message
) -> None:
    settings.IMPORT_MAX_LINE_BYTES = 100
    change: dict[str, Any] = {
        "bad name": {"name": "not a slug"},
        "ubi with one file": {"format": "ubi", "name": "ubi-may"},
        "pool of another collection": {"pool": shop["web_pool"].pk},
        "bad line": {"file": jsonl([PAGES[0], PAGES[1], {"qid": "q1", "docids": ["d001"], "clicks": [2]}])},
        "line too long": {"file": jsonl([{**PAGES[0], "query": "x" * 200}])},
    }[case]
    sent = form(shop, **change)
    answer = shop["client"].post(URL, sent)
    assert answer.status_code == 400
    assert list(answer.context["form"].errors) == [field]
    text = answer.content.decode()
    beside = re.search(rf'<ul class="errors" id="id_{field}-errors">(.*?)</ul>', text, re.S)
    assert beside and message in beside.group(1), text
    # what was chosen is chosen again
    assert re.search(rf'<option value="{sent["collection"]}" selected>news</option>', text)
    assert re.search(rf'<option value="{sent["pool"]}" selected>', text)
    assert f'value="{sent["name"]}"' in text
    assert re.search(rf'<option value="{sent["format"]}" selected>', text)
    assert nothing_stored()


def test_it_refuses_a_second_log_of_the_same_name_beside_the_name(
    shop, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        shop["client"].post(URL, form(shop))
    again = shop["client"].post(URL, form(shop))
    assert again.status_code == 400
    assert again.context["form"].errors == {"name": [TAKEN]}
    assert ClickLog.objects.count() == 1 and Job.objects.filter(kind="click_log").count() == 1


def test_a_collection_or_pool_of_another_manager_is_refused(shop) -> None:
    answer = shop["client"].post(URL, form(shop, collection=shop["sports"].pk, pool=""))
    assert answer.status_code == 400 and list(answer.context["form"].errors) == ["collection"]
    answer = shop["client"].post(URL, form(shop, pool=shop["sports_pool"].pk))
    assert answer.status_code == 400 and list(answer.context["form"].errors) == ["pool"]
    assert nothing_stored()


# ------------------------------------------------------------------------------------------ who may not


def test_who_may_not_upload(shop, rater) -> None:
    anonymous = Client()
    for answer in (anonymous.get(URL), anonymous.post(URL, form(shop))):
        assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")
    rater_client = logged_in(rater)
    assert rater_client.get(URL).status_code == 403
    assert rater_client.post(URL, form(shop)).status_code == 403
    # the manager of another collection: this one is not theirs to choose
    other = logged_in(shop["other"])
    assert "news" not in other.get(URL).content.decode()
    answer = other.post(URL, form(shop, pool=""))
    assert answer.status_code == 400 and "collection" in answer.context["form"].errors
    assert nothing_stored()


# ------------------------------------------------------------------------------------------ the admin


def test_the_admin_upload_still_works_with_the_same_form(shop, django_capture_on_commit_callbacks) -> None:
    from django.contrib.auth.models import Permission

    from online.forms import ClickLogUploadForm

    staff = make_manager("stella", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(content_type__app_label="online"))
    shop["news"].managers.add(staff)
    shop["pool"].managers.add(staff)
    client = logged_in(staff)
    admin_url = "/admin/online/clicklog/upload/"
    shown = client.get(admin_url)
    assert type(shown.context["form"]) is ClickLogUploadForm
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(admin_url, form(shop), follow=True)
    job = Job.objects.get(kind="click_log")
    assert answer.status_code == 200 and job.status == Job.Status.DONE
    assert f'href="/jobs/{job.pk}/"' in answer.content.decode()
    assert ClickLog.objects.get(name="week").counts["pages"] == 20
    # a refusal of the import's own check lands beside the field it names there too
    refused = client.post(admin_url, form(shop, name="week"))
    assert refused.context["form"].errors == {"name": [TAKEN]}
    assert ClickLog.objects.count() == 1


# ------------------------------------------------------------------------------------------ in a browser


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_manager_uploads_a_log_from_the_list_in_a_browser(browser, page, live_server, tmp_path) -> None:  # noqa: F811
    mia = make_manager("mia", password=PASSWORD)
    make_collection(name="news", managers=[mia])
    path = tmp_path / "week.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAGES))
    base = live_server.url
    log_in(page, live_server, "mia")
    page.goto(f"{base}/online/logs/")
    page.locator("main").get_by_role("link", name="Upload a click log").click()
    page.wait_for_url(f"{base}{URL}")
    page.select_option("select[name=collection]", label="news")
    page.fill("input[name=name]", "week")
    page.select_option("select[name=format]", value="jsonl")
    page.set_input_files("input[name=file]", str(path))
    page.get_by_role("button", name="Upload and import").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    expect(page.locator(".status")).to_have_text("done", timeout=30_000)
    page.locator("main").get_by_role("link", name="click log week").click()
    page.wait_for_url(re.compile(r"/online/logs/\d+/$"))
    assert ClickLog.objects.get(name="week").counts["pages"] == 20
    assert page.problems == []

"""The admin's upload of a click log: the API upload's formats and options, the same import job, a link to
the job's page; bad files refused on the form by line with nothing stored; and who may not."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from online.models import ClickLog, QueryMapping
from pooling.models import Job
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_collection, make_pool, make_user

pytestmark = pytest.mark.django_db
URL = "/admin/online/clicklog/upload/"
PAGES = [
    {"session": f"s{i}", "qid": "q1", "docids": ["d001", "d003", "d002"], "clicks": [1] if i % 2 else [1, 2]}
    for i in range(20)
]


def jsonl(pages: list[dict], name: str = "clicks.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, "".join(json.dumps(p) + "\n" for p in pages).encode())


def staff_client(name: str, *, manager: bool = True, staff: bool = True):
    user = make_user(name, is_staff=staff)
    if manager:
        user.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="online"))
    client = Client()
    client.force_login(user)
    return user, client


@pytest.fixture
def world(db):
    mine, client = staff_client("mine")
    collection = make_collection(name="news", managers=[mine])
    pool = make_pool(collection=collection, name="news-pool", managers=[mine])
    make_collection(name="sports", managers=[make_user("someone-else", is_staff=True)])
    return {"user": mine, "client": client, "collection": collection, "pool": pool}


def test_it_starts_the_import_job_of_the_api_and_links_to_its_page(world, django_capture_on_commit_callbacks):
    listing = world["client"].get("/admin/online/clicklog/").content.decode()
    assert URL in listing  # the list links to the upload
    form = {"collection": world["collection"].pk, "name": "week", "format": "jsonl",
            "pool": world["pool"].pk, "ordinal_base": 1, "file": jsonl(PAGES)}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        answer = world["client"].post(URL, form, follow=True)
    assert answer.status_code == 200
    job = Job.objects.get(kind="click_log")
    assert job.status == Job.Status.DONE and job.created_by == world["user"]
    assert f'href="/jobs/{job.pk}/"' in answer.content.decode()
    log = ClickLog.objects.get(name="week")
    assert log.collection == world["collection"] and log.pool == world["pool"] and log.format == "jsonl"
    assert QueryMapping.objects.get(log=log).topic.qid == "q1"
    assert log.counts["pages"] == 20


def test_it_refuses_a_bad_file_by_line_and_stores_nothing(world):
    bad = jsonl([*PAGES[:2], {"qid": "q1", "docids": ["d001"], "clicks": [2]}])
    form = {
        "collection": world["collection"].pk,
        "name": "w",
        "format": "jsonl",
        "ordinal_base": 1,
        "file": bad,
    }
    answer = world["client"].post(URL, form)
    assert answer.status_code == 200
    assert "clicks.jsonl:3: click on position 2, but only 1 results were shown" in answer.content.decode()
    assert not ClickLog.objects.exists() and not Job.objects.filter(kind="click_log").exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"format": "ubi"}, "events"),  # a UBI log needs its events export
        ({"collection": "sports"}, "collection"),  # a collection one does not manage
        ({"name": "not a slug"}, "name"),
    ],
)
def test_it_refuses_bad_options_naming_the_field(world, change, field):
    from pooling.models import Collection

    form = {"collection": world["collection"].pk, "name": "w", "format": "jsonl", "ordinal_base": 1,
            "file": jsonl(PAGES)}  # fmt: skip
    if change.get("collection"):
        change = {"collection": Collection.objects.get(name=change["collection"]).pk}
    answer = world["client"].post(URL, {**form, **change})
    assert answer.status_code == 200
    assert field in answer.context["form"].errors
    assert not ClickLog.objects.exists() and not Job.objects.filter(kind="click_log").exists()


def test_it_refuses_a_second_log_of_the_same_name(world, django_capture_on_commit_callbacks):
    form = {"collection": world["collection"].pk, "name": "week", "format": "jsonl", "ordinal_base": 1}
    with django_capture_on_commit_callbacks(execute=True):
        world["client"].post(URL, {**form, "file": jsonl(PAGES)})
    again = world["client"].post(URL, {**form, "file": jsonl(PAGES)})
    assert "name" in again.context["form"].errors
    assert ClickLog.objects.count() == 1 and Job.objects.filter(kind="click_log").count() == 1


def test_who_may_not_upload(world, rater):
    form = {"collection": world["collection"].pk, "name": "w", "format": "jsonl", "ordinal_base": 1}
    _, not_staff = staff_client("manager-not-staff", staff=False)
    assert not_staff.get(URL).status_code == 302  # the admin's login
    assert not_staff.post(URL, {**form, "file": jsonl(PAGES)}).status_code == 302
    rater_client = Client()
    rater_client.force_login(rater)
    assert rater_client.post(URL, {**form, "file": jsonl(PAGES)}).status_code == 302
    no_permission = make_user("staff-without-permission", is_staff=True)
    no_permission.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    client = Client()
    client.force_login(no_permission)
    assert client.post(URL, {**form, "file": jsonl(PAGES)}).status_code == 403
    # staff who manage another collection only: it is not among the choices
    _, other = staff_client("other-staff")
    assert "collection" in other.post(URL, {**form, "file": jsonl(PAGES)}).context["form"].errors
    assert not ClickLog.objects.exists() and not Job.objects.filter(kind="click_log").exists()

"""Deleting a collection nothing uses: the service (`deletion.delete_unused_collection`), the API's DELETE
and the confirmation page linked from the collection's page. Refused, with the reason and nothing deleted,
while a pool is built on it (named: delete those first), while a job of it is at work, or while click logs
or experiments depend on it. Only the collection's managers: another manager is told it does not exist
(404), a rater is refused (403)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.messages import get_messages

from judgements import adjudication
from online import experiments
from online.clicklogs import import_click_log
from pooling import deletion
from pooling.errors import PoolError
from pooling.models import Collection, Document, Job, PoolItem, Run, RunRow, Topic
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run
from tests.pooling import test_manage_pages as manage_pages

pytestmark = pytest.mark.django_db

URL = "/api/collections/news/"
PAGE = "/collections/news/delete/"


# the manager pages' tests' people (owner, other manager, rater, admin) and their logged-in client
people = manage_pages.people
client_as = manage_pages.client_as


@pytest.fixture
def collection(people: dict[str, User]) -> Collection:
    """`owner`'s collection: 20 documents, 2 topics and two runs, no pool."""
    collection = make_collection(name="news", managers=[people["owner"]])
    make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002"], "q2": ["d010"]})
    make_run(collection=collection, name="beta", lists={"q1": ["d003"]})
    return collection


def gone(collection: Collection) -> bool:
    """Nothing of the collection is left: its row, documents, topics, runs and their rows."""
    return not (
        Collection.objects.filter(pk=collection.pk).exists()
        or Document.objects.filter(collection_id=collection.pk).exists()
        or Topic.objects.filter(collection_id=collection.pk).exists()
        or Run.objects.filter(collection_id=collection.pk).exists()
        or RunRow.objects.filter(topic__collection_id=collection.pk).exists()
    )


def intact(collection: Collection) -> bool:
    return (
        Collection.objects.filter(pk=collection.pk).exists()
        and Document.objects.filter(collection=collection).count() == 20
        and Run.objects.filter(collection=collection).count() == 2
        and RunRow.objects.filter(run__collection=collection).count() == 4
    )


def pool_on(collection: Collection, *, name: str, managers: list[User]) -> None:
    make_pool(collection=collection, runs=list(collection.runs.all()), name=name, managers=managers)


def click_log_on(collection: Collection, tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    page = {"session": "s1", "qid": "q1", "docids": ["d001", "d002"], "clicks": [1]}
    path.write_text(json.dumps(page) + "\n")
    import_click_log(collection=collection, name="clicks", format="jsonl", paths=[str(path)])


# ------------------------------------------------------------------------------------------ the service


def test_it_deletes_a_collection_nothing_uses_with_its_contents(collection: Collection) -> None:
    Job.objects.create(kind=Job.Kind.RUN, collection=collection, status=Job.Status.DONE)
    other = make_collection(name="kept")
    make_run(collection=other, name="alpha", lists={"q1": ["d001"]})

    contents = deletion.delete_unused_collection(collection=collection)

    assert str(contents) == "20 documents, 2 topics and 2 runs"
    assert gone(collection)
    assert not Job.objects.filter(collection_id=collection.pk).exists()
    assert RunRow.objects.filter(run__collection=other).count() == 1  # another collection's stay


def stored_upload(collection: Collection, media_root: Path, name: str, *, folder: bool = False) -> Path:
    """A finished job of `collection` with a file (or, as a click log's, a folder of files) stored for its
    upload under MEDIA_ROOT, as `jobs.start_import` and `online.jobs.start_click_import` keep them."""
    path = media_root / "uploads" / name
    if folder:
        (path / "0-log.jsonl").parent.mkdir(parents=True)
        (path / "0-log.jsonl").write_text("{}\n")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("d001\tq1\n")
    Job.objects.create(
        kind=Job.Kind.RUN, collection=collection, status=Job.Status.DONE, upload=f"uploads/{name}"
    )
    return path


def test_it_removes_the_files_its_jobs_stored_once_the_delete_commits(
    collection: Collection, media_root: Path, django_capture_on_commit_callbacks: Any
) -> None:
    run_file = stored_upload(collection, media_root, "alpha.run")
    log_folder = stored_upload(collection, media_root, "clicks", folder=True)
    kept = stored_upload(make_collection(name="kept"), media_root, "kept.run")

    with django_capture_on_commit_callbacks(execute=False) as removals:
        deletion.delete_unused_collection(collection=collection)
        assert run_file.exists() and log_folder.exists()  # not before the rows are gone for good
    for remove in removals:
        remove()

    assert not run_file.exists() and not log_folder.exists()
    assert kept.exists()  # another collection's job keeps its file


def test_a_refused_delete_keeps_the_files(
    collection: Collection, people: dict[str, User], media_root: Path, django_capture_on_commit_callbacks: Any
) -> None:
    run_file = stored_upload(collection, media_root, "alpha.run")
    pool_on(collection, name="p", managers=[people["owner"]])

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(PoolError):
        deletion.delete_unused_collection(collection=collection)

    assert run_file.exists() and intact(collection)


def test_it_names_the_pools_built_on_it_and_deletes_nothing(
    collection: Collection, people: dict[str, User]
) -> None:
    pool_on(collection, name="news-b", managers=[people["owner"]])
    pool_on(collection, name="news-a", managers=[people["owner"]])
    with pytest.raises(PoolError) as refused:
        deletion.delete_unused_collection(collection=collection, user=people["owner"])
    assert str(refused.value) == (
        "collection 'news' is in use: pools 'news-a' and 'news-b' are built on it (delete them first)"
    )
    assert intact(collection)


def test_it_counts_without_naming_a_pool_the_user_does_not_manage(
    collection: Collection, people: dict[str, User]
) -> None:
    """A pool is its managers' own: a manager of the collection only is told one exists, not its name."""
    pool_on(collection, name="theirs", managers=[people["other"]])
    pool_on(collection, name="mine", managers=[people["owner"]])
    refusal = deletion.collection_deletion_refusal(collection, user=people["owner"])
    assert str(refusal) == (
        "collection 'news' is in use: pool 'mine' and 1 more you do not manage are built on it "
        "(delete them first)"
    )
    assert "theirs" in str(deletion.collection_deletion_refusal(collection, user=people["admin"]))


def test_it_waits_for_a_job_at_work_on_it(collection: Collection) -> None:
    job = Job.objects.create(kind=Job.Kind.DOCUMENTS, collection=collection, status=Job.Status.RUNNING)
    with pytest.raises(PoolError) as refused:
        deletion.delete_unused_collection(collection=collection)
    assert str(refused.value) == (
        f"collection 'news' is in use: a job is at work on it (documents, job {job.pk}): "
        "wait for it to finish"
    )
    assert intact(collection)
    job.status = Job.Status.FAILED
    job.save()
    deletion.delete_unused_collection(collection=collection)
    assert gone(collection)


def test_it_keeps_a_collection_that_click_logs_and_experiments_depend_on(
    collection: Collection, tmp_path: Path
) -> None:
    """Whatever another app keeps on the collection (the online app's click logs, their estimates,
    interleaving and tracked experiments) is deleted first, on its own page; nothing cascades away."""
    click_log_on(collection, tmp_path)
    experiments.create_experiment(name="ab", collection=collection, run_a="alpha", run_b="beta")
    experiments.create_experiment(name="ba", collection=collection, run_a="beta", run_b="alpha")
    with pytest.raises(PoolError) as refused:
        deletion.delete_unused_collection(collection=collection)
    assert str(refused.value) == (
        "collection 'news' is in use: 1 click log and 2 interleaving experiments depend on it "
        "(delete them first)"
    )
    assert intact(collection)


# ----------------------------------------------------------------------------------------------- the API


def test_it_deletes_an_unused_collection_by_api(collection: Collection, people: dict[str, User]) -> None:
    answer = client_for(people["owner"]).delete(URL)
    assert answer.status_code == 204
    assert gone(collection)
    assert client_for(people["owner"]).get(URL).status_code == 404


def test_it_answers_409_with_the_reason_while_a_pool_is_built_on_it(
    collection: Collection, people: dict[str, User]
) -> None:
    pool_on(collection, name="news-pool", managers=[people["owner"]])
    answer = client_for(people["owner"]).delete(URL)
    assert answer.status_code == 409
    assert answer.json() == {
        "detail": "collection 'news' is in use: pool 'news-pool' is built on it (delete it first)"
    }
    assert intact(collection)


def test_it_answers_409_while_an_interleaving_experiment_depends_on_it(
    collection: Collection, people: dict[str, User]
) -> None:
    experiments.create_experiment(name="ab", collection=collection, run_a="alpha", run_b="beta")
    answer = client_for(people["owner"]).delete(URL)
    assert answer.status_code == 409
    assert "1 interleaving experiment depends on it" in answer.json()["detail"]
    assert intact(collection)


@pytest.mark.parametrize("who, expected", [("other", 404), ("rater", 403), ("admin", 204)])
def test_it_lets_only_the_collections_managers_delete_it_by_api(
    collection: Collection, people: dict[str, User], who: str, expected: int
) -> None:
    answer = client_for(people[who]).delete(URL)
    assert answer.status_code == expected
    assert gone(collection) if expected == 204 else intact(collection)


def test_it_answers_404_to_a_manager_of_a_pool_on_it_who_does_not_manage_it(
    collection: Collection, people: dict[str, User]
) -> None:
    """Reading a collection (as a manager of one of its pools) is not managing it."""
    pool_on(collection, name="theirs", managers=[people["other"]])
    assert client_for(people["other"]).get(URL).status_code == 200
    assert client_for(people["other"]).delete(URL).status_code == 404
    assert intact(collection)


def test_it_asks_an_anonymous_caller_to_authenticate(collection: Collection) -> None:
    assert client_for(None).delete(URL).status_code == 401
    assert intact(collection)


# ------------------------------------------------------------------------------------------------ the page


def test_it_links_the_delete_page_from_the_collection_page(
    collection: Collection, people: dict[str, User]
) -> None:
    page = client_as(people["owner"]).get("/collections/news/")
    assert f'href="{PAGE}"' in page.content.decode()


def test_it_says_what_goes_and_asks_to_confirm(collection: Collection, people: dict[str, User]) -> None:
    page = client_as(people["owner"]).get(PAGE)
    assert page.status_code == 200
    body = page.content.decode()
    assert "20 documents, 2 topics and 2 runs" in body
    assert "Delete collection news</button>" in body
    assert page.context["refusal"] is None


def test_it_deletes_on_confirmation_and_lands_on_the_collection_list(
    collection: Collection, people: dict[str, User]
) -> None:
    answer = client_as(people["owner"]).post(PAGE)
    assert answer.status_code == 302 and answer["Location"] == "/collections/"
    assert [str(m) for m in get_messages(answer.wsgi_request)] == [
        "Collection news deleted with its 20 documents, 2 topics and 2 runs."
    ]
    assert gone(collection)


def test_it_shows_why_not_and_offers_no_button_while_a_pool_is_built_on_it(
    collection: Collection, people: dict[str, User]
) -> None:
    pool_on(collection, name="news-pool", managers=[people["owner"]])
    page = client_as(people["owner"]).get(PAGE)
    assert page.status_code == 200
    body = page.content.decode()
    assert (
        "This collection cannot be deleted: collection &#x27;news&#x27; is in use: "
        "pool &#x27;news-pool&#x27; is built on it (delete it first)." in body
    )
    assert "<button" not in body.split('class="card delete-collection"')[1]


def test_it_deletes_nothing_on_a_refused_confirmation_and_says_why(
    collection: Collection, people: dict[str, User], tmp_path: Path
) -> None:
    click_log_on(collection, tmp_path)
    answer = client_as(people["owner"]).post(PAGE)
    assert answer.status_code == 302 and answer["Location"] == "/collections/news/"
    assert [str(m) for m in get_messages(answer.wsgi_request)] == [
        "collection 'news' is in use: 1 click log depends on it (delete it first)"
    ]
    assert intact(collection)


@pytest.mark.parametrize("method", ["get", "post"])
@pytest.mark.parametrize("who, expected", [("other", 404), ("rater", 403)])
def test_it_lets_only_the_collections_managers_open_the_delete_page(
    collection: Collection, people: dict[str, User], method: str, who: str, expected: int
) -> None:
    client = client_as(people[who])
    answer = client.get(PAGE) if method == "get" else client.post(PAGE)
    assert answer.status_code == expected
    assert intact(collection)


def test_it_sends_an_anonymous_visitor_to_log_in(collection: Collection) -> None:
    answer = client_as(None).post(PAGE)
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/login/")
    assert intact(collection)


def test_it_does_not_send_them_to_delete_a_pool_that_holds_peoples_work(
    collection: Collection, people: dict[str, User]
) -> None:
    """A judged pool is never deleted: the refusal says it keeps the collection, not "delete it first"."""
    pool_on(collection, name="news-pool", managers=[people["owner"]])
    adjudication.set_gold(
        item=PoolItem.objects.filter(pool__name="news-pool")[0], grade=1, by=people["owner"]
    )
    refusal = deletion.collection_deletion_refusal(collection, user=people["owner"])
    assert str(refusal) == (
        "collection 'news' is in use: pool 'news-pool' is built on it (a pool that holds people's work is "
        "kept, and so is its collection)"
    )

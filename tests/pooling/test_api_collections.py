"""The REST API of collections, topics, documents, runs and jobs: content, permissions, schema.

Who may: pool managers and admins (200); raters and outsiders, plain users, are refused (403); an
anonymous client is asked to authenticate (401, or 403). Token authentication works like a session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from drf_spectacular.validation import validate_schema
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from pooling.models import Collection, Document, Job, Run, RunRow, Topic
from tests.conftest import client_for

DATA = Path(__file__).resolve().parent.parent / "data"
GOOD = DATA / "good"

pytestmark = pytest.mark.django_db


@pytest.fixture
def news(db: None, manager: Any) -> Collection:
    """The good collection: 12 documents, 3 topics, runs run_a and run_b, and one finished import job."""
    call_command("create_collection", "news", description="tiny newswire", owner="manager")
    call_command("import_documents", "news", str(GOOD / "docs.jsonl"))
    call_command("import_topics", "news", str(GOOD / "topics.jsonl"))
    call_command("import_run", "news", str(GOOD / "run_a.txt"))
    call_command("import_run", "news", str(GOOD / "run_b.txt.gz"))
    collection = Collection.objects.get(name="news")
    Job.objects.create(kind=Job.Kind.RUN, collection=collection, status=Job.Status.DONE, upload_name="x.txt")
    return collection


@pytest.fixture
def other(db: None, manager: Any) -> Collection:
    """A second collection with a topic 301 of its own (the manager's too)."""
    collection = Collection.objects.create(name="other")
    collection.managers.add(manager)
    Topic.objects.create(collection=collection, qid="301", query="elsewhere")
    return collection


def ids(news: Collection) -> dict[str, int]:
    return {
        "topic": Topic.objects.get(collection=news, qid="301").pk,
        "document": Document.objects.get(collection=news, docid="d01").pk,
        "run": Run.objects.get(collection=news, name="run_a").pk,
        "job": Job.objects.get().pk,
    }


def read_endpoints(news: Collection) -> list[str]:
    """Every GET endpoint of the ingestion layer."""
    key = ids(news)
    return [
        "/api/collections/",
        "/api/collections/news/",
        "/api/collections/news/topics/",
        "/api/collections/news/documents/",
        "/api/collections/news/runs/",
        "/api/topics/",
        f"/api/topics/{key['topic']}/",
        "/api/documents/",
        f"/api/documents/{key['document']}/",
        "/api/runs/",
        f"/api/runs/{key['run']}/",
        f"/api/runs/{key['run']}/topics/301/",
        "/api/jobs/",
        f"/api/jobs/{key['job']}/",
    ]


def persona(request: pytest.FixtureRequest, name: str) -> Any:
    return None if name == "anonymous" else request.getfixturevalue(name)


# ----------------------------------------------------------------------------------------- permissions


@pytest.mark.parametrize(
    ("who", "allowed"),
    [("anonymous", False), ("rater", False), ("outsider", False), ("manager", True), ("admin_user", True)],
)
def test_it_lets_only_managers_and_admins_read(
    request: pytest.FixtureRequest, news: Collection, who: str, allowed: bool
) -> None:
    client = client_for(persona(request, who))

    codes = {url: client.get(url).status_code for url in read_endpoints(news)}

    if allowed:
        assert codes == dict.fromkeys(codes, 200)
    elif who == "anonymous":
        assert set(codes.values()) <= {401, 403}
        assert codes["/api/collections/"] == 401  # token authentication asks for credentials
    else:
        assert codes == dict.fromkeys(codes, 403)


@pytest.mark.parametrize(
    ("who", "code"),
    [("anonymous", 401), ("rater", 403), ("outsider", 403), ("manager", 202), ("admin_user", 202)],
)
def test_it_lets_only_managers_and_admins_write(
    request: pytest.FixtureRequest,
    news: Collection,
    who: str,
    code: int,
    django_capture_on_commit_callbacks: Any,
) -> None:
    client = client_for(persona(request, who))
    runs_before = Run.objects.count()

    created = client.post("/api/collections/", {"name": f"made-by-{who.replace('_', '-')}"}, format="json")
    with (GOOD / "run_a.txt").open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        imported = client.post(
            "/api/collections/news/imports/",
            {"kind": "run", "file": handle, "name": f"by-{who}"},
            format="multipart",
        )
    deleted = client.delete(f"/api/runs/{Run.objects.get(name='run_b').pk}/")

    if code == 202:
        assert (created.status_code, imported.status_code, deleted.status_code) == (201, 202, 204)
        assert Run.objects.count() == runs_before  # one imported, one deleted
        assert Run.objects.filter(name=f"by-{who}").exists()
        assert not RunRow.objects.filter(run__name="run_b").exists()
    else:
        assert (created.status_code, imported.status_code, deleted.status_code) == (code, code, code)
        assert Collection.objects.count() == 1
        assert Run.objects.count() == runs_before
        assert Job.objects.count() == 1


def test_it_authenticates_with_a_token(news: Collection, manager: Any, rater: Any) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=manager).key}")
    assert client.get("/api/collections/").status_code == 200
    assert client.get(f"/api/runs/{ids(news)['run']}/topics/301/").status_code == 200

    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=rater).key}")
    assert client.get("/api/collections/").status_code == 403

    client.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef01234567")
    response = client.get("/api/collections/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


# ------------------------------------------------------------------------------------------- content


def test_it_lists_collections_with_counts(news: Collection, other: Collection, manager: Any) -> None:
    response = client_for(manager).get("/api/collections/")

    body = response.json()
    assert body["count"] == 2
    rows = {row["name"]: row for row in body["results"]}
    assert {key: rows["news"][key] for key in ("description", "documents", "topics", "runs")} == {
        "description": "tiny newswire",
        "documents": 12,
        "topics": 3,
        "runs": 2,
    }
    assert (rows["other"]["documents"], rows["other"]["topics"], rows["other"]["runs"]) == (0, 1, 0)


def test_it_shows_a_collection_by_name(news: Collection, manager: Any) -> None:
    client = client_for(manager)

    detail = client.get("/api/collections/news/").json()

    assert (detail["id"], detail["name"], detail["documents"], detail["runs"]) == (news.pk, "news", 12, 2)
    assert client.get("/api/collections/nowhere/").status_code == 404


def test_it_creates_a_collection_and_refuses_a_duplicate(news: Collection, manager: Any) -> None:
    client = client_for(manager)

    created = client.post("/api/collections/", {"name": "fresh", "description": "d"}, format="json")
    duplicate = client.post("/api/collections/", {"name": "news"}, format="json")
    bad = client.post("/api/collections/", {"name": "not a slug"}, format="json")

    assert created.status_code == 201
    assert created.json()["name"] == "fresh"
    assert duplicate.status_code == 400
    assert "name" in duplicate.json()
    assert bad.status_code == 400
    assert "name" in bad.json()
    assert sorted(Collection.objects.values_list("name", flat=True)) == ["fresh", "news"]


def test_it_answers_a_create_with_every_field_its_schema_requires(manager: Any) -> None:
    client = client_for(manager)
    schema = client.get("/api/schema/?format=json").json()
    required = schema["components"]["schemas"]["Collection"]["required"]

    created = client.post("/api/collections/", {"name": "fresh"}, format="json")

    assert created.status_code == 201
    assert sorted(set(required) - set(created.json())) == []
    assert (created.json()["documents"], created.json()["topics"], created.json()["runs"]) == (0, 0, 0)


def test_it_lists_a_collections_topics_documents_and_runs(
    news: Collection, other: Collection, manager: Any
) -> None:
    client = client_for(manager)

    topics = client.get("/api/collections/news/topics/").json()
    documents = client.get("/api/collections/news/documents/").json()
    runs = client.get("/api/collections/news/runs/").json()

    assert topics["count"] == 3
    assert [t["qid"] for t in topics["results"]] == ["301", "302", "303"]
    assert topics["results"][2]["segments"] == ["head", "navigational"]
    assert topics["results"][0]["query"] == "international organized crime"
    assert documents["count"] == 12
    assert [d["docid"] for d in documents["results"]] == [f"d{i:02d}" for i in range(1, 13)]
    assert documents["results"][0]["metadata"] == {"source": "newswire", "year": 1991}
    assert [(r["name"], r["num_rows"], r["num_topics"], r["collection"]) for r in runs["results"]] == [
        ("run_a", 10, 3, "news"),
        ("run_b", 9, 3, "news"),
    ]
    assert client.get("/api/collections/other/topics/").json()["count"] == 1


def test_it_pages_with_limit_and_offset(news: Collection, manager: Any) -> None:
    client = client_for(manager)

    page = client.get("/api/collections/news/documents/?limit=5&offset=10").json()

    assert page["count"] == 12
    assert [d["docid"] for d in page["results"]] == ["d11", "d12"]
    assert page["next"] is None
    assert "offset=5" in page["previous"]
    assert len(client.get("/api/documents/?limit=4").json()["results"]) == 4


def test_it_shows_topics_documents_and_runs_by_id(news: Collection, manager: Any) -> None:
    client = client_for(manager)
    key = ids(news)

    topic = client.get(f"/api/topics/{key['topic']}/").json()
    document = client.get(f"/api/documents/{key['document']}/").json()
    run = client.get(f"/api/runs/{key['run']}/").json()

    assert (topic["qid"], topic["segments"]) == ("301", ["head"])
    assert topic["narrative"].startswith("A relevant document must name")
    assert (document["docid"], document["url"]) == ("d01", "https://news.example.org/1991/mafia-networks")
    assert (run["name"], run["source_file"], run["num_rows"]) == ("run_a", "run_a.txt", 10)
    assert client.get("/api/topics/999999/").status_code == 404
    assert client.get("/api/runs/999999/").status_code == 404


def test_it_serves_a_ranked_list_in_trec_eval_order(
    news: Collection, other: Collection, manager: Any
) -> None:
    client = client_for(manager)
    run_a = Run.objects.get(name="run_a").pk
    run_b = Run.objects.get(name="run_b").pk

    body = client.get(f"/api/runs/{run_a}/topics/301/").json()
    tie = client.get(f"/api/runs/{run_b}/topics/303/").json()

    assert (body["run"], body["qid"]) == ("run_a", "301")
    assert body["results"] == [
        {"rank": 1, "docid": "d01", "score": 12.5},
        {"rank": 2, "docid": "d04", "score": 9.75},
        {"rank": 3, "docid": "d02", "score": 9.75},
        {"rank": 4, "docid": "d03", "score": 3.0},
    ]
    assert [(r["docid"], r["score"]) for r in tie["results"]] == [("d10", -0.3), ("d12", -0.4), ("d09", -0.4)]
    assert client.get(f"/api/runs/{run_a}/topics/999/").status_code == 404
    # a topic of another collection is not this run's topic
    Topic.objects.filter(collection=news, qid="302").delete()
    assert client.get(f"/api/runs/{run_a}/topics/302/").status_code == 404


def test_it_lists_jobs_with_status_counts_and_errors(
    news: Collection, manager: Any, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    settings.IMPORT_CHECK_MAX_BYTES = 0  # the bad file goes to its job, which fails
    client = client_for(manager)
    with (
        (DATA / "bad" / "run_short_line.txt").open("rb") as handle,
        django_capture_on_commit_callbacks(execute=True),
    ):
        failed = client.post(
            "/api/collections/news/imports/", {"kind": "run", "file": handle}, format="multipart"
        ).json()
    with (GOOD / "topics.tsv").open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        done = client.post(
            "/api/collections/news/imports/", {"kind": "topics", "file": handle}, format="multipart"
        ).json()

    assert failed["status"] == done["status"] == "queued"  # the answer comes before the task runs
    listing = client.get("/api/jobs/").json()
    assert listing["count"] == 3
    by_id = {job["id"]: job for job in listing["results"]}
    assert by_id[failed["id"]]["status"] == "failed"
    assert by_id[failed["id"]]["errors"] == [
        "run_short_line.txt:3: expected 6 fields 'qid Q0 docid rank score tag', found 5"
    ]
    assert by_id[done["id"]]["status"] == "done"
    assert by_id[done["id"]]["counts"]["updated"] == 3
    assert by_id[done["id"]]["collection"] == "news"
    assert by_id[done["id"]]["upload_name"] == "topics.tsv"
    detail = client.get(f"/api/jobs/{done['id']}/").json()
    assert detail["progress"] == 1.0
    assert detail["started_at"] is not None
    assert detail["finished_at"] >= detail["started_at"]
    assert client.get("/api/jobs/999999/").status_code == 404


def test_it_deletes_a_run_with_its_rows(news: Collection, manager: Any) -> None:
    run_a = Run.objects.get(name="run_a")

    response = client_for(manager).delete(f"/api/runs/{run_a.pk}/")

    assert response.status_code == 204
    assert list(Run.objects.values_list("name", flat=True)) == ["run_b"]
    assert RunRow.objects.count() == 9


# -------------------------------------------------------------------------------------------- schema


def test_it_serves_a_valid_openapi_schema(manager: Any) -> None:
    response = client_for(manager).get("/api/schema/?format=json")

    assert response.status_code == 200
    schema = response.json()
    validate_schema(schema)  # raises jsonschema.ValidationError if not valid OpenAPI 3
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in (
        "/api/collections/",
        "/api/collections/{name}/",
        "/api/collections/{name}/imports/",
        "/api/collections/{name}/topics/",
        "/api/runs/{id}/topics/{qid}/",
        "/api/jobs/{id}/",
    ):
        assert path in paths, path
    imports = paths["/api/collections/{name}/imports/"]["post"]
    assert "multipart/form-data" in imports["requestBody"]["content"]
    assert "202" in imports["responses"]


def test_it_serves_the_api_docs(manager: Any) -> None:
    response = client_for(manager).get("/api/docs/")

    assert response.status_code == 200
    assert b"swagger" in response.content.lower()
    # The page's start-up script is a file of its own (the CSP allows no inline script); it loads the schema.
    assert b'src="/api/docs/?script="' in response.content
    script = client_for(manager).get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript") and b"/api/schema/" in script.content

"""The manager's campaign pages of the pooling app: collections and uploads, a pool created with a live
size and cost preview, runs added to a pool with the preview of what they bring. Each page is tried by
an anonymous visitor, a rater, a manager of another pool, the pool's manager and an admin."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from pooling import imports, pool_reads
from pooling.models import Collection, Job, Pool, Run
from tests.factories import make_collection, make_manager, make_pool, make_run, make_user

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"


@pytest.fixture
def people(db):
    return {
        "owner": make_manager("owner"),
        "other": make_manager("other-manager"),
        "rater": make_user("a-rater"),
        "admin": make_user("root", is_staff=True, is_superuser=True),
    }


@pytest.fixture
def campaign(people):
    """A collection and a built pool of `owner`, with a third run not in the pool; `other` has its own."""
    collection = make_collection(name="news", managers=[people["owner"]])
    pool = make_pool(
        collection=collection, name="news-pool", managers=[people["owner"]], raters=[people["rater"]]
    )
    make_run(
        collection=collection, name="gamma", lists={"q1": ["d001", "d007", "d008"], "q2": ["d010", "d014"]}
    )
    make_pool(name="elsewhere", managers=[people["other"]])
    return pool


def client_as(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


PAGES = [
    ("setup:collection", {"name": "news"}),
    ("setup:pool-create", {"name": "news"}),
    ("setup:pool-preview", {"name": "news"}),
    ("setup:add-runs", {"name": "news-pool"}),
    ("setup:add-runs-preview", {"name": "news-pool"}),
]


@pytest.mark.parametrize(("route", "kwargs"), PAGES)
@pytest.mark.parametrize(
    ("who", "expected"), [(None, 302), ("rater", 403), ("other", 404), ("owner", 200), ("admin", 200)]
)
def test_it_lets_only_the_manager_of_the_object_see_each_page(campaign, people, route, kwargs, who, expected):
    response = client_as(people.get(who)).get(reverse(route, kwargs=kwargs))
    assert response.status_code == expected
    if expected == 302:
        assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(("who", "expected"), [(None, 302), ("rater", 403), ("owner", 200), ("admin", 200)])
def test_it_lists_only_the_collections_a_manager_manages(campaign, people, who, expected):
    response = client_as(people.get(who)).get(reverse("setup:collections"))
    assert response.status_code == expected
    if expected == 200:
        body = response.content.decode()
        assert "news" in body
        assert (Collection.objects.exclude(name="news").first().name in body) == (who == "admin")


def test_it_shows_a_collections_contents_and_leads_to_a_new_pool(campaign, people):
    response = client_as(people["owner"]).get(reverse("setup:collection", kwargs={"name": "news"}))
    body = response.content.decode()
    assert response.context["counts"] == {"documents": 20, "topics": 2, "runs": 3}
    assert '<td class="num runs">3</td>' in body and "gamma" in body
    assert reverse("setup:pool-create", kwargs={"name": "news"}) in body
    assert [pool.name for pool in response.context["pools"]] == ["news-pool"]


def test_it_creates_a_collection_whose_creator_manages_it(people):
    response = client_as(people["owner"]).post(reverse("setup:collections"), {"name": "fresh"})
    assert response.status_code == 302
    assert list(Collection.objects.get(name="fresh").managers.all()) == [people["owner"]]
    again = client_as(people["owner"]).post(reverse("setup:collections"), {"name": "fresh"})
    assert "already exists" in again.content.decode()
    assert client_as(people["rater"]).post(reverse("setup:collections"), {"name": "x"}).status_code == 403
    assert not Collection.objects.filter(name="x").exists()


def _pool_fields(collection: Collection, **fields) -> dict:
    runs = [str(run.pk) for run in Run.objects.filter(collection=collection, name__in=["alpha", "beta"])]
    return {"name": "fresh-pool", "runs": runs, "strategy": "depth", "depth": "3",
            "judgements_per_item": "2", "price_per_judgement": "0.50", **fields}  # fmt: skip


def test_it_previews_the_size_and_cost_that_create_pool_then_has(campaign, people):
    collection = campaign.collection
    fields = _pool_fields(collection)
    preview = client_as(people["owner"]).get(reverse("setup:pool-preview", kwargs={"name": "news"}), fields)
    estimate = preview.context["estimate"]
    # alpha and beta to depth 3: q1 d001 d002 d003 d005, q2 d010 d011 d012 d013
    assert (estimate["items"], estimate["judgements"], estimate["cost"]) == (8, 16, 8.0)
    assert estimate["topics"] == [{"qid": "q1", "items": 4}, {"qid": "q2", "items": 4}]
    assert '<td class="num judgements">16</td>' in preview.content.decode()
    # the preview changes with the fields, and nothing was created by looking
    deeper = client_as(people["owner"]).get(
        reverse("setup:pool-preview", kwargs={"name": "news"}), {**fields, "depth": "1"}
    )
    assert deeper.context["estimate"]["items"] == 4
    assert not Pool.objects.filter(name="fresh-pool").exists()
    created = client_as(people["owner"]).post(reverse("setup:pool-create", kwargs={"name": "news"}), fields)
    assert created.status_code == 302
    pool = Pool.objects.get(name="fresh-pool")
    assert list(pool.managers.all()) == [people["owner"]]
    assert pool_reads.estimate_pool(pool=pool) == {
        k: estimate[k] for k in ("candidates", "items", "judgements", "cost")
    }


def test_it_previews_with_partial_fields_and_refuses_a_bad_form_naming_the_field(campaign, people):
    owner = client_as(people["owner"])
    partial = owner.get(reverse("setup:pool-preview", kwargs={"name": "news"}), {"depth": "x"})
    # a depth that is not a number: the preview says so, not figures for the default depth
    assert partial.status_code == 200 and partial.context["estimate"] is None
    assert "Depth: Enter a whole number." in partial.content.decode()
    bad = owner.post(
        reverse("setup:pool-create", kwargs={"name": "news"}), _pool_fields(campaign.collection, depth="0")
    )
    assert bad.status_code == 200
    assert "depth" in bad.context["form"].errors
    budgetless = owner.post(
        reverse("setup:pool-create", kwargs={"name": "news"}),
        _pool_fields(campaign.collection, strategy="mtf"),
    )
    assert "budget" in budgetless.context["form"].errors
    assert not Pool.objects.filter(name="fresh-pool").exists()


def test_it_does_not_offer_another_collections_runs(campaign, people):
    foreign = Run.objects.exclude(collection=campaign.collection).first()
    response = client_as(people["owner"]).post(
        reverse("setup:pool-create", kwargs={"name": "news"}),
        _pool_fields(campaign.collection, runs=[foreign.pk]),
    )
    assert "runs" in response.context["form"].errors
    assert not Pool.objects.filter(name="fresh-pool").exists()


def test_it_lists_only_runs_not_in_the_pool_and_previews_what_they_bring(
    campaign, people, django_capture_on_commit_callbacks
):
    owner = client_as(people["owner"])
    page = owner.get(reverse("setup:add-runs", kwargs={"name": "news-pool"}))
    offered = [run.name for run in page.context["form"].fields["runs"].queryset]
    assert offered == ["gamma"]
    gamma = Run.objects.get(collection=campaign.collection, name="gamma")
    preview = owner.get(reverse("setup:add-runs-preview", kwargs={"name": "news-pool"}), {"runs": [gamma.pk]})
    # depth 5: gamma brings q1 d007 d008 and q2 d014 (d001, d010 are pooled already)
    assert preview.context["added"] == {"runs": ["gamma"], "items": 3, "judgements": 3, "cost": 3.0}
    before = campaign.items.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(reverse("setup:add-runs", kwargs={"name": "news-pool"}), {"runs": [gamma.pk]})
    assert response.status_code == 302
    assert campaign.items.count() - before == 3
    # the addition is a job with a page of its own: its progress, then the new items, then the pool
    job = Job.objects.get(kind=Job.Kind.ADD_RUNS)
    assert response["Location"] == reverse("jobs:job-detail", kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.counts["items_added"] == 3
    assert job.params["runs"] == [gamma.pk]
    page = owner.get(response["Location"]).content.decode()
    assert (
        "items_added: <strong>3</strong>" in page
        and reverse("pooling:pool-detail", args=["news-pool"]) in page
    )
    assert client_as(people["other"]).get(response["Location"]).status_code == 404
    again = owner.get(reverse("setup:add-runs", kwargs={"name": "news-pool"}))
    assert list(again.context["form"].fields["runs"].queryset) == []


def test_it_does_not_let_another_manager_add_runs(campaign, people):
    gamma = Run.objects.get(collection=campaign.collection, name="gamma")
    response = client_as(people["other"]).post(
        reverse("setup:add-runs", kwargs={"name": "news-pool"}), {"runs": [gamma.pk]}
    )
    assert response.status_code == 404
    assert not campaign.pool_runs.filter(run=gamma).exists()
    assert not Job.objects.filter(kind=Job.Kind.ADD_RUNS).exists()


def test_it_turns_an_upload_into_a_job_with_its_counts(campaign, people, django_capture_on_commit_callbacks):
    owner = client_as(people["owner"])
    collection = imports.create_collection(name="trec", created_by=people["owner"])
    url = reverse("setup:collection", kwargs={"name": collection.name})
    with (GOOD / "docs.jsonl.gz").open("rb") as handle, django_capture_on_commit_callbacks(execute=True):
        response = owner.post(url, {"kind": "documents", "file": handle})
    assert response.status_code == 302
    job = Job.objects.get(collection=collection, kind="documents")
    assert response["Location"] == reverse("jobs:job-detail", kwargs={"job_id": job.pk})
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.counts["created"] == 12
    assert collection.documents.count() == 12
    page = owner.get(response["Location"])
    assert page.status_code == 200 and "12" in page.content.decode()


def test_it_shows_the_errors_by_line_of_a_bad_upload_and_stores_nothing(people):
    collection = imports.create_collection(name="trec", created_by=people["owner"])
    with (GOOD.parent / "bad" / "docs_missing_docid.jsonl").open("rb") as handle:
        response = client_as(people["owner"]).post(
            reverse("setup:collection", kwargs={"name": "trec"}), {"kind": "documents", "file": handle}
        )
    assert response.status_code == 200
    errors = response.context["form"].errors["file"]
    assert errors and all(error.startswith("docs_missing_docid.jsonl:") for error in errors)
    assert collection.documents.count() == 0 and not Job.objects.filter(collection=collection).exists()


def test_it_refuses_an_upload_to_someone_elses_collection(campaign, people):
    with (GOOD / "topics.tsv").open("rb") as handle:
        response = client_as(people["other"]).post(
            reverse("setup:collection", kwargs={"name": "news"}), {"kind": "topics", "file": handle}
        )
    assert response.status_code == 404
    assert not Job.objects.filter(collection=campaign.collection).exists()


def test_it_replaces_a_run_of_the_same_name_only_when_asked(
    campaign, people, django_capture_on_commit_callbacks
):
    """A run's name that the collection has is refused beside Name (the field at fault), naming the way to
    replace it from this form; ticking Replace swaps the run's rows (the pool that uses it keeps its
    items)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    owner = client_as(people["owner"])
    url = reverse("setup:collection", kwargs={"name": "news"})
    lines = b"q1 Q0 d002 1 5.0 new\nq2 Q0 d003 1 4.0 new\n"
    response = owner.post(url, {"kind": "run", "name": "gamma", "file": SimpleUploadedFile("g.run", lines)})
    assert response.status_code == 200
    assert any("the upload form's Replace" in error for error in response.context["form"].errors["name"])
    gamma = Run.objects.get(collection=campaign.collection, name="gamma")
    assert gamma.num_rows == 5
    with django_capture_on_commit_callbacks(execute=True):
        response = owner.post(
            url, {"kind": "run", "name": "gamma", "replace": "on", "file": SimpleUploadedFile("g.run", lines)}
        )
    assert response.status_code == 302
    job = Job.objects.get(collection=campaign.collection, kind="run")
    assert job.params["replace"] is True and job.params["name"] == "gamma"
    gamma.refresh_from_db()
    assert job.status == Job.Status.DONE and gamma.num_rows == 2
    assert Run.objects.filter(collection=campaign.collection, name="gamma").count() == 1


def test_it_creates_a_pool_of_one_segment_with_its_relevance_level_and_seed_from_the_page(campaign, people):
    """Everything the API's pool creation takes, the page offers: the topics of one segment (a choice of
    the collection's segments), the relevance level and the seed; the preview counts only that segment's
    topics, and the pool created is the one the API would create."""
    owner = client_as(people["owner"])
    page = owner.get(reverse("setup:pool-create", kwargs={"name": "news"})).content.decode()
    assert '<option value="" selected>all topics</option>' in page
    assert '<option value="head">head</option>' in page and '<option value="tail">tail</option>' in page
    one_segment = _pool_fields(campaign.collection, segment="head", relevance_level="2", seed="7")
    preview = owner.get(reverse("setup:pool-preview", kwargs={"name": "news"}), one_segment)
    head = [t.qid for t in campaign.collection.topics.all() if "head" in t.segments]
    assert [t["qid"] for t in preview.context["estimate"]["topics"]] == head
    assert owner.post(reverse("setup:pool-create", kwargs={"name": "news"}), one_segment).status_code == 302
    pool = Pool.objects.get(name="fresh-pool")
    assert (pool.segment, pool.relevance_level, pool.seed) == ("head", 2, 7)
    assert pool_reads.estimate_pool(pool=pool) == {
        k: preview.context["estimate"][k] for k in ("candidates", "items", "judgements", "cost")
    }


def test_the_page_holds_a_new_pool_to_the_rules_the_api_does_no_more_no_fewer(campaign, people):
    """The form has no limits of its own: what the API takes, the page takes (it once refused 150
    judgements an item and depth 200,000), and what the API refuses the page refuses with its message."""
    from tests.conftest import client_for

    owner = client_as(people["owner"])
    url = reverse("setup:pool-create", kwargs={"name": "news"})
    for field, value, message in (
        ("depth", "0", "depth must be at least 1"),
        ("judgements_per_item", "0", "judgements per item must be at least 1"),
        ("relevance_level", "0", "relevance level must be between 1 and 32,767"),
        ("price_per_judgement", "-1", "price per judgement must be at least 0"),
        ("seed", str(2**40), "seed: "),
    ):
        refused = owner.post(url, _pool_fields(campaign.collection, **{field: value}))
        assert refused.status_code == 200, field
        assert any(message in error for error in refused.context["form"].errors[field]), (
            field,
            refused.context["form"].errors,
        )
        api = client_for(people["owner"]).post(
            "/api/pools/",
            {"name": "api-pool", "collection": "news", "runs": ["alpha"], field: int(value)},
            format="json",
        )
        assert api.status_code == 400 and field in api.json(), (field, api.json())
    taken = owner.post(url, _pool_fields(campaign.collection, judgements_per_item="150", depth="200000"))
    assert taken.status_code == 302
    assert (
        Pool.objects.get(name="fresh-pool").judgements_per_item,
        Pool.objects.get(name="fresh-pool").depth,
    ) == (150, 200_000)


def test_the_upload_page_takes_a_runs_options_as_the_api_does(
    campaign, people, django_capture_on_commit_callbacks
):
    """A run whose file ranks documents for topics the collection lacks: the page, like the API and the
    command, may skip those rows (counted, warned) instead of refusing the file, and keeps a description."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.conftest import client_for

    body = b"q1 Q0 d001 1 2.0 x\nq1 Q0 d002 2 1.0 x\nq99 Q0 d003 1 5.0 x\n"
    owner = client_as(people["owner"])
    url = reverse("setup:collection", kwargs={"name": "news"})
    refused = owner.post(url, {"kind": "run", "file": SimpleUploadedFile("strict.run", body)})
    assert refused.status_code == 200 and not Run.objects.filter(name="strict").exists()
    options = {"skip_unknown_topics": "on", "description": "BM25, k1=0.9"}
    with django_capture_on_commit_callbacks(execute=True):
        page = owner.post(url, {"kind": "run", "file": SimpleUploadedFile("lenient.run", body), **options})
        api = client_for(people["owner"]).post(
            "/api/collections/news/imports/",
            {"kind": "run", "file": SimpleUploadedFile("viaapi.run", body), "skip_unknown_topics": True,
             "description": "BM25, k1=0.9"},
            format="multipart",
        )  # fmt: skip
    assert page.status_code == 302 and api.status_code in (201, 202), api.content
    by_page, by_api = Job.objects.get(upload_name="lenient.run"), Job.objects.get(upload_name="viaapi.run")
    assert by_page.status == by_api.status == Job.Status.DONE
    timeless = [{k: v for k, v in job.counts.items() if k != "seconds"} for job in (by_page, by_api)]
    assert timeless[0] == timeless[1] == {"rows": 2, "topics": 1} and by_page.warnings == [
        w.replace("viaapi", "lenient") for w in by_api.warnings
    ]
    run = Run.objects.get(collection=campaign.collection, name="lenient")
    assert run.description == "BM25, k1=0.9" and run.rows.count() == 2


def test_a_pool_whose_runs_retrieved_nothing_for_its_topics_says_so_before_and_after_its_build(
    campaign, people
):
    """A segment whose topics no chosen run has results for makes a pool with nothing to judge (until a
    run that has is added: a pool may wait for its ranker). The preview said "Choose runs" with runs
    chosen, and the built pool's page said "Next: set up judging"; both now say there is nothing to judge
    and why, and the pool page leads to adding a run."""
    from html import unescape

    from pooling import pool_build
    from pooling.models import Topic

    Topic.objects.create(collection=campaign.collection, qid="q9", query="lonely", segments=["lonely"])
    owner = client_as(people["owner"])
    fields = _pool_fields(campaign.collection, segment="lonely")
    said = "The chosen runs have no results for the topics of segment lonely"
    preview = owner.get(reverse("setup:pool-preview", kwargs={"name": "news"}), fields)
    assert preview.context["estimate"]["candidates"] == 0
    shown = unescape(preview.content.decode())
    assert said in shown and "Choose runs" not in shown
    elsewhere = owner.get(
        reverse("setup:pool-preview", kwargs={"name": "news"}), _pool_fields(campaign.collection)
    )
    assert said not in unescape(elsewhere.content.decode())
    assert owner.post(reverse("setup:pool-create", kwargs={"name": "news"}), fields).status_code == 302
    pool = Pool.objects.get(name="fresh-pool")
    pool_build.build_pool(pool=pool)
    page = unescape(owner.get(reverse("pooling:pool-detail", kwargs={"name": pool.name})).content.decode())
    assert "nothing to judge: the pool's runs have no results for the topics of segment lonely" in page
    assert "set up judging and add raters" not in page
    assert f'href="/pools/{pool.name}/runs/add/"' in page

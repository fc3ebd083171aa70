"""Pool pages (list with progress, statistics with the overlap heatmap, build) and the Pool admin, which
creates, builds and extends pools through the services. Every page for every persona."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from pooling import pool_build
from pooling.models import Collection, Job, Pool, PoolItem, PoolRun, Run
from tests.factories import make_collection, make_run

pytestmark = pytest.mark.django_db


PERSONAS = ["anonymous", "rater", "outsider", "manager", "admin_user"]
EVIL = "<i>evil</i>"


def browser(request: Any, who: str) -> Client:
    client = Client()
    if who != "anonymous":
        client.force_login(request.getfixturevalue(who))
    return client


@pytest.fixture
def collection(db: None, manager: Any) -> Collection:
    return make_collection(name="news", topics=("q1", "q2"), managers=[manager])


@pytest.fixture
def runs(collection: Collection) -> list[Run]:
    return [
        make_run(collection=collection, name="alpha",
                 lists={"q1": ["d001", "d002", "d003", "d004"], "q2": ["d010", "d011", "d012"]}),
        make_run(collection=collection, name="beta",
                 lists={"q1": ["d003", "d005", "d001", "d006"], "q2": ["d013", "d010"]}),
        make_run(collection=collection, name=EVIL, lists={"q1": ["d001", "d009"]}),
    ]  # fmt: skip


@pytest.fixture
def pool(collection: Collection, runs: list[Run]) -> Pool:
    pool = pool_build.create_pool(
        name="campaign",
        collection=collection,
        runs=runs,
        depth=3,
        judgements_per_item=2,
        price_per_judgement=0.5,
        created_by=collection.managers.get(),
    )
    pool_build.build_pool(pool=pool)
    pool.refresh_from_db()
    return pool


# ------------------------------------------------------------------------------------- permissions


@pytest.mark.parametrize("who", PERSONAS)
def test_it_shows_pool_pages_to_managers_and_admins_only(
    request: Any, who: str, pool: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    client = browser(request, who)
    allowed = who in ("manager", "admin_user")
    pages = [reverse("pooling:pool-list"), reverse("pooling:pool-detail", args=[pool.name])]
    for url in pages:
        response = client.get(url)
        if allowed:
            assert response.status_code == 200, url
        elif who == "anonymous":
            assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
        else:
            assert response.status_code == 403, url
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("pooling:pool-build", args=[pool.name]))
    if allowed:
        assert response.status_code == 302
        job = Job.objects.get(kind="build_pool", params__pool=pool.pk, status="done")
        assert response["Location"] == reverse("jobs:job-detail", args=[job.pk])  # the build's page
    else:
        assert response.status_code in (302, 403)
        assert not Job.objects.exists()


@pytest.mark.parametrize("who", PERSONAS)
def test_it_lets_only_admins_into_the_pool_admin(request: Any, who: str, pool: Pool) -> None:
    client = browser(request, who)
    for url in (
        reverse("admin:pooling_pool_changelist"),
        reverse("admin:pooling_pool_add"),
        reverse("admin:pooling_pool_change", args=[pool.pk]),
    ):
        response = client.get(url)
        if who == "admin_user":
            assert response.status_code == 200, url
        else:
            assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_it_refuses_to_build_with_a_get(manager: Any, pool: Pool) -> None:
    client = Client()
    client.force_login(manager)
    assert client.get(reverse("pooling:pool-build", args=[pool.name])).status_code == 405
    assert not Job.objects.exists()


# ------------------------------------------------------------------------------------------- pages


def page(user: Any, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def matched(pattern: str, html: str) -> str:
    """The first match of ``pattern`` (``re.S``) in the page, which the caller expects to be there."""
    match = re.search(pattern, html, re.S)
    assert match is not None, pattern
    return match.group(0)


def test_it_lists_pools_with_status_and_judging_progress(
    manager: Any, pool: Pool, collection: Collection
) -> None:
    pool_build.create_pool(
        name="draft-one", collection=collection, runs=[Run.objects.get(name="alpha")], depth=2,
        created_by=manager,
    )  # fmt: skip
    items = PoolItem.objects.filter(pool=pool).order_by("pk")
    PoolItem.objects.filter(pk__in=list(items.values_list("pk", flat=True)[:3])).update(num_judgements=2)
    last = items.last()
    assert last is not None
    PoolItem.objects.filter(pk=last.pk).update(num_judgements=1)  # one of two: not judged yet

    html = page(manager, "/pools/")

    row = matched(r'<tr id="pool-campaign">.*?</tr>', html)
    assert ">built<" in row.replace("</td>", "<").replace('<td class="status">', ">")
    assert "3 / 9" in row  # q1: d001 d002 d003 d005 d009, q2: d010 d011 d012 d013
    assert 'value="33"' in row
    draft = matched(r'<tr id="pool-draft-one">.*?</tr>', html)
    assert "draft" in draft and "0 / 0" in draft
    assert 'http-equiv="refresh"' not in html
    assert reverse("pooling:pool-detail", args=["campaign"]) in html


def test_it_refreshes_the_list_while_a_build_runs(manager: Any, pool: Pool) -> None:
    job = Job.objects.create(kind="build_pool", status="running", params={"pool": pool.pk})
    cache.set(f"job-progress:{job.pk}", {"progress": 0.4, "message": "4 items"}, 60)
    html = page(manager, "/pools/")
    assert '<meta http-equiv="refresh" content="3">' in html
    assert 'value="40"' in html and "build running" in html
    Job.objects.filter(pk=job.pk).update(status="done")
    assert 'http-equiv="refresh"' not in page(manager, "/pools/")


def test_it_shows_the_statistics_of_a_pool(manager: Any, pool: Pool) -> None:
    html = page(manager, f"/pools/{pool.name}/")
    totals = matched(r'<table class="totals">.*?</table>', html)
    assert re.search(r"Items</th><td class=\"num\">9<", totals)
    assert re.search(r'judgements-required">18<', totals)  # 9 items x 2
    assert re.search(r'cost">9.00<', totals)  # at 0.50
    runs = matched(r'<table class="runs">.*?</table>', html)
    # alpha: q1 d001 d002 d003, q2 d010 d011 d012 (unique d002 d011 d012); beta: d003 d005 d001 d013 d010
    assert '<td>alpha</td><td class="num">6</td><td class="num">3</td>' in runs
    assert '<td>beta</td><td class="num">5</td><td class="num">2</td>' in runs
    topics = matched(r'<table class="topics">.*?</table>', html)
    assert '<td>q1</td><td class="num">5</td>' in topics and '<td>q2</td><td class="num">4</td>' in topics
    svg = matched(r'<div class="figure overlap"><svg.*?</svg>', html)
    assert svg.count('class="cell"') == 9
    assert ">0.38<" in svg  # alpha-beta: 3 shared of 8
    assert "Before building" not in html


def test_it_escapes_run_names_on_the_statistics_page(manager: Any, pool: Pool) -> None:
    html = page(manager, f"/pools/{pool.name}/")
    assert EVIL not in html
    assert "&lt;i&gt;evil&lt;/i&gt;" in html


def test_it_shows_size_and_cost_before_building(
    manager: Any, collection: Collection, runs: list[Run]
) -> None:
    pool_build.create_pool(
        name="planned", collection=collection, runs=runs[:2], depth=3, price_per_judgement=2,
        created_by=manager,
    )  # fmt: skip
    html = page(manager, "/pools/planned/")
    estimate = matched(r'<p class="estimate">.*?</p>', html)
    assert "8 candidate items" in estimate and "8 items to judge" in estimate
    assert "8 judgements" in estimate and "estimated cost 16.00" in estimate
    assert ">Build</button>" in html


def test_it_shows_a_running_build_live(manager: Any, pool: Pool) -> None:
    job = Job.objects.create(kind="build_pool", status="running", params={"pool": pool.pk})
    cache.set(f"job-progress:{job.pk}", {"progress": 0.25, "message": "1200 items"}, 60)
    html = page(manager, f"/pools/{pool.name}/")
    assert '<meta http-equiv="refresh" content="3">' in html
    assert re.search(r'class="build-progress">Build running: <progress max="100" value="25">', html)
    assert "1200 items" in html
    assert "<script" not in html  # live without inline scripts


def test_it_builds_from_the_page_once(manager: Any, collection: Collection, runs: list[Run],
                                      django_capture_on_commit_callbacks: Any) -> None:  # fmt: skip
    pool = pool_build.create_pool(name="later", collection=collection, runs=runs, depth=3, created_by=manager)
    client = Client()
    client.force_login(manager)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        client.post("/pools/later/build/")
        response = client.post("/pools/later/build/", follow=True)
    assert Job.objects.filter(kind="build_pool").count() == 1
    assert "being built already" in response.content.decode()
    for callback in callbacks:
        callback()
    pool.refresh_from_db()
    assert pool.status == "built" and PoolItem.objects.filter(pool=pool).count() == 9


def test_it_links_the_pool_bias_report_once_judgements_exist(manager: Any, pool: Pool) -> None:
    assert 'class="pool-bias"' not in page(manager, f"/pools/{pool.name}/")  # nothing judged yet
    PoolItem.objects.filter(pool=pool, document__docid="d001").update(num_judgements=1)
    html = page(manager, f"/pools/{pool.name}/")
    assert (
        f'<a class="pool-bias" href="{reverse("evaluation:pool-bias", kwargs={"name": pool.name})}">' in html
    )


# ------------------------------------------------------------------------------------------- admin


def admin_client(admin_user: Any) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def add_form(collection: Collection, run_list: list[Run], **changes: Any) -> dict[str, Any]:
    data = {
        "name": "from-admin", "description": "", "collection": collection.pk, "segment": "",
        "runs": [run.pk for run in run_list], "strategy": "depth", "depth": 3, "budget": "", "seed": 0,
        "judgements_per_item": 1, "double_judge_fraction": "", "relevance_level": 1,
        "price_per_judgement": "1.00",
    }  # fmt: skip
    data.update(changes)
    return data


def test_it_creates_a_pool_in_the_admin_through_the_service(
    admin_user: Any, collection: Collection, runs: list[Run], monkeypatch: Any
) -> None:
    calls = []
    original = pool_build.create_pool

    def spy(**kwargs: Any) -> Pool:
        calls.append(kwargs)
        return original(**kwargs)

    monkeypatch.setattr(pool_build, "create_pool", spy)
    response = admin_client(admin_user).post(
        reverse("admin:pooling_pool_add"), add_form(collection, runs[:2], strategy="mtf", budget=5, seed=3)
    )
    assert response.status_code == 302, response.content.decode()
    pool = Pool.objects.get(name="from-admin")
    assert len(calls) == 1 and calls[0]["strategy"] == "mtf"
    assert (pool.strategy, pool.budget, pool.seed, pool.status) == ("mtf", 5, 3, "draft")
    assert sorted(PoolRun.objects.filter(pool=pool).values_list("run__name", flat=True)) == ["alpha", "beta"]
    assert response["Location"] == reverse("admin:pooling_pool_changelist")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"strategy": "bandit-maxmean"}, "needs a judgement budget"),
        ({"segment": "nowhere"}, "has segment"),
        ({"runs": []}, "This field is required"),
    ],
)
def test_it_shows_the_services_refusal_in_the_admin_and_stores_nothing(
    admin_user: Any, collection: Collection, runs: list[Run], changes: dict[str, Any], message: str
) -> None:
    response = admin_client(admin_user).post(
        reverse("admin:pooling_pool_add"), add_form(collection, runs, **changes)
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Pool.objects.exists() and not PoolRun.objects.exists()


def test_it_refuses_runs_of_another_collection_in_the_admin(
    admin_user: Any, collection: Collection, runs: list[Run]
) -> None:
    other = make_collection(name="other")
    stranger = make_run(collection=other, name="stranger", lists={"q1": ["d001"]})
    response = admin_client(admin_user).post(
        reverse("admin:pooling_pool_add"), add_form(collection, [*runs, stranger])
    )
    assert response.status_code == 200
    assert "runs not in collection" in response.content.decode()
    assert not Pool.objects.exists()


def test_it_builds_pools_from_an_admin_action_as_jobs(
    admin_user: Any, collection: Collection, runs: list[Run], django_capture_on_commit_callbacks: Any
) -> None:
    pool = pool_build.create_pool(name="queued", collection=collection, runs=runs[:2], depth=3)
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client(admin_user).post(
            reverse("admin:pooling_pool_changelist"), {"action": "build_pools", "_selected_action": [pool.pk]}
        )
    assert response.status_code == 302
    job = Job.objects.get(kind="build_pool")
    assert job.params["pool"] == pool.pk and job.status == "done" and job.created_by == admin_user
    assert PoolItem.objects.filter(pool=pool).count() == 8


def test_it_adds_runs_from_an_admin_action(admin_user: Any, pool: Pool, collection: Collection) -> None:
    gamma = make_run(collection=collection, name="gamma", lists={"q2": ["d014", "d010"]})
    client = admin_client(admin_user)
    url = reverse("admin:pooling_pool_changelist")
    before = PoolItem.objects.filter(pool=pool).count()

    chooser = client.post(url, {"action": "add_runs", "_selected_action": [pool.pk]})
    assert chooser.status_code == 200
    assert "gamma" in chooser.content.decode()
    assert PoolItem.objects.filter(pool=pool).count() == before

    done = client.post(
        url, {"action": "add_runs", "_selected_action": [pool.pk], "apply": "1", "runs": [gamma.pk]}
    )
    assert done.status_code == 302
    assert PoolItem.objects.filter(pool=pool).count() == before + 1  # q2/d014
    assert PoolRun.objects.filter(pool=pool, run=gamma).exists()


def test_it_edits_only_description_and_price_in_the_admin(admin_user: Any, pool: Pool) -> None:
    client = admin_client(admin_user)
    url = reverse("admin:pooling_pool_change", args=[pool.pk])
    html = client.get(url).content.decode()
    assert 'name="description"' in html and 'name="price_per_judgement"' in html
    assert 'name="depth"' not in html and 'name="runs"' not in html
    response = client.post(url, {"description": "round two", "price_per_judgement": "2.50", "depth": 99})
    assert response.status_code == 302
    pool.refresh_from_db()
    assert (pool.description, float(pool.price_per_judgement), pool.depth) == ("round two", 2.5, 3)

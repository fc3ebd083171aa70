"""The finished page of every kind of job: the counts it shows are its own kind's (a run import shows no
`created`, a click log's shows no id) and are the numbers `GET /api/jobs/<id>/` gives, both read from the
job's summary; and it links only to what its viewer may open (a deleted pool named as deleted, a collection
only for who may open its page). An audit found a run import showing `created: 0 · updated: 0` and a
click-label job linking its collection's page, a 404 for the pool manager who started it; a later one, a
documents import's page showing `rows · created · seconds · updated` (PostgreSQL's jsonb key order), and
the jobs of click logs, propensities and click labels not linking what they made."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client

from judgements import crowd_import, releases
from judgements.crowd_import import CrowdImportSummary
from judgements.judges import start_judge_run
from judgements.models import Judge, Release
from online import jobs as online_jobs
from online.models import ClickLog, PropensityEstimate
from pooling import jobs
from pooling.job_summary import NOT_COUNTS, SUMMARIES, JobSummary
from pooling.models import Job, Pool, Run
from pooling.pool_build import BuildSummary
from tests.conftest import client_for
from tests.factories import make_collection, make_manager, make_pool, make_run, make_user
from tests.judgements.judge_factories import copy_judge
from tests.judgements.test_crowd_import import CROWD
from tests.online.helpers import judged_pool
from tests.online.test_api import PAGES, jsonl

GOOD = Path(__file__).resolve().parent.parent / "data" / "good"
RUN = "q1 Q0 d001 1 3.0 gamma\nq1 Q0 d007 2 2.0 gamma\nq2 Q0 d010 1 1.0 gamma\n"

pytestmark = pytest.mark.django_db


def reordered(stored: list[str], written: list[str]) -> bool:
    """Whether the database keeps these keys in another order than they were written, as PostgreSQL's
    jsonb does (by length, then bytes): what shows that a page's order is the summary's, not the row's.
    SQLite keeps the written order, so there the page's order is shown by the page alone."""
    return stored != written if connection.vendor == "postgresql" else stored == written


def upload(name: str, data: bytes | str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data.encode() if isinstance(data, str) else data)


def finished(start: Callable[[], Job], capture: Any) -> Job:
    with capture(execute=True):
        job = start()
    job.refresh_from_db()
    assert (job.status, job.errors) == (Job.Status.DONE, []), job.errors
    return job


def shown_counts(page: str) -> list[tuple[str, str]]:
    """The counts a job page shows, as (name, text) in their order."""
    line = re.search(r'<p class="job-counts">(.*?)</p>', page, re.S)
    assert line is not None, "the page shows no counts"
    return [(key, html.unescape(text)) for key, text in re.findall(r"(\w+): <strong>(.*?)</strong>", line[1])]


def counted(summary: type[JobSummary]) -> list[str]:
    """The counts a summary records: its fields but NOT_COUNTS, its seconds last."""
    return [f.name for f in fields(summary) if f.name not in (*NOT_COUNTS, "seconds")] + ["seconds"]


def as_shown(value: Any) -> str:
    """A count as the page writes it: a breakdown as `3 unpooled, 1 unknown worker`, `none` when empty."""
    if isinstance(value, dict):
        return ", ".join(f"{n} {reason}" for reason, n in sorted(value.items())) or "none"
    return str(value)


@pytest.fixture
def campaign(manager: User) -> Pool:
    make_user("w1"), make_user("w2")
    return judged_pool(grades={"d001": 3, "d003": 1}, managers=[manager])


def start(kind: str, pool: Pool, manager: User, capture: Any, tmp_path: Path) -> tuple[Job, list[str]]:
    """A finished job of `kind` on `pool`, and the counts that kind records, in order."""
    collection = pool.collection

    def imported(file_name: str, data: bytes | str, **params: Any) -> Job:
        return finished(
            lambda: jobs.start_import(
                collection=collection, kind=kind, upload=upload(file_name, data), params=params, user=manager
            ),
            capture,
        )

    def click_log() -> ClickLog:
        finished(
            lambda: online_jobs.start_click_import(
                collection=collection, name="week", format="jsonl", uploads=[jsonl(PAGES)], pool=pool,
                user=manager,
            ),
            capture,
        )  # fmt: skip
        return ClickLog.objects.get(name="week")

    def estimate(log: ClickLog) -> Job:
        theta = {"theta": [1, 0.5, 0.3]}
        return finished(lambda: online_jobs.start_propensity(log=log, method="given", params=theta), capture)

    if kind == "documents":
        job = imported("docs.jsonl", (GOOD / "docs.jsonl").read_bytes())
        return job, ["rows", "created", "updated", "seconds"]
    if kind == "topics":
        job = imported("topics.jsonl", (GOOD / "topics.jsonl").read_bytes())
        return job, ["rows", "created", "updated", "topics", "seconds"]
    if kind == "run":
        return imported("gamma.run", RUN, name="gamma"), ["rows", "topics", "seconds"]
    if kind == "build_pool":
        fresh = make_pool(collection=collection, runs=list(pool.runs.all()), name="fresh", build=False)
        return finished(lambda: jobs.start_build(pool=fresh, user=manager), capture), counted(BuildSummary)
    if kind == "add_runs":
        gamma = make_run(collection=collection, name="gamma", lists={"q1": ["d001", "d007"], "q2": ["d010"]})
        job = finished(lambda: jobs.start_add_runs(pool=pool, runs=[gamma], user=manager), capture)
        return job, counted(BuildSummary)
    if kind == "release":
        job = finished(lambda: releases.start_release(pool=pool, user=manager), capture)
        own = ["items", "judged", "unrateable", "pending", "ties", "judgements", "unselected_candidates",
               "grades", "sources"]  # fmt: skip
        stored = Release.objects.get(pk=job.result["release"]).counts
        assert set(own) == set(stored) and reordered(list(stored), own)
        return job, own
    if kind == "judgements":
        job = finished(
            lambda: crowd_import.start_crowd_import(
                pool=pool, upload=upload("crowd.tsv", CROWD), skip_unpooled=True, user=manager
            ),
            capture,
        )
        return job, counted(CrowdImportSummary)
    if kind == "click_log":
        log = click_log()
        own = ["pages", "impressions", "clicks", "cells", "queries", "unmapped_queries",
               "unmapped_impressions", "unknown_objects", "unknown_impressions",
               "unknown_clicks"]  # fmt: skip
        assert set(own) == set(log.counts) - {"loggers"} and reordered(list(log.counts), [*own, "loggers"])
        return Job.objects.get(kind=kind), own  # in the order the import wrote them, not jsonb's
    if kind == "propensity":
        return estimate(click_log()), ["positions"]
    if kind == "click_labels":
        log = click_log()
        estimate(log)
        job = finished(
            lambda: online_jobs.start_click_labels(
                log=log, estimator="ips", propensity_estimate=PropensityEstimate.objects.get(log=log),
                options={"thresholds": "0.3:1,0.8:3"}, user=manager,
            ),
            capture,
        )  # fmt: skip
        return job, ["labels"]
    assert kind == "judge"
    job = finished(lambda: start_judge_run(judge=copy_judge(pool, tmp_path), user=manager), capture)
    counts = Judge.objects.get(pk=job.params["judge"]).run_counts
    own = ["items", "asked", "graded", "failed", "attempts", "timeouts", "malformed", "exited"]
    assert own != list(counts) and set(own) == {
        key for key, value in counts.items() if isinstance(value, int)
    }
    return job, own


def test_it_runs_a_job_of_every_kind_that_has_a_task() -> None:
    assert set(jobs.TASKS) == set(Job.Kind)  # every kind runs a task (so every failed job can be retried)
    assert len(KINDS) == len(jobs.TASKS)


def test_it_knows_the_summary_of_every_kind_of_job() -> None:
    from django.utils.module_loading import import_string

    assert set(SUMMARIES) == set(Job.Kind)  # the order its page shows the counts in
    assert all(issubclass(import_string(name), JobSummary) for name in SUMMARIES.values())


KINDS = [
    "documents", "topics", "run", "build_pool", "add_runs", "release", "judgements", "click_log",
    "propensity", "click_labels", "judge",
]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_it_shows_the_counts_of_the_jobs_own_kind_as_the_api_gives_them(
    kind: str, campaign: Pool, manager: User, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    job, own = start(kind, campaign, manager, django_capture_on_commit_callbacks, tmp_path)
    assert job.kind == kind
    answer = client_for(manager).get(f"/api/jobs/{job.pk}/").json()
    page = Client()
    page.force_login(manager)
    shown = shown_counts(page.get(f"/jobs/{job.pk}/").content.decode())
    assert [key for key, _ in shown] == own  # in the order the summary gave them, not jsonb's
    assert list(answer["counts"]) == own  # the API's in the same order
    assert shown == [(key, as_shown(answer["counts"][key])) for key in own]
    assert all(isinstance(value, int | float | str | dict) for value in answer["counts"].values())


def test_it_lists_a_documents_imports_counts_in_the_order_its_summary_declares(
    campaign: Pool, manager: User, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    job, _ = start("documents", campaign, manager, django_capture_on_commit_callbacks, tmp_path)
    declared = ["rows", "created", "updated", "seconds"]
    assert reordered(list(job.counts), declared)  # the job row (jsonb) keeps them by length, then bytes
    assert [key for key, _ in shown_counts(browse(manager, job))] == declared


def test_it_counts_a_run_imports_rows_and_topics_and_nothing_it_does_not_do(
    manager: User, django_capture_on_commit_callbacks: Any
) -> None:
    pool = make_pool(name="p", managers=[manager])
    job = finished(
        lambda: jobs.start_import(
            collection=pool.collection, kind="run", upload=upload("gamma.run", RUN), params={}, user=manager
        ),
        django_capture_on_commit_callbacks,
    )
    run = Run.objects.get(collection=pool.collection, name="gamma")
    assert set(job.counts) == {"rows", "topics", "seconds"}
    assert (job.counts["rows"], job.counts["topics"]) == (run.num_rows, run.num_topics) == (3, 2)


# ------------------------------------------------------------------------------------------------ links


def browse(user: User, job: Job) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/jobs/{job.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_it_names_a_deleted_pool_as_deleted_without_a_link(admin_user: User) -> None:
    pool = make_pool(name="gone")
    build = Job.objects.create(
        kind=Job.Kind.BUILD_POOL, status="done", collection=pool.collection,
        params={"pool": pool.pk, "name": pool.name},
    )  # fmt: skip
    pool.delete()
    page = browse(admin_user, build)
    assert "pool gone (deleted)" in page
    assert 'href="/pools/gone/' not in page
    assert f'href="/collections/{pool.collection.name}/"' in page  # an admin may open it


def test_it_links_a_collection_only_for_who_may_open_its_page(
    manager: User, django_capture_on_commit_callbacks: Any
) -> None:
    """A pool's manager who does not manage its collection: the pool's jobs link the pool, never the
    collection's page (a 404 for them); their own click-label job no page they cannot open."""
    owner, pool_manager = make_manager("owner"), make_manager("pool-manager")
    collection = make_collection(name="news", managers=[owner])
    pool = make_pool(collection=collection, name="theirs", managers=[pool_manager])
    build = Job.objects.create(
        kind=Job.Kind.BUILD_POOL, status="done", collection=collection,
        params={"pool": pool.pk, "name": pool.name}, created_by=pool_manager,
    )  # fmt: skip
    labels = Job.objects.create(
        kind=Job.Kind.CLICK_LABELS, status="done", collection=collection, params={"log": 1},
        created_by=pool_manager,
    )  # fmt: skip
    visitor = Client()
    visitor.force_login(pool_manager)
    assert visitor.get("/collections/news/").status_code == 404  # the page the old link led to
    for job in (build, labels):
        page = browse(pool_manager, job)
        assert 'href="/collections/news/"' not in page
        assert "news" in page  # named, not linked
    assert 'href="/pools/theirs/"' in browse(pool_manager, build)
    assert 'href="/collections/news/"' in browse(owner, labels)


#: The page of what a finished job of each kind made, from the job and its pool.
MADE: dict[str, Callable[[Job, Pool], str]] = {
    "release": lambda job, pool: f"/campaigns/{pool.name}/releases/{job.result['release']}/",
    "judge": lambda job, pool: (
        f"/evaluation/{pool.name}/judges/{Judge.objects.get(pk=job.params['judge']).name}/"
    ),
    "click_log": lambda job, pool: f"/online/logs/{job.result['log']}/",
    "propensity": lambda job, pool: f"/online/propensities/{job.result['propensity']}/",
    "click_labels": lambda job, pool: f"/online/labels/{job.result['label_set']}/",
}


@pytest.mark.parametrize("kind", list(MADE))
def test_it_links_what_a_finished_job_made_for_a_viewer_who_may_open_it(
    kind: str, campaign: Pool, manager: User, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    job, _ = start(kind, campaign, manager, django_capture_on_commit_callbacks, tmp_path)
    made = MADE[kind](job, campaign)
    assert f'href="{made}"' in browse(manager, job)
    visitor = Client()
    visitor.force_login(manager)
    assert visitor.get(made).status_code == 200


@pytest.mark.parametrize("kind", ["click_log", "propensity", "click_labels"])
def test_it_links_no_click_record_for_who_may_see_the_job_but_not_open_the_record(
    kind: str, campaign: Pool, manager: User, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    """Who started a click log's job sees it, but opens the log (and what derives from it) only while
    they manage its collection or its pool."""
    job, _ = start(kind, campaign, manager, django_capture_on_commit_callbacks, tmp_path)
    made = MADE[kind](job, campaign)
    former = make_manager("former")  # started the job; manages neither the collection nor the pool
    Job.objects.filter(pk=job.pk).update(created_by=former)
    page = browse(former, job)
    assert made not in page
    visitor = Client()
    visitor.force_login(former)
    assert visitor.get(made).status_code == 404  # the page's own rule: the link would have led nowhere


def test_it_links_no_judge_once_it_is_gone(
    campaign: Pool, manager: User, django_capture_on_commit_callbacks: Any, tmp_path: Path
) -> None:
    """A judge's job is its pool's managers', as the judge's page is: the page is gone only with the judge."""
    job, _ = start("judge", campaign, manager, django_capture_on_commit_callbacks, tmp_path)
    made = MADE["judge"](job, campaign)
    Judge.objects.filter(pk=job.params["judge"]).delete()
    page = browse(manager, job)
    assert made not in page
    assert f'href="/pools/{campaign.name}/"' in page

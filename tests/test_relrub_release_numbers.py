"""A release is named by its number within its pool (1, 2, 3 ... in the order made), not by its id, which
counts every pool's releases: on its page, the releases list, the job page, the API (`number` beside `id`),
the release command and the tracker's choice of release; two releases of a pool made at once get two
numbers."""

from __future__ import annotations

import io
import re
import threading
import time
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from judgements import releases
from judgements.models import Release
from pooling.models import Pool
from tests.conftest import client_for, require_services
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge


def web(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def make_judged_pool(name: str, **options: Any) -> Pool:
    rater = make_user(f"{name}-rater")
    pool = make_pool(name=name, raters=[rater], **options)
    judge(pool, rater, {("q1", "d001"): 2, ("q2", "d010"): 1})
    return pool


@pytest.fixture
def interleaved(db, manager) -> dict[str, list[Release]]:
    """Two pools whose releases were made in turns: news, sport, news, sport, sport."""
    news, sport = make_judged_pool("news"), make_judged_pool("sport")
    made: dict[str, list[Release]] = {"news": [], "sport": []}
    for pool in (news, sport, news, sport, sport):
        made[pool.name].append(releases.create_release(pool=pool))
    return made


def test_it_numbers_each_pools_releases_from_1_in_the_order_made(interleaved):
    assert [r.number for r in interleaved["news"]] == [1, 2]
    assert [r.number for r in interleaved["sport"]] == [1, 2, 3]
    first_sport = interleaved["sport"][0]
    assert first_sport.pk != 1  # the id counts every pool's: news's first came before
    assert str(first_sport) == "release 1 of sport (majority)"


@pytest.mark.parametrize("pool", ["news", "sport"])
def test_it_reads_release_1_on_each_pools_first_release_page(interleaved, manager, pool):
    first = interleaved[pool][0]
    html = web(manager).get(f"/campaigns/{pool}/releases/{first.pk}/").content.decode()
    assert re.search(r"<title>Release 1 · " + pool, html)
    assert f"<h1>Release 1 of {pool}</h1>" in html
    # the id the API takes is shown as such, not as the release's name
    assert f"is what the API takes, is {first.pk} (<code>/api/releases/{first.pk}/</code>)" in html


def test_it_lists_a_pools_releases_by_their_numbers_linked_by_id(interleaved, manager):
    html = web(manager).get("/campaigns/sport/releases/").content.decode()
    for release in interleaved["sport"]:
        assert f'<a href="/campaigns/sport/releases/{release.pk}/">{release.number}</a>' in html


def test_the_api_gives_the_number_beside_the_id(interleaved, manager):
    api = client_for(manager)
    first = interleaved["sport"][0]
    shown = api.get(f"/api/releases/{first.pk}/").json()
    assert (shown["id"], shown["number"], shown["pool"]) == (first.pk, 1, "sport")
    listed = api.get("/api/releases/", {"pool": "sport"}).json()["results"]
    assert sorted((row["number"], row["id"]) for row in listed) == [
        (r.number, r.pk) for r in interleaved["sport"]
    ]


def test_the_job_page_names_the_release_it_made_by_its_number(
    interleaved, manager, django_capture_on_commit_callbacks
):
    sport = Pool.objects.get(name="sport")
    with django_capture_on_commit_callbacks(execute=True):
        job = releases.start_release(pool=sport, user=manager)
    job.refresh_from_db()
    made = Release.objects.get(pk=job.result["release"])
    assert (made.number, job.result["number"]) == (4, 4) and made.pk != 4
    html = web(manager).get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/campaigns/sport/releases/{made.pk}/"' in html
    assert "release 4 of sport" in html and f"release {made.pk} of sport" not in html


def test_the_release_command_names_the_release_by_its_number_and_gives_its_id(interleaved):
    out = io.StringIO()
    call_command("release_qrels", "news", stdout=out)
    made = Release.objects.filter(pool__name="news").order_by("-number").first()
    assert made is not None and made.number == 3
    assert out.getvalue().startswith(f"release 3 of news (id {made.pk}; majority, unjudged explicit): ")


def test_the_trackers_choice_of_release_names_each_by_its_number(db, manager):
    collection = make_collection(name="press", managers=[manager])
    runs = [
        make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002"], "q2": ["d010"]}),
        make_run(collection=collection, name="beta", lists={"q1": ["d002", "d001"], "q2": ["d010"]}),
    ]
    other = make_judged_pool("other")
    releases.create_release(pool=other)
    pool = make_judged_pool("press-pool", collection=collection, runs=runs, managers=[manager])
    release = releases.create_release(pool=pool)
    html = web(manager).get("/online/tracker/new/", {"collection": "press"}).content.decode()
    assert f'<option value="{release.pk}">release 1 of press-pool (id {release.pk})</option>' in html


@pytest.mark.django_db(transaction=True)
def test_two_releases_of_a_pool_made_at_once_get_two_numbers(monkeypatch):
    """Each release reads the pool's highest number and writes the next while holding the pool row: the
    second waits for the first to commit (here the first holds on a while after reading)."""
    require_services()
    pool = make_judged_pool("busy")
    read = releases._next_number

    def slow(pool: Pool) -> int:
        number = read(pool)
        time.sleep(0.5)  # both would read the same highest number, were the pool row not held
        return number

    monkeypatch.setattr(releases, "_next_number", slow)
    barrier = threading.Barrier(3)
    failures: list[BaseException] = []

    def release() -> None:
        try:
            barrier.wait()
            releases.create_release(pool=pool)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=release) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    assert sorted(Release.objects.filter(pool=pool).values_list("number", flat=True)) == [1, 2, 3]

"""What an audit of the journeys found, walked again: every page of a pool leads back to the pool; the
evaluation's sub-pages lead back to the report (the two-stage page was a dead end); the pool's page links
its collection and lists its jobs (a finished build or release had no page a manager could reach); a
refused release shows its error beside the field it is about, with the form as it was sent; a release job
in progress shows a percentage; and on a phone the rater's document is in the first screen.

The browser tests reuse the Chromium fixtures of tests/judgements/test_browser.py; the others use
Django's test client."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from playwright.sync_api import expect

from judgements.models import Release
from pooling.models import Job, Pool, Topic
from tests.browser import PASSWORD, PAUSE_MS, log_in
from tests.factories import (
    lease_for,
    make_collection,
    make_manager,
    make_pool,
    make_run,
    make_user,
    submit_for,
)

pytestmark = pytest.mark.usefixtures("fast_passwords")

TIMEOUT = 30_000
PHONE = {"width": 375, "height": 700}


def make_campaign(*, password: str = PASSWORD) -> Pool:
    """A built pool of two runs, two judgements per item, managed by a non-staff manager `mona` and rated
    by `ria` and `rob`, who judged every item and disagree by three grades on the first of each topic."""
    manager = make_manager("mona", password=password)
    ria, rob = make_user("ria", password=password), make_user("rob", password=password)
    collection = make_collection(name="news", docs=12, topics=["q1", "q2"], managers=[manager])
    runs = [
        make_run(
            collection=collection,
            name="alpha",
            lists={"q1": ["d001", "d002", "d003"], "q2": ["d006", "d007"]},
        ),
        make_run(collection=collection, name="beta", lists={"q1": ["d002", "d004"], "q2": ["d007", "d008"]}),
    ]
    pool = make_pool(
        collection=collection, runs=runs, name="news-pool", judgements_per_item=2, raters=[ria, rob],
        managers=[manager],
    )  # fmt: skip
    for rater in (ria, rob):
        seen: set[str] = set()
        while (assignment := lease_for(pool=pool, rater=rater)) is not None:
            qid = assignment.item.topic.qid
            first = qid not in seen
            seen.add(qid)
            grade = 3 if first and rater == ria else 0 if first else 2
            submit_for(assignment=assignment, grade=grade)
    return pool


def client_as(username: str) -> Client:
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.get(username=username))
    return client


# ------------------------------------------------------------------------------------ test client


@pytest.mark.django_db
def test_it_leads_back_to_the_pool_from_every_page_of_the_pool(django_capture_on_commit_callbacks):
    pool = make_campaign()
    client = client_as("mona")
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(f"/campaigns/{pool.name}/releases/new/", {"policy": "majority"})
    assert made.status_code == 302
    release = Release.objects.get(pool=pool)
    item = pool.items.filter(num_judgements__gt=0).first()
    back = f'href="/pools/{pool.name}/"'
    for path in [
        f"/campaigns/{pool.name}/agreement/",
        f"/campaigns/{pool.name}/releases/",
        f"/campaigns/{pool.name}/releases/{release.pk}/",
        f"/evaluation/{pool.name}/",
        f"/evaluation/{pool.name}/pool-bias/",
        f"/evaluation/{pool.name}/two-stage/",
        f"/evaluation/{pool.name}/noise-floor/",
        f"/evaluation/{pool.name}/judges/",
        f"/manage/pools/{pool.name}/",
        f"/manage/pools/{pool.name}/gold/",
        f"/manage/pools/{pool.name}/adjudication/",
        f"/manage/pools/{pool.name}/crowd/",
        f"/manage/pools/{pool.name}/items/{item.pk}/history/",
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert back in response.content.decode(), f"{path}: no way back to the pool's page"
    # the release's page leads to the releases, the evaluation's sub-pages to the report
    html = client.get(f"/campaigns/{pool.name}/releases/{release.pk}/").content.decode()
    assert f'href="/campaigns/{pool.name}/releases/"' in html
    for sub in ("pool-bias/", "two-stage/", "noise-floor/", "judges/"):
        html = client.get(f"/evaluation/{pool.name}/{sub}").content.decode()
        assert re.search(rf'href="/evaluation/{pool.name}/(\?[^"]*)?"', html), f"{sub}: no way to the report"


@pytest.mark.django_db
def test_it_lists_the_pools_jobs_and_links_its_collection(django_capture_on_commit_callbacks):
    pool = make_campaign()
    client = client_as("mona")
    with django_capture_on_commit_callbacks(execute=True):
        built = client.post(f"/pools/{pool.name}/build/")
    job = Job.objects.get(kind=Job.Kind.BUILD_POOL, params__pool=pool.pk)
    assert built.url == f"/jobs/{job.pk}/"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/campaigns/{pool.name}/releases/new/", {"policy": "majority"})
    release_job = Job.objects.get(kind=Job.Kind.RELEASE, params__pool=pool.pk)
    html = client.get(f"/pools/{pool.name}/").content.decode()
    assert f'href="/jobs/{job.pk}/"' in html and f'href="/jobs/{release_job.pk}/"' in html
    assert f'href="/collections/{pool.collection.name}/"' in html
    # a manager the pool is shared with who does not manage the collection: its name, not a link
    other = make_manager("otto")
    pool.managers.add(other)
    html = client_as("otto").get(f"/pools/{pool.name}/").content.decode()
    assert f'href="/collections/{pool.collection.name}/"' not in html and pool.collection.name in html


@pytest.mark.django_db
def test_it_shows_a_refused_release_beside_its_field_with_the_form_as_sent():
    pool = make_campaign()
    client = client_as("mona")
    refused = client.post(f"/campaigns/{pool.name}/releases/new/", {"policy": "loudest", "unjudged": "omit"})
    assert refused.status_code == 302 and not Release.objects.exists()
    html = client.get(refused.url).content.decode()
    error = re.search(r'<ul class="errorlist" id="policy-error"><li>([^<]*)</li></ul>', html)
    assert error and "unknown aggregation policy &#x27;loudest&#x27;" in error[1]
    assert 'name="policy" value="loudest"' in html and '<option value="omit" selected>' in html
    assert '<ul class="messages">' not in html  # not a message at the top, far from the field
    # shown once: the page read again is the plain form
    html = client.get(refused.url).content.decode()
    assert "policy-error" not in html and 'name="policy" value="majority"' in html


@pytest.mark.django_db
def test_it_shows_a_running_release_jobs_progress_as_a_percentage():
    pool = make_campaign()
    Job.objects.create(
        kind=Job.Kind.RELEASE, status=Job.Status.RUNNING, params={"pool": pool.pk}, progress=0.4
    )
    html = client_as("mona").get(f"/campaigns/{pool.name}/releases/").content.decode()
    assert re.search(r"</a>: running 40%</p>", html), html


# ------------------------------------------------------------------------------------ the browser


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_walks_a_pools_pages_and_always_finds_the_way_back(browser, page, live_server):  # noqa: F811
    pool = make_campaign()
    base = live_server.url
    log_in(page, live_server, "mona")
    page.wait_for_url(f"{base}/")
    main = page.locator("main")
    main.get_by_role("link", name=pool.name).first.click()  # the dashboard's pool
    page.wait_for_url(f"{base}/pools/{pool.name}/")

    def back_to_the_pool() -> None:
        main.locator(f"a[href='/pools/{pool.name}/']").first.click()
        page.wait_for_url(f"{base}/pools/{pool.name}/")

    for link in ("Agreement", "Raters", "Adjudication", "Gold items", "Evaluation"):
        main.locator("nav.subnav").get_by_role("link", name=link, exact=True).click()
        page.wait_for_load_state()
        back_to_the_pool()
    # the evaluation's sub-pages lead to the report; the two-stage page was a dead end
    main.get_by_role("link", name="Evaluation", exact=True).click()
    main.get_by_role("link", name="Two-stage diagnosis").click()
    page.wait_for_url(re.compile(r"/two-stage/$"))
    main.get_by_role("link", name="Back to the report").click()
    page.wait_for_url(f"{base}/evaluation/{pool.name}/")
    back_to_the_pool()

    # a release refused: its error beside the Policy field, the form as sent; then one made
    main.locator("nav.subnav").get_by_role("link", name="Releases").click()
    page.fill("input[name=policy]", "loudest")
    page.get_by_role("button", name="Make a release").click()
    page.wait_for_url(f"{base}/campaigns/{pool.name}/releases/")
    expect(page.locator("#policy-error")).to_contain_text("unknown aggregation policy 'loudest'")
    assert page.input_value("input[name=policy]") == "loudest"
    field, error = (
        page.locator("input[name=policy]").bounding_box(),
        page.locator("#policy-error").bounding_box(),
    )
    assert field and error and 0 <= error["y"] - (field["y"] + field["height"]) < 40  # right under the field
    page.fill("input[name=policy]", "majority")
    page.get_by_role("button", name="Make a release").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    expect(page.locator(".status")).to_have_text("done", timeout=TIMEOUT)
    job_url = page.url
    main.get_by_role("link", name=re.compile(r"^release \d+ of ")).click()
    main.locator("p.crumbs").get_by_role("link", name="Releases").click()
    page.wait_for_url(f"{base}/campaigns/{pool.name}/releases/")
    back_to_the_pool()
    # the release's job is listed on the pool's page, and the collection is a link
    main.locator(f"a[href='{job_url.removeprefix(base)}']").click()
    page.wait_for_url(job_url)
    main.get_by_role("link", name=re.compile(rf"^release \d+ of {pool.name}$")).click()
    back_to_the_pool()
    main.locator(".config").get_by_role("link", name=pool.collection.name, exact=True).click()
    page.wait_for_url(f"{base}/collections/{pool.collection.name}/")
    assert page.problems == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_shows_a_rater_on_a_phone_the_document_in_the_first_screen(browser, live_server):  # noqa: F811
    pool = make_pool(name="phone-pool", raters=[make_user("rae", password=PASSWORD)])
    # topics as TREC's are: a description and a narrative under the query (tests/data/good/topics.jsonl)
    Topic.objects.filter(collection=pool.collection).update(
        description="Identify organizations that participate in international criminal activity.",
        narrative="A relevant document must name an organization and the countries it operates in.",
    )
    context = browser.new_context(viewport=PHONE)
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(str(error)))
    log_in(tab, live_server, "rae")
    tab.get_by_role("link", name=re.compile("judging")).click()
    tab.wait_for_selector("#judge[data-mode=item]")
    for _ in range(2):
        title = tab.locator("#doc-title")
        box = title.bounding_box()
        assert box and box["y"] + box["height"] <= PHONE["height"], (
            f"the document starts below the screen: {box}"
        )
        assert (
            tab.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
        )
        # the keys are shown on the buttons, and a grade's key judges
        expect(tab.locator("button.grade[data-key='2'] kbd")).to_be_visible()
        before = title.inner_text()
        tab.wait_for_timeout(PAUSE_MS)
        tab.keyboard.press("2")
        tab.wait_for_function(
            "t => document.querySelector('#doc-title').textContent !== t", arg=before, timeout=TIMEOUT
        )
    assert problems == []
    context.close()


@pytest.mark.django_db
def test_it_counts_the_items_on_the_releases_page_in_good_english():
    from django.utils.html import strip_tags

    manager, ria = make_manager("mona", password=PASSWORD), make_user("ria", password=PASSWORD)
    collection = make_collection(name="news", docs=4, topics=["q1"], managers=[manager])
    run = make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002", "d003"]})
    pool = make_pool(
        collection=collection, runs=[run], name="p", judgements_per_item=2, raters=[ria], managers=[manager]
    )
    assignment = lease_for(pool=pool, rater=ria)
    assert assignment is not None
    submit_for(assignment=assignment, grade=1)  # one item has one of its two judgements
    html = client_as("mona").get(f"/campaigns/{pool.name}/releases/").content.decode()
    text = " ".join(strip_tags(html).split())
    assert "0 of 3 items have all their judgements, 1 has some, 2 none yet" in text, text


@pytest.mark.django_db
def test_the_empty_online_lists_lead_to_their_forms():
    make_manager("mona", password=PASSWORD)
    client = client_as("mona")
    for listing, form in (
        ("/online/interleaving/", "/online/new-interleaving/"),
        ("/online/tracker/", "/online/tracker/new/"),
    ):
        html = client.get(listing).content.decode()
        empty = re.search(r'<td colspan="\d+" class="muted">(.*?)</td>', html, re.S)
        assert empty and f'href="{form}"' in empty[1], (listing, empty)


@pytest.mark.django_db
def test_a_built_pools_judging_form_still_says_what_an_empty_agreement_sample_means():
    pool = make_campaign()
    html = client_as("mona").get(f"/pools/{pool.name}/judging/").content.decode()
    assert "empty: every item. Fixed once the pool is built." in html


@pytest.mark.django_db
def test_the_noise_floors_votes_are_the_raters_judgements_but_those_of_adjudicated_items(
    django_capture_on_commit_callbacks,
):
    from django.contrib.auth.models import User

    from judgements.adjudication import adjudicate
    from judgements.models import Judgement

    pool = make_campaign()
    item = pool.items.filter(num_judgements__gt=0).order_by("pk").first()
    assert item is not None
    adjudicate(item=item, adjudicator=User.objects.get(username="mona"), grade=1)
    client = client_as("mona")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/campaigns/{pool.name}/releases/new/", {"policy": "majority"})
    html = client.get(f"/evaluation/{pool.name}/noise-floor/").content.decode()
    assert "An adjudicated item's label is the decision, so its votes are not among them" in html
    for rater in ("ria", "rob"):
        shown = re.search(rf'<tr><td>{rater}</td><td class="num">(\d+)</td>', html)
        judged = Judgement.objects.filter(item__pool=pool, rater__username=rater)
        assert shown and int(shown[1]) == judged.exclude(item=item).count() == judged.count() - 1, rater

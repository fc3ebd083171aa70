"""The whole campaign in Chromium, on a fresh database, by a pool manager who is not staff:
create a collection and upload the small files of tests/data/good (each a job page ending with its
counts), create a pool watching its preview, build it, add two raters and set up judging; then the two
raters judge by keyboard; then agreement, adjudication, a release and the evaluation report. Every number
read on a page is checked against the API's answer for the same thing.

Chromium and Playwright as in tests/judgements/test_browser.py (its fixtures are reused)."""

from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from judgements.models import Judgement
from pooling.models import Pool
from pooling.permissions import MANAGERS_GROUP
from tests.browser import KEYPRESS_BOUND_MS, PASSWORD, PAUSE_MS, log_in
from tests.factories import make_user

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fast_passwords"),
]

GOOD = Path(__file__).resolve().parent / "data" / "good"
#: tests/data/good/README.md: the graded qrels of the small collection (what the first rater presses).
QRELS = [line.split() for line in (GOOD / "qrels.txt").read_text().splitlines()]
TRUTH = {(qid, docid): str(max(int(grade), 0)) for qid, _, docid, grade in QRELS}
TITLES = {json.loads(line)["title"]: json.loads(line)["docid"] for line in (GOOD / "docs.jsonl").open()}
#: The second rater disagrees on these two documents by three grades: two items for adjudication.
DISAGREE = {("301", "d01"): "0", ("303", "d09"): "0"}
TIMEOUT = 30_000
SCREEN_SIZES = [(1366, 768), (390, 844)]


#: The page's width beyond the window's, in CSS pixels (0: nothing to scroll sideways).
OVERFLOW_JS = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


def shoot(tab, name: str) -> None:
    """The page as it is now at a laptop's and a phone's size: at neither may the page itself scroll
    sideways (a wide table scrolls within its own box, the menu and the headings stay in sight). With
    SCREENSHOTS=DIR (`make screenshots`), a full-page screenshot at each size too."""
    directory = os.environ.get("SCREENSHOTS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
    for width, height in SCREEN_SIZES:
        tab.set_viewport_size({"width": width, "height": height})
        overflow = tab.evaluate(OVERFLOW_JS)
        assert overflow <= 0, f"{name} at {width}x{height}: the page is {overflow}px wider than the window"
        if directory:
            tab.screenshot(path=str(Path(directory) / f"{name}-{width}x{height}.png"), full_page=True)
    tab.set_viewport_size({"width": SCREEN_SIZES[0][0], "height": SCREEN_SIZES[0][1]})


def api(tab, live_server, path: str) -> dict:
    """The API's answer, with the session of the tab's user (DRF session authentication)."""
    response = tab.request.get(f"{live_server.url}{path}")
    assert response.ok, f"{path}: {response.status}"
    return response.json()


def job_id(tab) -> int:
    match = re.search(r"/jobs/(\d+)/", tab.url)
    assert match, tab.url
    return int(match.group(1))


def upload(tab, live_server, collection: str, kind: str, filename: str, name: str = "") -> dict:
    """Upload one file from the collection's tab; land on its job tab; wait for it to end; return
    the job as the API reports it (and check the tab shows the same counts)."""
    tab.goto(f"{live_server.url}/collections/{collection}/")
    tab.select_option("#id_kind", kind)
    tab.set_input_files("#id_file", str(GOOD / filename))
    if name:
        tab.fill("#id_name", name)
    tab.get_by_role("button", name="Upload").click()
    tab.wait_for_url(re.compile(r"/jobs/\d+/$"))
    expect(tab.locator(".status")).to_have_text("done", timeout=TIMEOUT)
    shoot(tab, f"job-{kind}")
    job = api(tab, live_server, f"/api/jobs/{job_id(tab)}/")
    assert job["status"] == "done"
    body = tab.inner_text("main")
    shown = [key for key in ("created", "rows", "topics") if key in job["counts"]]  # a run import: no created
    assert "rows" in shown
    for key in shown:
        assert f"{key}: {job['counts'][key]}" in body
    assert tab.get_by_role("link", name=f"collection {collection}").count() == 1  # the way back
    return job


def judge_everything(tab, live_server, pool: str, grade_of) -> list[float]:
    """Judge every document the rater is given, by keyboard (`grade_of((qid, docid))` says which key);
    returns the times from each key press to the next document on screen (ms)."""
    tab.goto(f"{live_server.url}/")
    tab.get_by_role("link", name="Start judging").click()
    tab.wait_for_selector("#judge[data-mode=item]")  # the page's script leased the first item
    tab.evaluate(
        """() => {
        window.__times = [];
        let t0 = null;
        document.addEventListener("keydown", () => { t0 = performance.now(); }, true);
        new MutationObserver(() => {
            if (t0 === null) return;
            const start = t0;
            t0 = null;
            requestAnimationFrame(() => window.__times.push(performance.now() - start));
        }).observe(document.getElementById("slot-document"), {childList: true});
    }"""
    )
    presses = 0
    while tab.locator("#all-done").count() == 0:
        before = tab.inner_text("#doc-title")
        tab.wait_for_timeout(PAUSE_MS)
        tab.keyboard.press(grade_of((tab.inner_text("#slot-topic .qid"), TITLES[before])))
        presses += 1
        tab.wait_for_function("t => document.querySelector('#doc-title').textContent !== t", arg=before)
        tab.wait_for_function("n => window.__times.length >= n", arg=presses)
    return tab.evaluate("window.__times")


def test_it_runs_a_whole_campaign_in_the_browser_as_a_non_staff_manager(browser, page, live_server):  # noqa: F811
    manager = make_user("mona", password=PASSWORD)
    manager.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    assert not manager.is_staff and not manager.is_superuser
    base = live_server.url
    # a manager who rates nothing lands on the dashboard of their pools, empty at first
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", "mona")
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")
    expect(page.locator("main")).to_contain_text("You manage no pool yet")
    shoot(page, "dashboard-empty")

    # 1. a collection, and its files uploaded as jobs
    page.locator("main").get_by_role("link", name="collection").click()
    page.wait_for_url(f"{base}/collections/")
    shoot(page, "collections-empty")
    page.fill("#id_name", "trec")
    page.get_by_role("button", name="Create collection").click()
    page.wait_for_url(f"{base}/collections/trec/")
    assert upload(page, live_server, "trec", "documents", "docs.jsonl.gz")["counts"]["created"] == 12
    assert upload(page, live_server, "trec", "topics", "topics.jsonl")["counts"]["created"] == 3
    upload(page, live_server, "trec", "run", "run_a.txt", name="runA")
    upload(page, live_server, "trec", "run", "run_b.txt.gz", name="runB")
    page.goto(f"{base}/collections/trec/")
    collection = api(page, live_server, "/api/collections/trec/")
    for key in ("documents", "topics", "runs"):
        assert page.inner_text(f".counts .{key}") == str(collection[key])
    assert (collection["documents"], collection["topics"], collection["runs"]) == (12, 3, 2)
    shoot(page, "collection")

    # 2. a pool of runA, its size and cost previewed as the fields change
    page.get_by_role("link", name="Create a pool over these runs").click()
    shoot(page, "pool-create")
    page.fill("#id_name", "trec-pool")
    page.get_by_label("runA").check()
    expect(page.locator("#preview .items")).to_have_text("10", timeout=TIMEOUT)  # runA to depth 10
    page.fill("#id_depth", "3")
    page.fill("#id_judgements_per_item", "2")
    page.fill("#id_price_per_judgement", "0.50")
    page.locator("#id_price_per_judgement").blur()
    expect(page.locator("#preview .judgements")).to_have_text("18", timeout=TIMEOUT)
    expect(page.locator("#preview .cost")).to_have_text("9.00", timeout=TIMEOUT)
    shoot(page, "pool-create-preview")
    preview = {key: page.inner_text(f"#preview .{key}") for key in ("items", "judgements", "cost")}
    # each cell's own text: a row's innerText loses the cells' tabs while the preview is being re-rendered
    topics = page.locator("#preview .preview-topics tbody tr").evaluate_all(
        "rows => rows.map(row => Array.from(row.cells, cell => cell.textContent.trim()))"
    )
    assert topics == [["301", "3"], ["302", "3"], ["303", "3"]]
    page.get_by_role("button", name="Create pool").click()
    page.wait_for_url(f"{base}/pools/trec-pool/")
    shoot(page, "pool-detail-draft")
    estimate = api(page, live_server, "/api/pools/trec-pool/")["estimate"]
    assert preview == {"items": "9", "judgements": "18", "cost": f"{estimate['cost']:.2f}"}
    assert (estimate["items"], estimate["judgements"], estimate["cost"]) == (9, 18, 9.0)

    # until judging is set up, the raters' page says what to do
    page.goto(f"{base}/manage/pools/trec-pool/")
    expect(page.locator(".next-step")).to_contain_text("Set up judging")
    shoot(page, "judging-not-set-up")

    # 3. build it and watch it end
    page.goto(f"{base}/pools/trec-pool/")
    page.get_by_role("button", name="Build").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))  # the build's job page
    expect(page.locator(".status")).to_have_text("done", timeout=TIMEOUT)
    build = api(page, live_server, f"/api/jobs/{job_id(page)}/")
    assert build[
        "kind"
    ] == "build_pool" and f"items_added: {build['counts']['items_added']}" in page.inner_text("main")
    shoot(page, "job-build")
    page.get_by_role("link", name="pool trec-pool").click()
    expect(page.locator(".config .status")).to_have_text("built", timeout=TIMEOUT)
    assert page.inner_text(".judgements-required") == "18"

    # a new ranker: runB added, only its new documents queued, previewed first
    page.get_by_role("link", name="Add runs").click()
    assert page.locator("input[name=runs]").count() == 1  # runA is in the pool already
    page.get_by_label("runB").check()
    expect(page.locator("#preview .items")).to_have_text("3", timeout=TIMEOUT)
    shoot(page, "add-runs")
    assert page.inner_text("#preview .judgements") == "6" and page.inner_text("#preview .cost") == "3.00"
    page.get_by_role("button", name="Add runs").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))  # the addition's job page
    expect(page.locator(".status")).to_have_text("done", timeout=TIMEOUT)
    added = api(page, live_server, f"/api/jobs/{job_id(page)}/")
    assert added["kind"] == "add_runs" and added["counts"]["items_added"] == 3
    assert "items_added: 3" in page.inner_text("main")
    shoot(page, "job-add-runs")
    page.get_by_role("link", name="pool trec-pool").click()
    page.wait_for_url(f"{base}/pools/trec-pool/")
    shoot(page, "pool-detail-built")
    stats = api(page, live_server, "/api/pools/trec-pool/statistics/")
    assert page.inner_text(".judgements-required") == str(stats["judgements_required"]) == "24"

    # 4. raters and judging, on one page reached from the pool's
    page.get_by_role("link", name="set up judging and add raters").click()
    page.wait_for_url(f"{base}/pools/trec-pool/judging/")
    shoot(page, "judging")
    page.get_by_role("button", name="Save set-up").click()
    for name in ("ria", "rob"):
        page.fill("#id_username", name)
        page.fill("#id_password", PASSWORD)
        page.get_by_role("button", name="Create and add").click()
        expect(page.locator(".messages")).to_contain_text(f"{base}/accounts/login/")
    judging = api(page, live_server, "/api/judging/trec-pool/")
    assert judging["raters"] == ["ria", "rob"]
    assert page.locator(".raters li").all_inner_texts() == judging["raters"]
    shoot(page, "judging-with-raters")

    # the raters judge by keyboard, each in a browser of their own
    times: list[float] = []
    for name, grade_of in (("ria", lambda d: TRUTH[d]), ("rob", lambda d: DISAGREE.get(d, TRUTH[d]))):
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        rater_page = context.new_page()
        log_in(rater_page, live_server, name)
        times += judge_everything(rater_page, live_server, "trec-pool", grade_of)
        context.close()
    assert Judgement.objects.filter(item__pool__name="trec-pool").count() == 24
    median = statistics.median(times)
    print(f"\nkeypress to next document in the journey: median {median:.1f} ms (n={len(times)})")
    assert median < KEYPRESS_BOUND_MS

    # agreement: the page's numbers are the API's
    page.goto(f"{base}/pools/trec-pool/")
    page.get_by_role("link", name="agreement").first.click()
    agreement = api(page, live_server, "/api/agreement/trec-pool/")
    body = page.inner_text("main")
    assert f"give {agreement['n_pairs']} pairs" in body and agreement["n_pairs"] == 12
    assert f"{agreement['cohen']['unweighted']['kappa']:.3f}" in body
    shoot(page, "agreement")

    # adjudication: the two items the raters disagree on by three grades, one decided
    page.goto(f"{base}/pools/trec-pool/")
    page.get_by_role("link", name="adjudication").first.click()
    queue = api(page, live_server, "/api/judging/trec-pool/adjudication/")
    entries = queue.get("results", queue) if isinstance(queue, dict) else queue
    assert page.locator(".adjudication-item").count() == len(entries) == 2
    shoot(page, "adjudication")
    first = page.locator(".adjudication-item").first
    first.locator("select[name=decision]").select_option("2")
    first.get_by_role("button", name="Decide").click()
    expect(page.locator(".adjudication-item")).to_have_count(1, timeout=TIMEOUT)

    # a release, and the runs evaluated on it
    page.goto(f"{base}/pools/trec-pool/")
    page.get_by_role("link", name="Releases").click()
    page.get_by_role("button", name="Make a release").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))  # the release's job page
    expect(page.locator(".status")).to_have_text("done", timeout=TIMEOUT)
    shoot(page, "job-release")
    releases = api(page, live_server, "/api/releases/?pool=trec-pool")
    release = releases.get("results", releases)[0]
    page.get_by_role("link", name=f"release {release['number']} of trec-pool").click()  # the job made it
    page.wait_for_url(f"{base}/campaigns/trec-pool/releases/{release['id']}/")
    shoot(page, "release")
    page.goto(f"{base}/campaigns/trec-pool/releases/")
    assert release["counts"]["judged"] + release["counts"]["pending"] + release["counts"]["unrateable"] == 12
    expect(page.locator("table").last).to_contain_text(str(release["counts"]["judged"]))
    shoot(page, "releases")
    page.goto(f"{base}/pools/trec-pool/")
    page.get_by_role("link", name="Evaluation").click()
    report = api(page, live_server, "/api/evaluation/trec-pool/report/")
    assert {row["run"] for row in report["runs"]} == {"runA", "runB"}
    for row in report["runs"]:
        cells = page.locator("table.scores tr", has_text=row["run"]).locator("td[data-measure]")
        assert cells.count() > 0
        for n in range(cells.count()):
            cell = cells.nth(n)
            value = row[cell.get_attribute("data-policy")].get(cell.get_attribute("data-measure"))
            assert cell.inner_text() == ("–" if value is None else f"{value:.4f}")
    shoot(page, "evaluation-report")
    # the other manager pages, for the screenshots (and none may fail)
    for name, path in [
        ("dashboard", "/manage/dashboard/"),
        ("pools", "/pools/"),
        ("collections", "/collections/"),
        ("raters", "/manage/pools/trec-pool/"),
        ("gold", "/manage/pools/trec-pool/gold/"),
        ("judging-index", "/manage/"),
        ("pool-bias", "/evaluation/trec-pool/pool-bias/"),
        ("two-stage", "/evaluation/trec-pool/two-stage/"),
    ]:
        assert page.goto(f"{base}{path}").ok, path
        shoot(page, name)
    page.goto(f"{base}/manage/dashboard/")
    stats = api(page, live_server, "/api/pools/trec-pool/statistics/")
    done = page.inner_text("#pool-trec-pool .done")
    assert done.startswith(f"{stats['judgements_done']} / {stats['judgements_required']}"), done
    assert Pool.objects.get(name="trec-pool").managers.get() == manager
    assert page.problems == []

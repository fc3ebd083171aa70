"""Manager pages under /manage/: rater statistics with the grade chart, gold items, the adjudication queue
and an item's history — rendered with data, and their forms acting through the services."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.test import Client

from judgements import adjudication, labels, stats
from judgements.manager_views import grade_chart
from judgements.models import Adjudication, Assignment, GoldLabel, Judgement, Judging, Rubric
from pooling.models import PoolItem
from tests.factories import lease_for, make_pool, make_user, submit_for

SVG = "{http://www.w3.org/2000/svg}"

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


@pytest.fixture
def browser(manager) -> Client:
    client = Client()
    client.force_login(manager)
    return client


@pytest.fixture
def campaign(rater, second_rater, manager):
    """Pool `camp`, two judgements per item: the first item disputed (3 vs 0, notes), the second agreed
    (2, 2), the third judged once and revised twice; a gold item."""
    pool = make_pool(name="camp", raters=[rater, second_rater], judgements_per_item=2)
    items = []
    for first_grade, second_grade in ((3, 0), (2, 2)):
        lease = lease_for(pool=pool, rater=rater)
        submit_for(
            assignment=lease, grade=first_grade, note="<script>alert('x')</script> spot on", seconds=30
        )
        submit_for(
            assignment=lease_for(pool=pool, rater=second_rater),
            grade=second_grade,
            seconds=10,
            note="off topic",
        )
        items.append(PoolItem.objects.get(pk=lease.item_id))
    revised = submit_for(assignment=lease_for(pool=pool, rater=rater), grade=1)
    labels.revise_judgement(judgement=revised, by=rater, grade=2, note="second thoughts")
    labels.revise_judgement(judgement=revised, by=rater, grade=None, unrateable=True)
    gold = PoolItem.objects.filter(pool=pool, num_judgements=0).select_related("topic", "document").first()
    adjudication.set_gold(item=gold, grade=3, by=manager)
    return {"pool": pool, "disputed": items[0], "agreed": items[1], "revised": revised, "gold": gold}


def text(response) -> str:
    return response.content.decode()


# ------------------------------------------------------------------------------------------- statistics


def test_it_renders_the_rater_statistics_and_a_bar_chart(browser, campaign):
    response = browser.get("/manage/pools/camp/")
    assert response.status_code == 200
    page = text(response)
    table = page[page.index('<table class="rater-stats">') : page.index("</table>")]
    rows = re.findall(
        r"<tr>\s*<td>(rater2?)</td>\s*<td class=\"num\">(\d+)</td>\s*<td class=\"num\">([\d.]+)</td>", table
    )
    assert rows == [("rater", "3", "30.0"), ("rater2", "2", "10.0")]
    header = re.findall(r"<th class=\"num\">grade (\d)</th>", table)
    cells = [re.findall(r"<td class=\"num\">(\d+)</td>", tr)[1:5] for tr in table.split("<tr>")[2:]]
    assert header == ["3", "2", "1", "0"]
    assert cells == [["1", "1", "0", "0"], ["0", "1", "0", "1"]]  # rater: 3, 2 (+1 unrateable); rater2: 2, 0
    assert "1 item to adjudicate" in page and "1 gold item" in page
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert svg.count('<g class="bar"') == 2
    assert (
        "rater: 3 × 1 (33%)" in svg and "rater: unrateable × 1 (33%)" in svg and "rater2: 2 × 1 (50%)" in svg
    )


def test_it_draws_each_raters_bar_as_shares_of_the_full_width():
    rows = [
        stats.RaterStats(
            rater_id=1, username="a", member=True, judgements=4, grades={3: 1, 2: 0, 1: 2, 0: 0}, unrateable=1
        ),
        stats.RaterStats(
            rater_id=2, username="b", member=True, judgements=0, grades={3: 0, 2: 0, 1: 0, 0: 0}
        ),
    ]
    root = ET.fromstring(grade_chart(rows, [0, 1, 2, 3]))  # noqa: S314 - our own output
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") in ("bar", "segment")]
    bars = [g for g in groups if g.get("class") == "bar"]
    segments = [g for g in groups if g.get("class") == "segment"]
    assert ["".join(b.find(f"{SVG}title").itertext()) for b in bars] == ["a: 4 judgements", "b: 0 judgements"]
    spans = []
    for segment in segments:
        xs = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", segment.find(f"{SVG}path").get("d"))][0::2]
        spans.append((min(xs), max(xs) - min(xs)))
    full = sum(width for _, width in spans)
    assert [round(width / full, 3) for _, width in spans] == [0.25, 0.5, 0.25]  # 3 × 1, 1 × 2, unrateable × 1
    assert spans[1][0] == pytest.approx(spans[0][0] + spans[0][1], abs=0.01)  # stacked left to right
    assert [segment.find(f"{SVG}path").get("fill") for segment in segments] == [
        "#2f7d4f",
        "#e0b040",
        "#9aa3ab",
    ]
    assert ["".join(s.find(f"{SVG}title").itertext()) for s in segments] == [
        "a: 3 × 1 (25%)", "a: 1 × 2 (50%)", "a: unrateable × 1 (25%)",
    ]  # fmt: skip
    legend = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    assert [name for name in legend if name in ("3", "2", "1", "0", "unrateable")][-5:] == [
        "3", "2", "1", "0", "unrateable",
    ]  # fmt: skip


def test_it_lists_the_pools_with_judging(browser, campaign):
    page = text(browser.get("/manage/"))
    assert 'href="/manage/pools/camp/"' in page and "relevance-4 v1" in page


# ------------------------------------------------------------------------------------------------- gold


def test_it_lists_gold_items(browser, campaign):
    gold = campaign["gold"]
    page = text(browser.get("/manage/pools/camp/gold/"))
    assert gold.document.docid in page and f"/manage/pools/camp/gold/{gold.pk}/remove/" in page


def test_it_adds_a_gold_item_by_qid_and_docid(browser, campaign, manager):
    item = campaign["agreed"]
    response = browser.post(
        "/manage/pools/camp/gold/", {"qid": item.topic.qid, "docid": item.document.docid, "grade": "1"}
    )
    assert response.status_code == 302 and response["Location"] == "/manage/pools/camp/gold/"
    label = GoldLabel.objects.get(item=item)
    assert (label.grade, label.created_by) == (1, manager)
    assert PoolItem.objects.get(pk=item.pk).gold
    assert "is gold now" in text(browser.get("/manage/pools/camp/gold/"))


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"qid": "q1", "docid": "d999", "grade": "1"}, "q1 d999 is not in the pool"),
        (
            {"qid": "q1", "docid": "d001", "grade": "7"},
            "Select a valid choice. 7 is not one of the available choices.",
        ),
        ({"qid": "", "docid": "d001", "grade": "1"}, "This field is required."),
    ],
)
def test_it_refuses_a_bad_gold_item_with_a_message(browser, campaign, form, message):
    response = browser.post("/manage/pools/camp/gold/", form)
    assert response.status_code == 400
    assert message in text(response)
    assert GoldLabel.objects.count() == 1


def test_it_removes_a_gold_item(browser, campaign):
    gold = campaign["gold"]
    response = browser.post(f"/manage/pools/camp/gold/{gold.pk}/remove/")
    assert response.status_code == 302
    assert not GoldLabel.objects.exists() and not PoolItem.objects.get(pk=gold.pk).gold
    assert browser.post(f"/manage/pools/camp/gold/{gold.pk}/remove/").status_code == 404


# ---------------------------------------------------------------------------------------- adjudication


def test_it_shows_every_grade_note_and_rater_in_the_queue(browser, campaign):
    disputed = campaign["disputed"]
    page = text(browser.get("/manage/pools/camp/adjudication/"))
    assert page.count('class="card adjudication-item"') == 1
    section = page[page.index(f'id="item-{disputed.pk}"') :]
    assert "rater" in section and "rater2" in section
    assert "3 Perfect" in section and "0 Not relevant" in section
    assert "off topic" in section and "spot on" in section
    assert "&lt;script&gt;alert" in section and "<script>alert" not in page
    assert f'action="/manage/pools/camp/adjudication/{disputed.pk}/"' in section


def test_it_records_the_adjudication_decision(browser, campaign, manager):
    disputed = campaign["disputed"]
    response = browser.post(
        f"/manage/pools/camp/adjudication/{disputed.pk}/", {"decision": "2", "note": " both half right "}
    )
    assert response.status_code == 302 and response["Location"] == "/manage/pools/camp/adjudication/"
    decision = Adjudication.objects.get(item=disputed)
    assert (decision.grade, decision.unrateable, decision.note, decision.adjudicator) == (
        2,
        False,
        "both half right",
        manager,
    )
    page = text(browser.get("/manage/pools/camp/adjudication/"))
    assert "Nothing to adjudicate." in page and "Decision recorded" in page


def test_it_records_an_unrateable_decision(browser, campaign):
    disputed = campaign["disputed"]
    browser.post(f"/manage/pools/camp/adjudication/{disputed.pk}/", {"decision": "unrateable"})
    decision = Adjudication.objects.get(item=disputed)
    assert decision.unrateable and decision.grade is None


def test_it_refuses_a_bad_decision_and_shows_why(browser, campaign):
    disputed = campaign["disputed"]
    response = browser.post(f"/manage/pools/camp/adjudication/{disputed.pk}/", {"decision": "9"})
    assert response.status_code == 400
    assert "Select a valid choice" in text(response)
    assert not Adjudication.objects.exists()


def test_the_decision_has_no_preselected_grade_and_a_bare_submit_records_nothing(browser, campaign):
    disputed = campaign["disputed"]
    page = text(browser.get("/manage/pools/camp/adjudication/"))
    select = re.search(r'<select name="decision"[^>]*>(.*?)</select>', page, re.S).group(1)
    options = re.findall(r"<option[^>]*>", select)
    assert options[0] == '<option value="" selected>' and all("selected" not in o for o in options[1:])
    response = browser.post(f"/manage/pools/camp/adjudication/{disputed.pk}/", {"decision": "", "note": ""})
    assert response.status_code == 400 and "This field is required" in text(response)
    assert not Adjudication.objects.exists()


def test_times_under_a_second_are_shown_as_such(browser, campaign):
    disputed = campaign["disputed"]
    Judgement.objects.filter(item=disputed, rater__username="rater2").update(seconds=0.43)
    section = text(browser.get("/manage/pools/camp/adjudication/")).split(f'id="item-{disputed.pk}"')[1]
    assert '<td class="num">0.43</td>' in section and '<td class="num">30</td>' in section
    history = text(browser.get(f"/manage/pools/camp/items/{disputed.pk}/history/"))
    assert "0.43 s" in history


# --------------------------------------------------------------------------------------------- history


def test_it_shows_every_revision_who_when_old_and_new(browser, campaign):
    revised = campaign["revised"]
    response = browser.get(f"/manage/pools/camp/items/{revised.item_id}/history/")
    assert response.status_code == 200
    page = text(response)
    table = page[page.index('<table class="revisions">') : page.index("</table>")]
    cells = [re.sub(r"\s+", " ", c).strip() for c in re.findall(r"<td>(.*?)</td>", table, re.S)]
    revisions = list(revised.revisions.order_by("changed_at", "id"))
    assert cells[0:6] == [
        revisions[0].changed_at.strftime("%Y-%m-%d %H:%M:%S"),
        "rater",
        "1 Marginal",
        "2 Good",
        "—",
        "second thoughts",
    ]
    assert cells[8:14] == [
        revisions[1].changed_at.strftime("%Y-%m-%d %H:%M:%S"),
        "rater",
        "2 Good",
        "unrateable",
        "second thoughts",
        "second thoughts",
    ]
    assert "rater: unrateable" in page


def test_it_shows_the_decision_and_gold_on_the_history_page(browser, campaign, manager):
    disputed = campaign["disputed"]
    adjudication.adjudicate(item=disputed, adjudicator=manager, grade=1, note="judged by the book")
    page = text(browser.get(f"/manage/pools/camp/items/{disputed.pk}/history/"))
    assert "adjudicated: 1 Marginal by manager" in page and "judged by the book" in page
    assert page.count("Never revised.") == 2
    gold = campaign["gold"]
    assert "gold: 3 Perfect" in text(browser.get(f"/manage/pools/camp/items/{gold.pk}/history/"))


# ------------------------------------------------------------------------------------------- the admin


@pytest.fixture
def staff(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def rubric_form(name: str, grades: list[tuple[int, str, str]], **fields: str) -> dict[str, str]:
    data = {
        "name": name,
        "description": "",
        "allow_unrateable": "on",
        "unrateable_key": "x",
        "grades-TOTAL_FORMS": str(len(grades)),
        "grades-INITIAL_FORMS": "0",
        "facets-TOTAL_FORMS": "0",
        "facets-INITIAL_FORMS": "0",
        **fields,
    }
    for n, (value, label, key) in enumerate(grades):
        data.update({f"grades-{n}-value": str(value), f"grades-{n}-label": label, f"grades-{n}-key": key})
    return data


def test_it_shows_a_judged_rubric_read_only_with_a_save_as_new_version_button(staff, campaign):
    rubric = campaign["revised"].rubric
    page = text(staff.get(f"/admin/judgements/rubric/{rubric.pk}/change/"))
    assert 'name="_new_version"' in page and "Save as new version" in page
    assert 'name="grades-0-label"' not in page and 'name="description"' not in page


def test_it_saves_a_judged_rubric_as_a_new_version_and_never_edits_it(staff, campaign):
    rubric = campaign["revised"].rubric
    data = {
        "description": "tampered",
        "_new_version": "1",
        "grades-TOTAL_FORMS": "0",
        "grades-INITIAL_FORMS": "0",
        "facets-TOTAL_FORMS": "0",
        "facets-INITIAL_FORMS": "0",
    }
    response = staff.post(f"/admin/judgements/rubric/{rubric.pk}/change/", data)
    new = Rubric.objects.get(name=rubric.name, version=rubric.version + 1)
    assert (
        response.status_code == 302 and response["Location"] == f"/admin/judgements/rubric/{new.pk}/change/"
    )
    assert new.labels == rubric.labels
    rubric.refresh_from_db()
    assert rubric.description != "tampered"
    page = text(staff.get(response["Location"]))
    assert 'name="grades-0-label"' in page  # the new version is not judged: editable


def test_it_validates_a_rubric_made_in_the_admin_by_the_services_rules(staff):
    response = staff.post(
        "/admin/judgements/rubric/add/", rubric_form("bad", [(1, "yes", "s"), (0, "no", "0")])
    )
    assert response.status_code == 200
    assert "are reserved" in text(response)
    assert not Rubric.objects.filter(name="bad").exists()


def test_it_gives_a_rubric_made_in_the_admin_without_grades_the_default_scale(staff):
    response = staff.post("/admin/judgements/rubric/add/", rubric_form("plain", []))
    assert response.status_code == 302
    assert Rubric.objects.get(name="plain").labels == [0, 1, 2, 3]
    staff.post("/admin/judgements/rubric/add/", rubric_form("plain", [(1, "yes", "y"), (0, "no", "0")]))
    assert Rubric.objects.get(name="plain", version=2).labels == [0, 1]


def test_it_sets_and_removes_gold_through_the_admin(staff, campaign, admin_user):
    item = campaign["agreed"]
    response = staff.post("/admin/judgements/goldlabel/add/", {"item": item.pk, "grade": "2"})
    assert response.status_code == 302
    label = GoldLabel.objects.get(item=item)
    assert label.created_by == admin_user and PoolItem.objects.get(pk=item.pk).gold
    refused = staff.post("/admin/judgements/goldlabel/add/", {"item": campaign["disputed"].pk, "grade": "9"})
    assert refused.status_code == 200 and "not a grade of" in text(refused)
    staff.post(f"/admin/judgements/goldlabel/{label.pk}/delete/", {"post": "yes"})
    assert not GoldLabel.objects.filter(item=item).exists() and not PoolItem.objects.get(pk=item.pk).gold


def test_it_releases_the_leases_of_raters_removed_in_the_admin(staff, campaign, rater, second_rater):
    pool = campaign["pool"]
    lease = lease_for(pool=pool, rater=second_rater)
    judging = Judging.objects.get(pool=pool)
    response = staff.post(
        f"/admin/judgements/judging/{judging.pk}/change/",
        {"rubric": judging.rubric_id, "raters": [rater.pk], "lease_minutes": "10", "adjudication_gap": "2"},
    )
    assert response.status_code == 302
    assert list(judging.raters.all()) == [rater]
    lease.refresh_from_db()
    assert lease.state == Assignment.State.EXPIRED
    assert PoolItem.objects.get(pk=lease.item_id).active_leases == 0


def test_raters_added_and_removed_in_the_admin_change_what_a_gold_item_needs(
    staff, campaign, rater, second_rater, manager
):
    """A gold item needs a judgement of every rater of its pool (`pooling.models.NEED`): the admin's
    rater list moves it as the pages and the API do."""
    pool = campaign["pool"]
    item = PoolItem.objects.filter(pool=pool).order_by("pk").first()
    adjudication.set_gold(item=item, grade=1, by=manager)
    judging = Judging.objects.get(pool=pool)
    raters = list(judging.raters.values_list("pk", flat=True))
    assert PoolItem.objects.get(pk=item.pk).need == max(len(raters), item.required_judgements)
    third = make_user("third-rater")
    for chosen in ([*raters, third.pk], [third.pk]):
        response = staff.post(
            f"/admin/judgements/judging/{judging.pk}/change/",
            {"rubric": judging.rubric_id, "raters": chosen, "lease_minutes": "10", "adjudication_gap": "2"},
        )
        assert response.status_code == 302
        assert PoolItem.objects.get(pk=item.pk).gold_need == len(chosen)


def test_it_shows_judgements_with_their_revisions_read_only(staff, campaign):
    revised = campaign["revised"]
    page = text(staff.get(f"/admin/judgements/judgement/{revised.pk}/change/"))
    assert "second thoughts" in page and 'name="grade"' not in page
    assert staff.post(f"/admin/judgements/judgement/{revised.pk}/change/", {"grade": "0"}).status_code == 403


def test_it_pages_a_long_queue_and_keeps_the_manager_on_their_page(
    browser, campaign, rater, second_rater, monkeypatch
):
    """The queue shows a page at a time, in the queue's order (largest spread first, then item id); a
    decision taken on page 2 returns to page 2; a page past the end shows the last one, a bad one the
    first."""
    from judgements import manager_views

    pool = campaign["pool"]
    for item in PoolItem.objects.filter(pool=pool, num_judgements=0, gold=False).order_by("pk")[:4]:
        for who, grade in ((rater, 0), (second_rater, 2)):
            Judgement.objects.create(item=item, rater=who, rubric=pool.judging.rubric, grade=grade)
    queue = [row["item_id"] for row in adjudication.queue_rows(pool=pool)]
    assert len(queue) == 5
    monkeypatch.setattr(manager_views, "ADJUDICATION_PAGE", 2)

    def shown(url: str) -> list[int]:
        return [int(i) for i in re.findall(r'id="item-(\d+)"', text(browser.get(url)))]

    pages = [shown(f"/manage/pools/camp/adjudication/?page={n}") for n in (1, 2, 3)]
    assert pages[0] + pages[1] + pages[2] == queue and [len(p) for p in pages] == [2, 2, 1]
    assert shown("/manage/pools/camp/adjudication/?page=99") == pages[2]
    assert shown("/manage/pools/camp/adjudication/?page=x") == pages[0]
    page_two = text(browser.get("/manage/pools/camp/adjudication/?page=2"))
    assert 'href="?page=1"' in page_two and 'href="?page=3"' in page_two
    assert 'name="page" value="2"' in page_two and "5 items to adjudicate; 3–4 shown" in page_two
    decided = pages[1][0]
    response = browser.post(f"/manage/pools/camp/adjudication/{decided}/", {"decision": "1", "page": "2"})
    assert response.status_code == 302 and response["Location"] == "/manage/pools/camp/adjudication/?page=2"
    assert decided not in [row["item_id"] for row in adjudication.queue_rows(pool=pool)]

"""Agreement, rater quality and adjudication on one seeded pool: items judged by one, two and three
raters, unrateable votes, a skipped item, items nobody judged, a rater with two votes, a gold item and an
excluded rater who was the only one on some items. Every number equals the reference libraries' on the
same votes (unrateable votes and excluded raters left out, an item with one grade pairing with nothing),
the page, the API and the `agreement` command show the same numbers, edge cases answer "undefined" rather
than a crash or a NaN, and only the pool's managers see any of it."""

from __future__ import annotations

import io
import itertools
import json
import re
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.template.defaultfilters import floatformat
from django.test import Client
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from judgements import adjudication, exclusions, lease_ends, membership, releases, rubrics
from judgements.models import Assignment, Judgement
from pooling.models import PoolItem
from tests.conftest import client_for
from tests.factories import lease_for, make_collection, make_manager, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db

LABELS = [0, 1, 2, 3]
Q1 = [f"d{i:03d}" for i in range(0, 12)]
Q2 = [f"d{i:03d}" for i in range(12, 24)]
# (qid, docid) → {rater: grade, None = unrateable}; d008-d011 and d020-d023 nobody judged (pending)
VOTES: dict[tuple[str, str], dict[str, int | None]] = {
    ("q1", "d000"): {"alice": 3, "bob": 3, "carol": 2},
    ("q1", "d001"): {"alice": 0, "bob": 1, "carol": 0, "dave": 2},
    ("q1", "d002"): {"alice": 2, "bob": None, "carol": 2},  # an unrateable vote beside two grades
    ("q1", "d003"): {"alice": 1, "bob": 1, "carol": 3},
    ("q1", "d004"): {"alice": 0, "bob": 0},
    ("q1", "d005"): {"alice": 3, "bob": 2, "dave": 3},
    ("q1", "d006"): {"alice": None, "bob": None},  # all unrateable
    ("q1", "d007"): {"alice": 2},  # one grade: pairs with nothing
    ("q2", "d012"): {"alice": 1, "bob": 0, "carol": 1},
    ("q2", "d013"): {"alice": 2, "bob": 2},
    ("q2", "d014"): {"alice": 0, "bob": 0, "carol": 0},
    ("q2", "d015"): {"alice": 3, "bob": 1},
    ("q2", "d016"): {"bob": 2, "carol": None},  # a grade and an unrateable vote: no pair
    ("q2", "d017"): {"eve": 3},  # only the excluded rater
    ("q2", "d018"): {"eve": 0, "bob": 3},
    ("q2", "d019"): {"carol": 1, "eve": 2},
}
EXCLUDED = "eve"


@pytest.fixture
def seeded(manager) -> dict[str, Any]:
    collection = make_collection(docs=30, topics=("q1", "q2"))
    run = make_run(collection=collection, name="r", lists={"q1": Q1, "q2": Q2})
    raters = {name: make_user(name) for name in ("alice", "bob", "carol", "dave", "eve")}
    pool = make_pool(
        collection=collection, runs=[run], depth=12, judgements_per_item=2, raters=list(raters.values()),
        name="seeded",
    )  # fmt: skip
    for name, rater in raters.items():
        judge(pool, rater, {key: votes[name] for key, votes in VOTES.items() if name in votes})
    item = {(i.topic.qid, i.document.docid): i for i in PoolItem.objects.filter(pool=pool).select_related(
        "topic", "document")}  # fmt: skip
    adjudication.set_gold(item=item[("q1", "d003")], grade=1, by=manager)
    lease = lease_for(pool=pool, rater=raters["dave"])
    assert lease is not None
    lease_ends.skip_item(assignment=lease)
    assert Assignment.objects.filter(item__pool=pool, state=Assignment.State.SKIPPED).count() == 1
    exclusions.exclude_rater(pool=pool, rater=raters[EXCLUDED], by=manager)
    return {"pool": pool, "raters": raters, "item": item}


def counted() -> dict[tuple[str, str], dict[str, int]]:
    """The graded votes agreement counts, straight from the ORM: no unrateable vote, no excluded rater."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for qid, docid, rater, grade in Judgement.objects.filter(
        item__pool__name="seeded", unrateable=False
    ).values_list("item__topic__qid", "item__document__docid", "rater__username", "grade"):
        if rater != EXCLUDED and grade is not None:
            out.setdefault((qid, docid), {})[rater] = grade
    return out


def pairs(votes: dict[tuple[str, str], dict[str, int]], keep=lambda key: True) -> tuple[list[int], list[int]]:
    a, b = [], []
    for key, by_rater in sorted(votes.items()):
        if keep(key):
            for x, y in itertools.combinations(sorted(by_rater), 2):
                a.append(by_rater[x])
                b.append(by_rater[y])
    return a, b


def api_summary(manager, query: str = "") -> dict[str, Any]:
    response = client_for(manager).get(f"/api/agreement/seeded/{query}")
    assert response.status_code == 200
    return response.json()


def test_it_equals_the_reference_libraries_on_the_seeded_pool(seeded, manager):
    summary = api_summary(manager)
    votes = counted()
    a, b = pairs(votes)
    for name, weights in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic")):
        expected = cohen_kappa_score(a, b, labels=LABELS, weights=weights)
        assert summary["cohen"][name]["kappa"] == pytest.approx(expected, abs=1e-12), name
    level = seeded["pool"].relevance_level
    binary = cohen_kappa_score([int(x >= level) for x in a], [int(y >= level) for y in b], labels=[0, 1])
    assert summary["cohen"]["binary"]["kappa"] == pytest.approx(binary, abs=1e-12)
    assert summary["n_pairs"] == len(a) and summary["observed_agreement"] == pytest.approx(
        np.mean(np.equal(a, b))
    )
    # per rater pair and per topic, each as sklearn gives it
    for entry in summary["pairs"]:
        ra, rb = entry["rater_a"], entry["rater_b"]
        both = [(v[ra], v[rb]) for v in votes.values() if ra in v and rb in v]
        assert entry["n_items"] == len(both)
        expected = cohen_kappa_score(*zip(*both, strict=True), labels=LABELS)
        assert entry["unweighted"] == pytest.approx(expected, abs=1e-12), (ra, rb)
    assert {(e["rater_a"], e["rater_b"]) for e in summary["pairs"]} == {
        pair for v in votes.values() if len(v) > 1 for pair in itertools.combinations(sorted(v), 2)
    }
    for entry in summary["topics"]:
        ta, tb = pairs(votes, keep=lambda key, qid=entry["topic"]: key[0] == qid)
        assert entry["n_pairs"] == len(ta)
        assert entry["linear"] == pytest.approx(cohen_kappa_score(ta, tb, labels=LABELS, weights="linear"))
    # Krippendorff over every graded vote, raters × items with NaN where missing
    raters = sorted({r for v in votes.values() for r in v})
    keys = sorted(votes)
    matrix = np.array([[votes[k].get(r, np.nan) for k in keys] for r in raters], dtype=float)
    for level_name in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(
            reliability_data=matrix, level_of_measurement=level_name, value_domain=LABELS
        )
        assert summary["krippendorff"][level_name] == pytest.approx(expected, abs=1e-12), level_name
    # Fleiss over the items with the modal number of grades (ties: the larger)
    per_item = {k: len(v) for k, v in votes.items() if len(v) >= 2}
    counts = np.bincount(list(per_item.values()))
    mode = max(n for n in range(counts.size) if counts[n] == counts.max())
    table = [
        np.bincount(list(votes[k].values()), minlength=4) for k, n in sorted(per_item.items()) if n == mode
    ]
    assert summary["fleiss"]["ratings_per_item"] == mode
    assert summary["fleiss"]["kappa"] == pytest.approx(sm_fleiss_kappa(np.array(table)), abs=1e-12)


def test_it_counts_no_unjudged_item_nor_unrateable_vote_as_a_grade(seeded, manager):
    summary = api_summary(manager)
    votes = counted()
    human = Judgement.objects.filter(item__pool=seeded["pool"]).exclude(rater__username=EXCLUDED)
    assert summary["n_judgements"] == human.count()
    assert summary["n_unrateable"] == human.filter(unrateable=True).count() == 4
    assert summary["n_items"] == len(votes)  # items with a grade, not the pool's 24 items
    assert summary["n_items_paired"] == sum(len(v) >= 2 for v in votes.values())
    # a grade 0 in the confusion matrix comes from a rater's 0, never from an unjudged item
    zeros = sum(1 for x, y in zip(*pairs(votes), strict=True) for g in (x, y) if g == 0)
    confusion = np.array(summary["confusion"])
    assert confusion[0, :].sum() + confusion[:, 0].sum() == zeros
    assert summary["n_excluded_raters"] == 1


def cell(html: str, label: str) -> str:
    row = re.search(rf"<tr><td>{re.escape(label)}.*?</tr>", html, re.S)
    assert row is not None, label
    values = re.findall(r'<td class="num">([^<]*)</td>', row.group(0))
    return values[0].strip()


def test_the_page_the_api_and_the_command_show_the_same_numbers(seeded, manager):
    summary = api_summary(manager)
    client = Client()
    client.force_login(manager)
    html = client.get("/campaigns/seeded/agreement/").content.decode()
    for name in ("unweighted", "linear", "quadratic", "binary"):
        assert cell(html, f"Cohen's κ, {name}") == floatformat(summary["cohen"][name]["kappa"], 3), name
    assert cell(html, "Fleiss' κ") == floatformat(summary["fleiss"]["kappa"], 3)
    for level in ("nominal", "ordinal", "interval"):
        assert cell(html, f"Krippendorff's α, {level}") == floatformat(summary["krippendorff"][level], 3)
    for topic in summary["topics"]:
        assert cell(html, topic["topic"]) == floatformat(topic["unweighted"], 3)
    assert summary["sentence"] in html

    out = io.StringIO()
    call_command("agreement", "seeded", "--format", "json", stdout=out)
    cli = json.loads(out.getvalue())
    assert {k: v for k, v in cli.items() if k not in ("cohen_kappa", "weights")} == summary
    text = io.StringIO()
    call_command("agreement", "seeded", stdout=text)
    lines = text.getvalue()
    for name in ("unweighted", "linear", "quadratic", "binary"):
        assert f"  {name:<10}\t{summary['cohen'][name]['kappa']:.4f}\n" in lines
    assert f"fleiss_kappa\t{summary['fleiss']['kappa']:.4f}" in lines
    for level in ("nominal", "ordinal", "interval"):
        assert f"krippendorff_alpha ({level})\t{summary['krippendorff'][level]:.4f}\n" in lines


def test_the_rater_page_shows_the_quality_api_numbers(seeded, manager):
    quality = {
        row["rater"]: row for row in client_for(manager).get("/api/rater-quality/seeded/").json()["raters"]
    }
    client = Client()
    client.force_login(manager)
    html = client.get("/manage/pools/seeded/").content.decode()
    table = html[html.index('<table class="rater-quality">') :]
    for name in ("alice", "bob", "carol"):
        row = re.search(rf"<td>{name}</td>.*?</tr>", table, re.S)
        assert row is not None
        nums = re.findall(r'<td class="num">([^<]*)', row.group(0))
        assert int(nums[0]) == quality[name]["votes"]
        assert nums[3].strip() == floatformat(quality[name]["consensus"]["kappa"], 2)
        assert nums[4].strip() == floatformat(quality[name]["others"]["kappa"], 2)
    assert quality[EXCLUDED]["excluded"] is True
    # κ with the consensus as sklearn gives it, on the rater's graded votes of the items with a consensus
    qrels = releases.current_qrels(pool=seeded["pool"], policy="majority")
    for name in ("alice", "bob"):
        ref, mine = [], []
        for (qid, docid), by_rater in sorted(counted().items()):
            if name in by_rater and qrels.get(qid, {}).get(docid, -1) >= 0:
                ref.append(qrels[qid][docid])
                mine.append(by_rater[name])
        assert quality[name]["consensus"]["n"] == len(ref)
        expected = cohen_kappa_score(ref, mine, labels=LABELS)
        assert quality[name]["consensus"]["kappa"] == pytest.approx(expected, abs=1e-6)


# -- edge cases -------------------------------------------------------------------------------------------

EDGES: dict[str, dict[str, dict[tuple[str, str], int | None]]] = {
    "no-overlap": {"alice": {("q1", "d001"): 3, ("q1", "d002"): 0}, "bob": {("q1", "d003"): 1}},
    "one-rater": {"alice": {("q1", "d001"): 3, ("q1", "d002"): 0}},
    "all-identical": {"alice": {("q1", "d001"): 2, ("q1", "d002"): 2},
                      "bob": {("q1", "d001"): 2, ("q1", "d002"): 2}},
    "all-unrateable": {"alice": {("q1", "d001"): None}, "bob": {("q1", "d001"): None}},
    "nothing": {},
    "excluded-only-pairs": {"alice": {("q1", "d001"): 3}, "eve": {("q1", "d001"): 0, ("q1", "d002"): 1},
                            "bob": {("q1", "d002"): 1}},
}  # fmt: skip


@pytest.mark.parametrize("case", list(EDGES))
def test_an_undefined_agreement_is_said_undefined_everywhere(case, manager):
    users = {name: make_user(name) for name in ("alice", "bob", "eve")}
    pool = make_pool(name="edge", judgements_per_item=2, raters=list(users.values()))
    for name, grades in EDGES[case].items():
        judge(pool, users[name], grades)
    if "eve" in EDGES[case]:
        exclusions.exclude_rater(pool=pool, rater=users["eve"], by=manager)
    summary = client_for(manager).get("/api/agreement/edge/").json()
    assert summary["cohen"]["unweighted"]["kappa"] is None
    assert summary["fleiss"]["kappa"] is None
    assert all(value is None for value in summary["krippendorff"].values())
    assert summary["sentence"].startswith("Agreement is undefined")
    client = Client()
    client.force_login(manager)
    for url in ("/campaigns/edge/agreement/", "/manage/pools/edge/", "/manage/pools/edge/adjudication/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "nan" not in re.sub(r"<[^>]+>", " ", response.content.decode()).lower().split(), url
    assert cell(client.get("/campaigns/edge/agreement/").content.decode(), "Cohen's κ, unweighted") == (
        "undefined"
    )
    assert client_for(manager).get("/api/rater-quality/edge/").status_code == 200
    out = io.StringIO()
    call_command("agreement", "edge", stdout=out)
    assert "cohen_kappa (unweighted)\tundefined" in out.getvalue()
    assert "nan" not in out.getvalue().lower()


# -- who may not ------------------------------------------------------------------------------------------


def test_only_the_pools_managers_see_agreement_quality_and_adjudication(seeded):
    other_manager = make_manager("other-manager")
    rater = seeded["raters"]["alice"]
    pages = ["/campaigns/seeded/agreement/", "/manage/pools/seeded/", "/manage/pools/seeded/adjudication/"]
    apis = ["/api/agreement/seeded/", "/api/rater-quality/seeded/", "/api/judging/seeded/adjudication/"]
    for user, code in ((rater, 403), (other_manager, 404)):
        client = Client()
        client.force_login(user)
        for url in pages:
            assert client.get(url).status_code == code, (user, url)
        for url in apis:
            assert client_for(user).get(url).status_code == code, (user, url)
    with pytest.raises(Exception, match="no judged pool"):
        call_command("agreement", "nowhere", stdout=io.StringIO())


def test_a_rater_never_sees_another_raters_grade(seeded):
    alice = seeded["raters"]["alice"]
    api = client_for(alice)
    mine = api.get("/api/judgements/?limit=100").json()["results"]
    assert {row["id"] for row in mine} == set(
        Judgement.objects.filter(rater=alice).values_list("pk", flat=True)
    )
    bob_judgement = Judgement.objects.filter(rater__username="bob").first()
    assert api.get(f"/api/judgements/{bob_judgement.pk}/").status_code == 404
    judging = api.get("/api/judging/seeded/").json()
    assert "bob" not in json.dumps(judging)


# -- defects ----------------------------------------------------------------------------------------------


@pytest.fixture
def spammed(manager):
    """bob agrees with alice on 10 items; on 25 more his only co-rater is eve, who never agrees."""
    docs = [f"d{i:03d}" for i in range(35)]
    collection = make_collection(docs=35, topics=("q1",))
    run = make_run(collection=collection, name="r", lists={"q1": docs})
    alice, bob, eve = make_user("alice"), make_user("bob"), make_user("eve")
    pool = make_pool(collection=collection, runs=[run], depth=35, judgements_per_item=2,
                     raters=[alice, bob, eve], name="spammed")  # fmt: skip
    honest = {("q1", docs[i]): i % 4 for i in range(10)}
    judge(pool, alice, honest)
    spam = {("q1", docs[i]): i % 4 for i in range(10, 35)}
    judge(pool, bob, {**honest, **spam})
    judge(pool, eve, {key: (grade + 2) % 4 for key, grade in spam.items()})
    return pool, eve


def bobs_quality(manager) -> dict[str, Any]:
    data = client_for(manager).get("/api/rater-quality/spammed/").json()
    return next(row for row in data["raters"] if row["rater"] == "bob")


def test_an_excluded_rater_is_no_longer_the_yardstick_of_the_others(spammed, manager):
    pool, eve = spammed
    before = bobs_quality(manager)
    assert before["others"]["n"] == 35 and {f["flag"] for f in before["flags"]} == {"near-chance"}
    exclusions.exclude_rater(pool=pool, rater=eve, by=manager, reason="random answers")
    after = bobs_quality(manager)
    # bob against the raters who count: alice, on the 10 items they share, in full agreement
    assert after["others"]["n"] == 10
    assert after["others"]["kappa"] == pytest.approx(cohen_kappa_score(list(range(10)), list(range(10))))
    assert after["flags"] == []
    client = Client()
    client.force_login(manager)
    table = client.get("/manage/pools/spammed/").content.decode().split('<table class="rater-quality">')[1]
    bobs_row = re.search(r"<td>bob</td>.*?</tr>", table, re.S)
    assert bobs_row is not None and "near-chance" not in bobs_row.group(0)


def test_a_pool_is_not_moved_to_a_rubric_that_lacks_a_grade_its_labels_carry(seeded, manager):
    pool = seeded["pool"]
    before = pool.judging.rubric
    binary = rubrics.create_rubric(
        name="binary",
        grades=[{"value": 0, "label": "no", "key": "0"}, {"value": 1, "label": "yes", "key": "1"}],
    )
    with pytest.raises(membership.JudgingError) as refused:
        membership.setup_judging(pool=pool, rubric=binary)
    assert refused.value.field == "rubric" and "2, 3" in str(refused.value)
    response = client_for(manager).patch("/api/judging/seeded/", {"rubric": binary.pk}, format="json")
    assert response.status_code == 400 and "rubric" in response.json()
    pool.judging.refresh_from_db()
    assert pool.judging.rubric == before
    # so every page that reads the labels still answers
    assert client_for(manager).get("/api/agreement/seeded/").status_code == 200
    assert client_for(manager).get("/api/rater-quality/seeded/").status_code == 200


def test_the_agreement_follows_a_change_of_the_pools_rubric_at_once(manager):
    alice, bob = make_user("alice"), make_user("bob")
    pool = make_pool(name="moved", judgements_per_item=2, raters=[alice, bob])
    docs = [("q1", f"d00{i}") for i in range(1, 7)]
    judge(pool, alice, dict(zip(docs, [0, 1, 3, 3, 1, 0], strict=True)))
    judge(pool, bob, dict(zip(docs, [0, 3, 3, 1, 1, 0], strict=True)))
    api = client_for(manager)
    assert api.get("/api/agreement/moved/").json()["cohen"]["linear"]["kappa"] == pytest.approx(0.5)  # cached
    # no label carries grade 2, so the pool may move to a rubric without it: 3 is then next to 1
    scale = [g for g in rubrics.DEFAULT_GRADES if g["value"] != 2]
    membership.setup_judging(pool=pool, rubric=rubrics.create_rubric(name="no-two", grades=scale))
    after = api.get("/api/agreement/moved/").json()
    assert after["labels"] == [0, 1, 3]
    expected = cohen_kappa_score([0, 1, 3, 3, 1, 0], [0, 3, 3, 1, 1, 0], labels=[0, 1, 3], weights="linear")
    assert after["cohen"]["linear"]["kappa"] == pytest.approx(expected) == pytest.approx(0.625)
    client = Client()
    client.force_login(manager)
    html = client.get("/campaigns/moved/agreement/").content.decode()
    assert cell(html, "Cohen's κ, linear") == floatformat(expected, 3)
    assert api.get("/api/rater-quality/moved/").json()["labels"] == [0, 1, 3]


def test_the_adjudication_queue_counts_no_excluded_raters_vote(seeded, manager):
    """An item whose only disagreement is an excluded rater's vote (q2 d018: eve 0, bob 3) is not sent to
    adjudication: releases ignore that vote. Before, it stayed in the queue and its counts."""
    pool, item = seeded["pool"], seeded["item"]
    queued = {row["item_id"] for row in adjudication.queue_rows(pool=pool, gap=1)}
    assert item[("q2", "d018")].pk not in queued and item[("q2", "d019")].pk not in queued  # eve's alone
    assert item[("q1", "d005")].pk in queued  # alice 3, bob 2, dave 3: a disagreement that counts
    api = client_for(manager).get(f"/api/judging/{pool.name}/adjudication/?gap=1").json()
    assert item[("q2", "d018")].pk not in {row["item"] for row in api["results"]}
    exclusions.restore_rater(pool=pool, rater=seeded["raters"][EXCLUDED], by=manager)
    assert item[("q2", "d018")].pk in {row["item_id"] for row in adjudication.queue_rows(pool=pool, gap=1)}

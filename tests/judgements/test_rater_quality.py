"""Per-rater quality and flags: a simulated crowd's constant answerer, random answerer and fast clicker
are flagged and its honest raters are not; the rater page and the API show it to managers only; an
exclusion leaves a rater's labels out of releases, is recorded, and is undone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.test import Client
from sklearn.metrics import cohen_kappa_score

from judgements import exclusions, rater_quality, releases
from judgements.models import Judgement, RaterExclusion
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

LABELS = [0, 1, 2, 3]


def simulated_crowd(seed: int = 0):
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, 300, p=[0.4, 0.3, 0.2, 0.1])
    raters = [f"honest{k}" for k in range(8)] + ["constant", "random", "fast"]
    records = []
    for item in range(300):
        for rater in rng.choice(raters, 3, replace=False).tolist():
            seconds = float(rng.uniform(10, 40))
            if rater == "constant":
                grade = 2
            elif rater == "random":
                grade = int(rng.integers(0, 4))
            else:
                grade = int(truth[item]) if rng.random() < 0.8 else int(rng.integers(0, 4))
                if rater == "fast":
                    seconds = float(rng.uniform(1, 3))
            records.append((item, rater, grade, seconds))
    consensus = {item: int(truth[item]) for item in range(300)}
    gold = {item: int(truth[item]) for item in range(30)}
    return records, consensus, gold


def test_it_flags_the_constant_random_and_fast_raters_and_no_honest_one():
    records, consensus, gold = simulated_crowd()
    flags = {
        q.rater: {f.flag for f in q.flags}
        for q in rater_quality.rater_quality(records, labels=LABELS, consensus=consensus, gold=gold)
    }
    assert flags["constant"] >= {"constant"}
    assert "near-chance" in flags["random"]
    assert flags["fast"] == {"fast"}
    assert all(not flags[f"honest{k}"] for k in range(8)), flags


def test_it_measures_confusion_accuracy_and_kappa_as_sklearn_does():
    records = [(i, "a", g, None) for i, g in enumerate([0, 1, 2, 3, 0, 1, 2, 3, 2, 1, 0, 3])]
    reference = [0, 2, 2, 3, 1, 1, 3, 3, 1, 1, 0, 2]
    (q,) = rater_quality.rater_quality(
        records, labels=LABELS, consensus=dict(enumerate(reference)), gold={0: 0, 1: 1}
    )
    mine = [g for _, _, g, _ in records]
    assert q.consensus.kappa == pytest.approx(cohen_kappa_score(reference, mine, labels=LABELS))
    assert q.consensus.accuracy == pytest.approx(7 / 12)
    assert sum(map(sum, q.consensus.confusion)) == 12
    assert q.gold.n == 2 and q.gold.accuracy == 1.0


def test_a_middle_grade_answerer_is_caught_though_within_one_of_every_gold_item():
    records = [(i, "middle", 1, 5.0) for i in range(40)] + [(i, "honest", i % 4, 5.0) for i in range(40)]
    gold = {i: i % 3 for i in range(40)}  # grades 0-2: the middle grade is within one of each
    quality = {
        q.rater: q for q in rater_quality.rater_quality(records, labels=LABELS, consensus={}, gold=gold)
    }
    assert "constant" in {f.flag for f in quality["middle"].flags}
    assert quality["middle"].gold.accuracy < 0.5  # exact accuracy is not fooled either


@pytest.fixture
def crowd_pool(db, manager):
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    pool = make_pool(judgements_per_item=1, raters=[alice, bob, carol], name="crowd")
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 0, ("q2", "d010"): 2})
    judge(pool, bob, {("q1", "d001"): 3, ("q1", "d002"): 1})
    judge(pool, carol, {("q1", "d001"): 0, ("q1", "d002"): 0, ("q1", "d003"): 0, ("q2", "d010"): 0})
    return pool


def test_an_exclusion_leaves_a_raters_labels_out_of_releases_until_restored(crowd_pool, manager):
    carol = Judgement.objects.filter(rater__username="carol").first().rater
    before = releases.current_qrels(pool=crowd_pool)
    assert before["q1"]["d003"] == 0  # only carol judged it
    exclusions.exclude_rater(pool=crowd_pool, rater=carol, by=manager, reason="constant")
    after = releases.current_qrels(pool=crowd_pool)
    assert after["q1"]["d003"] == -1  # pending again: her label no longer counts
    release = releases.create_release(pool=crowd_pool, policy="majority")
    root = Path(settings.MEDIA_ROOT) / release.directory
    assert json.loads((root / "manifest.json").read_text())["excluded_raters"] == 1
    assert len((root / "judgements.jsonl").read_text().splitlines()) == 5  # alice's 3 and bob's 2
    with pytest.raises(Exception, match="already"):
        exclusions.exclude_rater(pool=crowd_pool, rater=carol, by=manager)
    exclusions.restore_rater(pool=crowd_pool, rater=carol, by=manager)
    assert releases.current_qrels(pool=crowd_pool) == before
    record = RaterExclusion.objects.get()
    assert (record.excluded_by, record.restored_by, record.reason) == (manager, manager, "constant")


def test_the_rater_page_shows_flags_and_excludes_in_one_click(crowd_pool, manager):
    client = Client()
    client.force_login(manager)
    html = client.get("/manage/pools/crowd/").content.decode()
    assert "Quality and flags" in html and "Exclude from releases" in html and "Confusion matrices" in html
    response = client.post("/manage/pools/crowd/raters/carol/exclude/", {"reason": "near-chance"})
    assert response.status_code == 302
    assert RaterExclusion.objects.filter(rater__username="carol", restored_at__isnull=True).exists()
    assert "Restore" in client.get("/manage/pools/crowd/").content.decode()
    client.post("/manage/pools/crowd/raters/carol/restore/")
    assert not RaterExclusion.objects.filter(restored_at__isnull=True).exists()


def test_only_the_pools_managers_may_exclude(crowd_pool, outsider):
    alice = Judgement.objects.filter(rater__username="alice").first().rater
    for user, status in ((None, 302), (outsider, 403), (alice, 403)):
        client = Client()
        if user:
            client.force_login(user)
        assert client.post("/manage/pools/crowd/raters/carol/exclude/").status_code == status
    assert not RaterExclusion.objects.exists()


def test_the_api_reports_quality_and_excludes_for_managers_only(crowd_pool, manager, outsider):
    assert client_for(None).get("/api/rater-quality/crowd/").status_code == 401
    assert client_for(outsider).get("/api/rater-quality/crowd/").status_code == 403
    api = client_for(manager)
    data = api.get("/api/rater-quality/crowd/").json()
    assert {row["rater"] for row in data["raters"]} == {"alice", "bob", "carol"}
    assert all("flags" in row and "confusion" in row["gold"] for row in data["raters"])
    response = api.post(
        "/api/rater-quality/crowd/exclusions/", {"rater": "carol", "reason": "x"}, format="json"
    )
    assert response.status_code == 201 and response.json()["active"]
    assert next(r for r in api.get("/api/rater-quality/crowd/").json()["raters"] if r["rater"] == "carol")[
        "excluded"
    ]
    assert (
        api.post("/api/rater-quality/crowd/exclusions/", {"rater": "carol"}, format="json").status_code == 400
    )
    assert (
        api.post("/api/rater-quality/crowd/exclusions/", {"rater": "nobody"}, format="json").status_code
        == 400
    )
    assert api.post("/api/rater-quality/crowd/exclusions/", {}, format="json").status_code == 400
    assert api.delete("/api/rater-quality/crowd/exclusions/carol/").json()["active"] is False
    assert api.delete("/api/rater-quality/crowd/exclusions/carol/").status_code == 400
    assert len(api.get("/api/rater-quality/crowd/exclusions/").json()["results"]) == 1


def test_it_answers_alike_for_an_unknown_name_and_an_account_outside_the_pool(crowd_pool, manager, outsider):
    """Excluding by name finds only the pool's raters: an account that exists elsewhere and a name that
    exists nowhere get the same 400, so the answer does not tell which usernames exist."""
    api = client_for(manager)
    answers = [
        api.post("/api/rater-quality/crowd/exclusions/", {"rater": name}, format="json")
        for name in (outsider.username, "nobody-at-all")
    ]
    assert [a.status_code for a in answers] == [400, 400]
    assert [a.json()["rater"] for a in answers] == [
        [f"{outsider.username} has no judgement in crowd"],
        ["nobody-at-all has no judgement in crowd"],
    ]
    assert not RaterExclusion.objects.exists()

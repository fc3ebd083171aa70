"""Accuracy against gold is one measure (`rater_quality.gold_accuracy`): every answer to a gold item
counts, and an unrateable one is a miss (a gold label is always a grade), so a rater cannot dodge the
gold checks by answering unrateable. The rater page's two "Gold exact" columns (the statistics' and the
quality table's), `/api/judging/<pool>/stats/` and `/api/rater-quality/<pool>/` give the same number for
the same rater; κ and the confusion matrix against gold stay over the graded answers."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from judgements import adjudication, rater_quality
from judgements.stats import gold_accuracy
from pooling.models import PoolItem
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

LABELS = [0, 1, 2, 3]
GOLD = {"d001": 2, "d002": 2, "d003": 0, "d004": 3}
ALICE = {"d001": 2, "d002": None, "d003": 1, "d004": 3}  # 2 hits, an unrateable answer, 1 off by one


def test_it_counts_an_unrateable_answer_to_a_gold_item_as_a_miss():
    accuracy = rater_quality.gold_accuracy([(2, 2), (2, None), (0, 1), (3, 3)])
    assert (accuracy.n, accuracy.exact, accuracy.within_one) == (4, 2, 3)
    assert (accuracy.exact_rate, accuracy.within_one_rate) == (0.5, 0.75)
    assert rater_quality.gold_accuracy([(1, None)]).exact_rate == 0.0
    assert rater_quality.gold_accuracy([]).exact_rate is None


def test_it_gives_gold_accuracy_over_every_answer_and_kappa_over_the_graded_ones():
    records = [(docid, "alice", grade, 5.0) for docid, grade in ALICE.items()]
    (quality,) = rater_quality.rater_quality(records, labels=LABELS, consensus={}, gold=GOLD)
    assert (quality.gold.n, quality.gold.accuracy) == (4, 0.5)
    graded = [(GOLD[d], g) for d, g in ALICE.items() if g is not None]
    reference, mine = [r for r, _ in graded], [g for _, g in graded]
    assert quality.gold.kappa == pytest.approx(cohen_kappa_score(reference, mine, labels=LABELS))
    assert quality.gold.confusion == confusion_matrix(reference, mine, labels=LABELS).tolist()


@pytest.mark.django_db
def test_it_shows_one_gold_exact_in_both_tables_and_both_apis(manager):
    alice = make_user("alice")
    pool = make_pool(name="golden", raters=[alice])
    for docid, grade in GOLD.items():
        adjudication.set_gold(
            item=PoolItem.objects.get(pool=pool, document__docid=docid), grade=grade, by=manager
        )
    judge(pool, alice, {("q1", docid): grade for docid, grade in ALICE.items()})
    assert (gold_accuracy(pool=pool)[alice.pk].n, gold_accuracy(pool=pool)[alice.pk].exact) == (4, 2)
    stats = client_for(manager).get(f"/api/judging/{pool.name}/stats/").json()["results"]
    gold = next(row for row in stats if row["rater"] == "alice")["gold"]
    assert (gold["n"], gold["exact"], gold["exact_rate"], gold["within_one"]) == (4, 2, 0.5, 3)
    quality = client_for(manager).get(f"/api/rater-quality/{pool.name}/").json()["raters"]
    versus = next(row for row in quality if row["rater"] == "alice")["gold"]
    assert (versus["n"], versus["accuracy"]) == (gold["n"], gold["exact_rate"])
    assert sum(map(sum, versus["confusion"])) == 3  # the graded answers: κ compares grades
    client = Client()
    client.force_login(manager)
    html = client.get(f"/manage/pools/{pool.name}/").content.decode()
    assert html.count(">Gold exact<") == 2 and "(graded)" not in html
    assert "an unrateable one a miss" in html and "here it is left out" not in html
    statistics = html[html.index('<table class="rater-stats">') : html.index("</table>")]
    row = re.search(r"<td>alice</td>.*?</tr>", statistics, re.S)
    assert row is not None
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(0))
    assert cells[-3:] == ["4", "0.50", "0.75"]  # Gold n, Gold exact, Gold ±1
    quality_table = html[html.index('<table class="rater-quality">') :]
    row = re.search(r"<td>alice</td>.*?</tr>", quality_table, re.S)
    assert row is not None and '<td class="num">0.50 <span class="muted">(4)</span></td>' in row.group(0)

"""The rater page's two gold columns are two measures, each named for what it counts: the statistics'
"Gold exact" (every answer to a gold item, an unrateable one a miss: `stats.gold_accuracy`, as
`/api/judging/<pool>/stats/` gives it) and the quality table's "Gold exact (graded)" (the graded answers
only, as κ needs grades: `rater_quality`, as `/api/rater-quality/<pool>/` gives it)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from judgements import adjudication
from pooling.models import PoolItem
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db


def test_an_unrateable_answer_to_a_gold_item_is_a_miss_in_one_column_and_left_out_of_the_other(manager):
    alice = make_user("alice")
    pool = make_pool(name="golden", raters=[alice])
    for docid in ("d001", "d002"):
        adjudication.set_gold(
            item=PoolItem.objects.get(pool=pool, document__docid=docid), grade=2, by=manager
        )
    judge(pool, alice, {("q1", "d001"): 2, ("q1", "d002"): None})
    stats = client_for(manager).get(f"/api/judging/{pool.name}/stats/").json()["results"]
    gold = next(row for row in stats if row["rater"] == "alice")["gold"]
    assert (gold["n"], gold["exact_rate"]) == (2, 0.5)
    quality = client_for(manager).get(f"/api/rater-quality/{pool.name}/").json()["raters"]
    graded = next(row for row in quality if row["rater"] == "alice")["gold"]
    assert (graded["n"], graded["accuracy"]) == (1, 1.0)
    client = Client()
    client.force_login(manager)
    html = client.get(f"/manage/pools/{pool.name}/").content.decode()
    assert html.count(">Gold exact<") == 1 and html.count(">Gold exact (graded)<") == 1
    quality_table = html[html.index('<table class="rater-quality">') :]
    row = re.search(r"<td>alice</td>.*?</tr>", quality_table, re.S)
    assert row is not None and '1.00 <span class="muted">(1)</span>' in row.group(0)
    assert "an unrateable answer to a gold item is a miss in the table above" in html

"""What an adaptive pool's strategy reads as an item's consensus comes from what a release reads: the
judgements that count (an excluded rater's do not) and the adjudication that overrides them. (Where fewer
judgements than required remain, the release calls the item pending; the strategy still reads the median
of those that count, its best evidence, rather than take the item for non-relevant.)"""

from __future__ import annotations

import pytest

from judgements import adjudication, exclusions
from judgements.adaptive_selection import consensus_outcomes
from judgements.releases import current_qrels
from pooling.models import PoolItem
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db


def test_an_excluded_rater_no_longer_steers_an_adaptive_pool_and_an_adjudication_decides(manager):
    alice, eve = make_user("alice"), make_user("eve")
    pool = make_pool(name="steered", judgements_per_item=2, raters=[alice, eve])
    judge(pool, alice, {("q1", "d001"): 3, ("q1", "d002"): 1, ("q1", "d003"): 0})
    judge(pool, eve, {("q1", "d001"): 0, ("q1", "d002"): 3, ("q1", "d003"): 0})
    items = PoolItem.objects.filter(pool=pool, topic__qid="q1", document__docid__in=["d001", "d002", "d003"])
    assert consensus_outcomes(pool=pool, items=items) == {"d001": 0, "d002": 1, "d003": 0}  # lower medians
    exclusions.exclude_rater(pool=pool, rater=eve, by=manager, reason="random answers")
    adjudication.adjudicate(item=items.get(document__docid="d003"), adjudicator=manager, grade=2)
    outcomes = consensus_outcomes(pool=pool, items=items)
    assert outcomes == {"d001": 3, "d002": 1, "d003": 2}
    # the release's labels under the same policy: the adjudicated item alike; the others, alice's alone
    # now, are pending there (two judgements each are required)
    released = current_qrels(pool=pool, policy="median")["q1"]
    assert (released["d003"], released["d001"], released["d002"]) == (2, -1, -1)

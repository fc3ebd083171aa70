"""The adjudication queue counted and sliced in the database (`adjudication.queue_rows`): the same items in
the same order as the rule says, pages that put back together are the whole queue, and one page costs
the same whatever the length of the queue."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from judgements import adjudication, stats
from judgements.campaign_serializers import QueueEntrySerializer
from judgements.models import Judgement
from pooling.models import Pool, PoolItem
from tests.conftest import client_for
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.django_db

#: Votes of three raters on successive items (None: unrateable; fewer votes: the others did not judge).
VOTES: list[tuple[int | None, ...]] = [
    (3, 0), (2, 1), (0, 0), (2, None), (None, None), (1,), (3, 1, None), (0, 3, 3), (1, 1, 1),
    (None, None, 2), (2, 0, 1), (3, 3), (0, 2), (None,), (1, 3), (2, 2, None),
]  # fmt: skip


def voted_pool(name: str, votes: Sequence[tuple[int | None, ...]], raters: Sequence[User]) -> Pool:
    """A pool of one topic whose n-th item has the n-th votes, the first rater's first."""
    collection = make_collection(name=name, docs=len(votes), topics=("q1",))
    run = make_run(collection=collection, name="all", lists={"q1": [f"d{i:03d}" for i in range(len(votes))]})
    pool = make_pool(
        collection=collection, runs=[run], name=name, depth=len(votes), judgements_per_item=3, raters=raters
    )
    for rater_index, rater in enumerate(raters):
        judge(pool, rater, {
            ("q1", f"d{i:03d}"): grades[rater_index]
            for i, grades in enumerate(votes)
            if rater_index < len(grades)
        })  # fmt: skip
    return pool


@pytest.fixture
def raters() -> list[User]:
    return [make_user("ann"), make_user("ben"), make_user("cat")]


def by_hand(pool: Pool, gap: int) -> list[dict[str, Any]]:
    """The queue's rule written out in Python, item by item (what the queue computed before SQL did)."""
    votes: dict[int, list[int | None]] = defaultdict(list)
    for item_id, grade, unrateable in Judgement.objects.filter(
        item__pool=pool, item__adjudication__isnull=True
    ).values_list("item_id", "grade", "unrateable"):
        votes[item_id].append(None if unrateable else grade)
    queue = []
    for item_id, values in votes.items():
        rated = [v for v in values if v is not None]
        spread = max(rated) - min(rated) if rated else 0
        if len(values) >= 2 and (spread >= gap or 0 < len(rated) < len(values)):
            queue.append({"item_id": item_id, "spread": spread, "unrateable_votes": len(values) - len(rated)})
    return sorted(queue, key=lambda row: (-row["spread"], row["item_id"]))


def test_it_queues_the_items_the_rule_names_in_its_order_for_every_gap(raters, manager):
    pool = voted_pool("votes", VOTES, raters)
    decided = PoolItem.objects.get(pool=pool, document__docid="d000")  # spread 3, but adjudicated
    adjudication.adjudicate(item=decided, adjudicator=manager, grade=1)
    for gap in range(5):
        queue = list(adjudication.queue_rows(pool=pool, gap=gap))
        assert queue == by_hand(pool, gap), gap
        assert decided.pk not in {row["item_id"] for row in queue}
    assert adjudication.queue_rows(pool=pool, gap=2).count() == len(by_hand(pool, 2)) == 8


def test_it_pages_the_queue_into_the_whole_queue_in_order(raters, manager):
    pool = voted_pool("votes", VOTES, raters)
    api = client_for(manager)
    for query in ("", "&gap=0", "&gap=1", "&gap=3"):
        whole = QueueEntrySerializer(
            stats.queue_entries(adjudication.queue_rows(pool=pool, gap=int(query[5:]) if query else None)),
            many=True,
        ).data
        pages, url = [], f"/api/judging/votes/adjudication/?limit=2{query}"
        while url:
            page = api.get(url).json()
            assert page["count"] == len(whole) and len(page["results"]) <= 2
            pages += page["results"]
            url = page["next"]
        assert pages == whole, query
        gap = int(query[5:]) if query else 2
        assert [entry["item"] for entry in pages] == [row["item_id"] for row in by_hand(pool, gap)]


def cost_of_a_page(url: str, user: User) -> tuple[int, int]:
    """The queries and the rows the database sends back for `GET url`."""
    rows: list[int] = []

    def counting(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        result = execute(sql, params, many, context)
        rows.append(max(context["cursor"].rowcount, 0))
        return result

    api = client_for(user)
    with CaptureQueriesContext(connection) as queries, connection.execute_wrapper(counting):
        response = api.get(url)
    assert response.status_code == 200 and len(response.json()["results"]) == 2
    return len(queries), sum(rows)


def test_it_reads_no_more_for_a_page_of_a_queue_of_50_than_of_5(raters, manager):
    voted_pool("five", [(3, 0, 1)] * 5, raters)
    voted_pool("fifty", [(3, 0, 1)] * 50, raters)
    small = cost_of_a_page("/api/judging/five/adjudication/?limit=2&offset=2", manager)
    large = cost_of_a_page("/api/judging/fifty/adjudication/?limit=2&offset=2", manager)
    assert large == small

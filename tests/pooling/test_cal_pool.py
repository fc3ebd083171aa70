"""A `cal` pool in the database: batches selected at once, learned from the judgements, judged blind."""

from __future__ import annotations

from typing import cast

from judgements.adaptive_selection import consensus_outcomes
from pooling import adaptive, strategies
from pooling.models import Document, Pool, PoolItem, Topic
from tests.factories import lease_for, make_collection, make_pool, make_run, make_user, submit_for

RELEVANT = {"d001", "d004", "d006", "d009", "d012", "d015"}


def make_cal_pool(db: None, *, budget: int = 12) -> Pool:
    collection = make_collection(docs=20, topics=("q1",))
    for doc in Document.objects.filter(collection=collection):
        doc.text = "apple orchard harvest" if doc.docid in RELEVANT else "car engine repair"
        doc.save(update_fields=["text"])
    Topic.objects.filter(collection=collection).update(query="apple", description="orchards of apples")
    docids = [f"d{i:03d}" for i in range(20)]
    runs = [
        make_run(collection=collection, name="one", lists={"q1": docids[:10]}),
        make_run(collection=collection, name="two", lists={"q1": list(reversed(docids))[:10]}),
    ]
    rater = make_user("cal-rater")
    return make_pool(
        collection=collection, runs=runs, depth=10, strategy="cal", budget=budget, seed=3, raters=[rater]
    )


def test_it_selects_a_whole_batch_at_once_as_the_simulation_does(db: None) -> None:
    pool = make_cal_pool(db)
    topic = Topic.objects.get(collection=pool.collection, qid="q1")
    outcomes: dict[str, int | None] = {}
    batches: list[list[str]] = []
    while adaptive.select_next(pool=pool, topic=topic, outcomes=outcomes) is not None:
        new = list(
            PoolItem.objects.filter(pool=pool, selected=True)
            .exclude(document__docid__in=outcomes)
            .order_by("selected_order")
            .values_list("document__docid", flat=True)
        )
        batches.append(new)
        outcomes.update({docid: int(docid in RELEVANT) for docid in new})
    assert [len(batch) for batch in batches] == [2, 1, 2, 3, 4]  # the seed (two runs), then 1, 2, 3, 4
    ranked = {run.name: [d for d, _ in run.ranked_list(topic)] for run in pool.runs.all()}
    texts = {"q1": strategies.TopicTexts(
        topic=topic.full_text,
        documents={d.docid: d.full_text for d in Document.objects.filter(collection=pool.collection)},
    )}  # fmt: skip
    qrels = {"q1": dict.fromkeys(RELEVANT, 1)}
    expected = strategies.simulate(
        "cal", {"q1": ranked}, qrels, budget=12, depth=10, seed=3, texts_by_topic=texts
    )
    assert [docid for batch in batches for docid in batch] == [docid for _, docid in expected]
    assert {docid for batch in batches for docid in batch} >= RELEVANT  # every apple found in 12 of 20


def test_it_leases_a_batch_in_blind_order_and_selects_the_next_once_it_is_judged(db: None) -> None:
    pool = make_cal_pool(db)
    rater = pool.judging.raters.get()
    seen: list[str] = []
    while (assignment := lease_for(pool=pool, rater=rater)) is not None:
        docid = assignment.item.document.docid
        seen.append(docid)
        submit_for(assignment=assignment, grade=int(docid in RELEVANT), seconds=1.0)
    assert len(seen) == 12
    items = PoolItem.objects.filter(pool=pool, selected=True)
    # every selected item has a selected_order
    by_order = cast(dict[str, int], dict(items.values_list("document__docid", "selected_order")))
    blind = dict(items.values_list("document__docid", "blind_key"))
    # within a batch (the seed: selected_order 1-2; then 3; 4-5; 6-8; 9-12) raters saw blind-key order
    for first, last in ((1, 2), (4, 5), (6, 8), (9, 12)):
        batch = [docid for docid in seen if first <= by_order[docid] <= last]
        assert batch == sorted(batch, key=blind.__getitem__)
    assert consensus_outcomes(pool=pool, items=items).keys() == set(seen)


def test_it_offers_cal_as_a_pool_strategy() -> None:
    assert "cal" in Pool.Strategy.values and "cal" in strategies.STRATEGIES

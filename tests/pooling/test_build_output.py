"""A pool build's output, pinned to the pure strategy: what `build_pool` stores (items, their numbering,
blind keys, required judgements, selection, and every run and rank of their provenance) is what
`strategies.depth_k_pool_by_topic` computes from the runs' ranked lists, whichever way the build goes.

On PostgreSQL a first build writes the pool in one statement and every later one (added runs, a re-run,
builds in chunks of runs) in two; on SQLite always in two. Each test runs on the database of the session,
so running the suite on both databases covers every path.
"""

from __future__ import annotations

import io
import threading
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction

from pooling import pool_build, pool_reads, strategies
from pooling.models import Collection, Pool, PoolItem, Provenance, Run
from tests.factories import make_collection, make_run

pytestmark = pytest.mark.django_db

Stored = dict[tuple[str, str], list[tuple[str, int]]]


@pytest.fixture
def collection(db: None) -> Collection:
    return make_collection(docs=40, topics=("q1", "q2", "q3"))


@pytest.fixture
def runs(collection: Collection) -> list[Run]:
    """Four runs that overlap, one shorter than the depth, one without q3; created out of name order."""
    d = [f"d{i:03d}" for i in range(40)]
    return [
        make_run(collection=collection, name="zeta",
                 lists={"q1": d[0:12], "q2": d[20:32], "q3": d[5:17]}),
        make_run(collection=collection, name="alpha",
                 lists={"q1": d[6:18][::-1], "q2": d[25:37], "q3": d[0:12:2]}),
        make_run(collection=collection, name="Mid",
                 lists={"q1": d[3:6], "q2": d[30:40] + d[0:2]}),
        make_run(collection=collection, name="beta",
                 lists={"q1": d[::3], "q2": d[1::3], "q3": d[2::3]}),
    ]  # fmt: skip


def expected(runs: list[Run], depth: int, qids: list[str]) -> Stored:
    """The strategy's depth-k pool over the runs' stored ranked lists (rank 1 first)."""
    by_topic = {
        topic.qid: {run.name: [docid for docid, _ in run.ranked_list(topic)] for run in runs}
        for topic in runs[0].collection.topics.filter(qid__in=qids)
    }
    pool = strategies.depth_k_pool_by_topic(by_topic, depth)
    return {(qid, docid): sorted(prov) for qid, items in pool.items() for docid, prov in items.items()}


def stored(pool: Pool) -> Stored:
    out: Stored = {
        key: [] for key in PoolItem.objects.filter(pool=pool).values_list("topic__qid", "document__docid")
    }
    for qid, docid, run, rank in Provenance.objects.filter(item__pool=pool).values_list(
        "item__topic__qid", "item__document__docid", "run__name", "rank"
    ):
        out[(qid, docid)].append((run, rank))
    return {key: sorted(prov) for key, prov in out.items()}


def blind_key(pool: Pool, docid: str) -> int:
    return pool_build._blind_key_python(f"{settings.BLIND_ORDER_KEY}:{pool.pk}:", docid)


def check_items(pool: Pool, *, numbered: bool = True) -> None:
    """Every item as the build writes it: its blind key the keyed hash of its docid, its required
    judgements by the double-judged draw, selected unless adaptive; and, for the items one statement
    added (`numbered`), numbered in (topic, document) order."""
    rows = list(
        PoolItem.objects.filter(pool=pool)
        .order_by("id")
        .values_list("topic_id", "document_id", "document__docid", "blind_key", "required_judgements",
                     "num_judgements", "active_leases", "gold", "selected", "selected_order")
    )  # fmt: skip
    if numbered:
        assert [(t, d) for t, d, *_ in rows] == sorted((t, d) for t, d, *_ in rows)
    for _, _, docid, key, required, *counters in rows:
        assert key == blind_key(pool, docid)
        if pool.double_judge_fraction is None:
            assert required == pool.judgements_per_item
        else:
            drawn = (key // 7) % 1_000_000 < int(pool.double_judge_fraction * 1_000_000)
            assert required == (pool.judgements_per_item if drawn else 1)
        assert counters == [0, 0, False, not pool.adaptive, None]


def export(pool: Pool) -> str:
    out = io.StringIO()
    pool_reads.export_pool(pool=pool, out=out)
    return out.getvalue()


@pytest.mark.parametrize(
    "options",
    [
        {"depth": 5},
        {"depth": 1},
        {"depth": 100},
        {"depth": 4, "segment": "head"},
        {"depth": 6, "judgements_per_item": 3, "double_judge_fraction": 0.4},
        {"depth": 7, "strategy": "mtf", "budget": 9},
    ],
)
def test_it_stores_the_strategy_output_item_for_item(
    collection: Collection, runs: list[Run], options: dict[str, Any]
) -> None:
    pool = pool_build.create_pool(name="pinned", collection=collection, runs=runs, **options)

    summary = pool_build.build_pool(pool=pool)

    pool.refresh_from_db()
    qids = [topic.qid for topic in pool.topics()]
    want = expected(runs, pool.depth, qids)
    assert stored(pool) == want
    assert (summary.items_added, summary.provenance_added) == (len(want), sum(map(len, want.values())))
    check_items(pool)


def test_it_builds_the_same_pool_at_once_in_chunks_of_runs_and_run_by_run(
    collection: Collection, runs: list[Run], monkeypatch: Any
) -> None:
    def build(name: str, **options: Any) -> Pool:
        pool = pool_build.create_pool(name=name, collection=collection, runs=runs, depth=6, **options)
        pool_build.build_pool(pool=pool)
        pool.refresh_from_db()
        return pool

    at_once = build("at-once", judgements_per_item=2, double_judge_fraction=0.5)
    with monkeypatch.context() as patch:
        patch.setattr(pool_build, "BUILD_RUNS", 1)  # the first run's items, then each run added to them
        chunked = build("chunked", judgements_per_item=2, double_judge_fraction=0.5)
    incremental = pool_build.create_pool(
        name="incremental", collection=collection, runs=runs[:1], depth=6, judgements_per_item=2,
        double_judge_fraction=0.5,
    )  # fmt: skip
    pool_build.build_pool(pool=incremental)
    for run in runs[1:]:
        pool_build.add_runs(pool=incremental, runs=[run])
    again = pool_build.build_pool(pool=at_once)  # a re-run adds nothing

    want = expected(runs, 6, ["q1", "q2", "q3"])
    for pool in (at_once, chunked, incremental):
        assert stored(pool) == want
        assert export(pool) == export(at_once)
    check_items(at_once)
    check_items(chunked, numbered=False)  # each run's new items come after those of the runs before
    check_items(incremental, numbered=False)
    assert (again.items_added, again.provenance_added) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_two_builders_of_one_pool_take_turns() -> None:
    """The second builder waits for the first one's items and adds nothing (no duplicate, no error)."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite writes one transaction at a time anyway")
    collection = make_collection(docs=40, topics=("q1", "q2", "q3"))
    both = [
        make_run(collection=collection, name="a", lists={"q1": ["d001", "d002"], "q2": ["d003"]}),
        make_run(collection=collection, name="b", lists={"q1": ["d002", "d004"]}),
    ]
    pool = pool_build.create_pool(name="turns", collection=collection, runs=both, depth=5)
    first_in, release = threading.Event(), threading.Event()
    second: list[Any] = []

    def build_first() -> None:
        with transaction.atomic():
            pool_build._add_items(pool=pool, run_ids=[run.pk for run in both])
            first_in.set()
            release.wait(30)
        connection.close()

    def build_second() -> None:
        second.append(pool_build.build_pool(pool=Pool.objects.get(pk=pool.pk)))
        connection.close()

    one = threading.Thread(target=build_first)
    one.start()
    assert first_in.wait(30)
    two = threading.Thread(target=build_second)
    two.start()
    two.join(1.0)
    assert two.is_alive()  # waiting for the first builder's transaction
    release.set()
    one.join(30)
    two.join(30)

    assert (second[0].items_added, second[0].provenance_added) == (0, 0)
    assert stored(pool) == expected(both, 5, ["q1", "q2", "q3"])


def test_a_run_added_under_another_blind_order_key_redraws_the_whole_order(
    collection: Collection, runs: list[Run], settings: Any
) -> None:
    """The blind order of a topic is one key's: when BLIND_ORDER_KEY has changed since the pool's items
    were drawn, adding a run redraws every item's key under today's (new items' keys under the new key
    beside old items' under the old one would interleave at random). Under the same key nothing is
    redrawn. Double-judging, drawn when each item was added, stays as it was."""
    settings.BLIND_ORDER_KEY = "the key of the first build"
    pool = pool_build.create_pool(name="rekeyed", collection=collection, runs=runs[:1], depth=6)
    pool_build.build_pool(pool=pool)
    pool.refresh_from_db()
    first_id = pool.blind_order_id
    assert first_id == pool_build.blind_order_id() and len(first_id) == 16
    assert settings.BLIND_ORDER_KEY not in first_id
    check_items(pool)

    pool_build.add_runs(pool=pool, runs=[runs[1]])  # the same key: the old items keep theirs
    check_items(pool, numbered=False)
    before = dict(PoolItem.objects.filter(pool=pool).values_list("id", "required_judgements"))

    settings.BLIND_ORDER_KEY = "the key after a rotation"
    pool_build.add_runs(pool=pool, runs=[runs[2]])

    pool.refresh_from_db()
    assert pool.blind_order_id == pool_build.blind_order_id() != first_id
    check_items(pool, numbered=False)  # every item, old and new, keyed by today's key
    after = dict(PoolItem.objects.filter(pool=pool).values_list("id", "required_judgements"))
    assert {k: after[k] for k in before} == before
    assert len(after) > len(before)


def test_a_build_inside_a_transaction_leaves_the_callers_settings_as_they_were(
    collection: Collection, runs: list[Run]
) -> None:
    """The first build's statement runs with more sort memory and no JIT, and the caller's transaction
    (here the test's) gets its own settings back after it: a `SET LOCAL` would last until that ends."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL settings")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL work_mem = '5MB'")
        cursor.execute("SET LOCAL jit = on")
        pool = pool_build.create_pool(name="settings", collection=collection, runs=runs, depth=5)
        summary = pool_build.build_pool(pool=pool)
        cursor.execute("SELECT current_setting('work_mem'), current_setting('jit')")
        assert cursor.fetchone() == ("5MB", "on")
    assert summary.items_added == len(expected(runs, 5, ["q1", "q2", "q3"]))

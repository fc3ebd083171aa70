"""Pools: depth-k builds against an independent union in trec_eval order, incremental runs, removal,
re-builds, the export format, adaptive selection, the statistics and the pool API.

Runs are written as TREC files and imported with `imports.import_run`, so ties (equal scores go by docid
descending in byte order) are resolved by the importer, and the expected pool is computed here from the
file's rows by brute force.
"""

from __future__ import annotations

import io
import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pooling import adaptive, imports, pool_build, pool_reads, stats, strategies, tasks
from pooling import errors as pooling_errors
from pooling.models import Collection, Document, Job, Pool, PoolItem, PoolRun, Provenance, Run, Topic
from tests.conftest import client_for, require_services
from tests.factories import every_manager, make_collection, make_pool, make_run

pytestmark = pytest.mark.django_db

Row = tuple[str, str, float]  # qid, docid, score
Key = tuple[str, str]  # qid, docid

# Docids whose byte order differs from their numeric and case-folded order; one is not ASCII.
DOCIDS = ["d1", "d2", "d9", "d10", "d11", "D5", "Z", "a", "ab", "b", "é1", "z0"]
TOPICS = {"q1": ["head"], "q2": ["tail"], "q10": ["head"], "q3": ["tail", "head"], "q4": ["tail"]}
SCORES = [-2.0, 0.0, 0.001, 1.0, 1.5, 3.25]  # few values: many ties
RUN_NAMES = ["zeta", "alpha", "Mid", "beta"]  # created in this order; name order differs

_names = iter(range(1, 10**9))


# ------------------------------------------------------------------------------------------- helpers


def new_collection() -> Collection:
    collection = Collection.objects.create(name=f"hc{next(_names)}")
    Document.objects.bulk_create(Document(collection=collection, docid=d) for d in DOCIDS)
    Topic.objects.bulk_create(
        Topic(collection=collection, qid=qid, query=qid, segments=segments)
        for qid, segments in TOPICS.items()
    )
    return collection


def import_runs(collection: Collection, runs: dict[str, list[Row]], directory: Path) -> dict[str, Run]:
    """Write each run as a TREC file (rank column = file order, ignored) and import it."""
    out = {}
    for name, rows in runs.items():
        path = directory / f"{name}.txt"
        path.write_text(
            "".join(f"{q} Q0 {d} {i} {s!r} {name}\n" for i, (q, d, s) in enumerate(rows, 1)), encoding="utf-8"
        )
        imports.import_run(collection=collection, path=path, name=name)
        out[name] = Run.objects.get(collection=collection, name=name)
    return out


def trec_ranked(rows: list[Row]) -> dict[str, list[str]]:
    """Brute force: each topic's docids by score descending, ties by docid bytes descending."""
    by_topic: dict[str, list[tuple[float, bytes, str]]] = {}
    for qid, docid, score in rows:
        by_topic.setdefault(qid, []).append((score, docid.encode("utf-8"), docid))
    return {qid: [d for _, _, d in sorted(lst, reverse=True)] for qid, lst in by_topic.items()}


def expected_pool(runs: dict[str, list[Row]], k: int, qids: set[str]) -> dict[Key, set[tuple[str, int]]]:
    """The depth-k union with provenance, from the files' rows, over the topics `qids`."""
    pool: dict[Key, set[tuple[str, int]]] = {}
    for run, rows in runs.items():
        for qid, docs in trec_ranked(rows).items():
            if qid not in qids:
                continue
            for rank, docid in enumerate(docs[:k], 1):
                pool.setdefault((qid, docid), set()).add((run, rank))
    return pool


def stored_pool(pool: Pool) -> dict[Key, set[tuple[str, int]]]:
    """The pool as stored: every item with its provenance (an item without provenance has an empty set)."""
    out: dict[Key, set[tuple[str, int]]] = {
        key: set() for key in PoolItem.objects.filter(pool=pool).values_list("topic__qid", "document__docid")
    }
    for qid, docid, run, rank in Provenance.objects.filter(item__pool=pool).values_list(
        "item__topic__qid", "item__document__docid", "run__name", "rank"
    ):
        out[(qid, docid)].add((run, rank))
    return out


def segment_qids(segment: str) -> set[str]:
    return {qid for qid, segments in TOPICS.items() if not segment or segment in segments}


@st.composite
def campaigns(draw: Any, min_runs: int = 1) -> tuple[dict[str, list[Row]], int, str]:
    """1-4 runs over some of the topics (a topic may be missing from a run), 1-12 documents per topic with
    heavily tied scores, rows sometimes shuffled across topics; a depth k and maybe a segment."""
    n_runs = draw(st.integers(min_runs, 4))
    runs: dict[str, list[Row]] = {}
    for name in RUN_NAMES[:n_runs]:
        qids = draw(st.lists(st.sampled_from(sorted(TOPICS)), min_size=1, max_size=len(TOPICS), unique=True))
        rows: list[Row] = []
        for qid in qids:
            docs = draw(st.lists(st.sampled_from(DOCIDS), min_size=1, max_size=len(DOCIDS), unique=True))
            scores = draw(st.lists(st.sampled_from(SCORES), min_size=len(docs), max_size=len(docs)))
            rows.extend((qid, docid, score) for docid, score in zip(docs, scores, strict=True))
        if draw(st.booleans()):
            rows = draw(st.permutations(rows))
        runs[name] = rows
    k = draw(st.integers(1, 8))
    segment = draw(st.sampled_from(["", "", "head"]))
    return runs, k, segment


class Rollback(Exception):
    pass


@contextmanager
def rolled_back() -> Iterator[None]:
    """Each hypothesis example in its own savepoint, rolled back at the end."""
    try:
        with transaction.atomic():
            yield
            raise Rollback
    except Rollback:
        pass


HYPOTHESIS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# --------------------------------------------------------------------------------- depth-k: property


@HYPOTHESIS
@given(campaign=campaigns())
def test_it_builds_the_depth_k_union_in_trec_eval_order(campaign: Any) -> None:
    runs, k, segment = campaign
    with rolled_back(), tempfile.TemporaryDirectory() as tmp:
        collection = new_collection()
        stored = import_runs(collection, runs, Path(tmp))
        pool = pool_build.create_pool(
            name=f"p{next(_names)}", collection=collection, runs=stored.values(), depth=k, segment=segment
        )
        summary = pool_build.build_pool(pool=pool)

        qids = segment_qids(segment)
        expected = expected_pool(runs, k, qids)
        assert stored_pool(pool) == expected
        assert summary.items_added == len(expected)
        assert summary.provenance_added == sum(len(p) for p in expected.values())
        assert summary.topics == len({qid for qid, _ in expected})

        # The pure reference on the rows read back agrees too.
        reference: dict[Key, set[tuple[str, int]]] = {}
        for topic in Topic.objects.filter(collection=collection, qid__in=qids):
            ranked = {
                name: [d for d, _ in run.ranked_list(topic)]
                for name, run in stored.items()
                if run.ranked_list(topic)
            }
            for docid, prov in strategies.depth_k_pool(ranked, k).items():
                reference[(topic.qid, docid)] = set(prov)
        assert reference == expected

        # Every item is selected with the required judgements; the estimate counts the same items.
        assert not PoolItem.objects.filter(pool=pool, selected=False).exists()
        assert pool_reads.estimate_pool(pool=pool)["items"] == len(expected)

        # The statistics agree with the pure functions on the same pool.
        check_statistics(pool, expected)


def check_statistics(pool: Pool, expected: dict[Key, set[tuple[str, int]]]) -> None:
    provenance: dict[str, dict[str, list[tuple[str, int]]]] = {}
    for (qid, docid), prov in expected.items():
        provenance.setdefault(qid, {})[docid] = sorted(prov)
    contributed = strategies.pool_contributions(provenance)
    run_names = sorted(PoolRun.objects.filter(pool=pool).values_list("run__name", flat=True))
    for name in run_names:
        contributed.setdefault(name, set())
    unique = strategies.unique_contributions(contributed)
    overlap = strategies.overlap_jaccard(contributed)

    result = stats.pool_statistics(pool)
    assert [(r.run, r.contributed, r.unique) for r in result.runs] == [
        (name, len(contributed[name]), len(unique[name])) for name in run_names
    ]
    assert result.overlap_runs == run_names
    for i, a in enumerate(run_names):
        for j, b in enumerate(run_names):
            assert result.overlap_rows()[i][j] == pytest.approx(overlap[a][b])
    per_topic = {t.qid: t.items for t in result.topics}
    assert per_topic == {
        qid: sum(1 for q, _ in expected if q == qid) for qid in sorted(segment_qids(pool.segment))
    }
    assert result.items == len(expected)
    assert result.judgements_required == len(expected) * pool.judgements_per_item


# ------------------------------------------------------------------------------ incremental: property


@HYPOTHESIS
@given(campaign=campaigns(min_runs=2), judged_seed=st.integers(0, 1000))
def test_it_adds_a_run_incrementally_as_if_built_from_scratch(campaign: Any, judged_seed: int) -> None:
    runs, k, segment = campaign
    with rolled_back(), tempfile.TemporaryDirectory() as tmp:
        collection = new_collection()
        stored = list(import_runs(collection, runs, Path(tmp)).values())
        incremental = pool_build.create_pool(
            name=f"p{next(_names)}", collection=collection, runs=stored[:-1], depth=k, segment=segment
        )
        pool_build.build_pool(pool=incremental)
        incremental.refresh_from_db()
        before = dict(PoolItem.objects.filter(pool=incremental).values_list("pk", "blind_key").order_by("pk"))
        judged = None
        if before:
            judged = random.Random(judged_seed).choice(sorted(before))
            PoolItem.objects.filter(pk=judged).update(num_judgements=1)

        summary = pool_build.add_runs(pool=incremental, runs=stored[-1:])

        scratch = pool_build.create_pool(
            name=f"p{next(_names)}", collection=collection, runs=stored, depth=k, segment=segment
        )
        pool_build.build_pool(pool=scratch)
        assert stored_pool(incremental) == stored_pool(scratch)
        assert stored_pool(scratch) == expected_pool(runs, k, segment_qids(segment))
        assert summary.items_added == PoolItem.objects.filter(pool=scratch).count() - len(before)
        # Nothing already pooled changed: same rows, same blind order, the judged one still judged.
        after = dict(PoolItem.objects.filter(pool=incremental, pk__in=before).values_list("pk", "blind_key"))
        assert after == before
        if judged is not None:
            assert PoolItem.objects.get(pk=judged).num_judgements == 1


# ---------------------------------------------------------------------------------- fixed examples


@pytest.fixture
def collection(db: None, manager: Any) -> Collection:
    return make_collection(topics=("q1", "q2"), managers=[manager])


@pytest.fixture
def two_runs(collection: Collection) -> list[Run]:
    return [
        make_run(collection=collection, name="alpha",
                 lists={"q1": ["d001", "d002", "d003", "d004"], "q2": ["d010", "d011", "d012"]}),
        make_run(collection=collection, name="beta",
                 lists={"q1": ["d003", "d005", "d001", "d006"], "q2": ["d013", "d010"]}),
    ]  # fmt: skip


def build(collection: Collection, runs: list[Run], *, depth: int = 3, **options: Any) -> Pool:
    pool = pool_build.create_pool(
        name=f"p{next(_names)}", collection=collection, runs=runs, depth=depth, **options
    )
    pool.managers.set(every_manager())
    pool_build.build_pool(pool=pool)
    pool.refresh_from_db()
    return pool


def test_it_keeps_the_rank_of_every_run_that_pooled_a_document(
    collection: Collection, two_runs: list[Run]
) -> None:
    pool = build(collection, two_runs, depth=3)
    assert stored_pool(pool) == {
        ("q1", "d001"): {("alpha", 1), ("beta", 3)},
        ("q1", "d002"): {("alpha", 2)},
        ("q1", "d003"): {("alpha", 3), ("beta", 1)},
        ("q1", "d005"): {("beta", 2)},
        ("q2", "d010"): {("alpha", 1), ("beta", 2)},
        ("q2", "d011"): {("alpha", 2)},
        ("q2", "d012"): {("alpha", 3)},
        ("q2", "d013"): {("beta", 1)},
    }
    assert pool.status == Pool.Status.BUILT and pool.built_at is not None


def test_it_removes_a_run_keeping_judged_items_and_shared_ones(
    collection: Collection, two_runs: list[Run]
) -> None:
    pool = build(collection, two_runs, depth=4)
    judged = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d002")  # alpha only
    PoolItem.objects.filter(pk=judged.pk).update(num_judgements=1)

    summary = pool_build.remove_run(pool=pool, run=two_runs[0])

    assert summary.items_removed == 3  # q1/d004, q2/d011, q2/d012: alpha's alone, unjudged
    assert stored_pool(pool) == {
        ("q1", "d001"): {("beta", 3)},
        ("q1", "d002"): set(),  # judged: stays, without provenance
        ("q1", "d003"): {("beta", 1)},
        ("q1", "d005"): {("beta", 2)},
        ("q1", "d006"): {("beta", 4)},
        ("q2", "d010"): {("beta", 2)},
        ("q2", "d013"): {("beta", 1)},
    }
    assert PoolItem.objects.get(pk=judged.pk).num_judgements == 1
    assert list(PoolRun.objects.filter(pool=pool).values_list("run__name", flat=True)) == ["beta"]


def test_it_counts_only_items_as_removed_not_their_skipped_leases(
    collection: Collection, two_runs: list[Run], rater: Any
) -> None:
    from django.utils import timezone

    from judgements.models import Assignment

    pool = build(collection, two_runs, depth=4)
    alone = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d004")  # alpha only
    Assignment.objects.create(item=alone, pool=pool, rater=rater, state="skipped", expires_at=timezone.now())

    summary = pool_build.remove_run(pool=pool, run=two_runs[0])

    assert summary.items_removed == 4  # q1/d002, q1/d004, q2/d011, q2/d012 (the lease is not an item)
    assert not PoolItem.objects.filter(pk=alone.pk).exists()


def test_removing_a_run_also_drops_unjudged_items_an_earlier_deletion_left_without_provenance(
    collection: Collection, two_runs: list[Run]
) -> None:
    pool = build(collection, two_runs, depth=4)
    alpha_only = set(
        PoolItem.objects.filter(pool=pool).exclude(provenance__run=two_runs[1]).values_list("pk", flat=True)
    )
    # A run deleted before `deletion.delete_run` took it out of its pools first: alpha's items stayed in
    # the pool, without provenance (the model's delete alone still does that).
    two_runs[0].delete()
    assert PoolItem.objects.filter(pk__in=alpha_only).count() == len(alpha_only) == 4

    summary = pool_build.remove_run(pool=pool, run=two_runs[1])

    assert summary.items_removed == 10  # beta's 6 and the 4 alpha left, none judged
    assert not PoolItem.objects.filter(pool=pool).exists()


def test_removing_a_run_probes_the_pools_items_instead_of_joining_every_pools_provenance(
    collection: Collection, two_runs: list[Run]
) -> None:
    require_services()
    pool = build(collection, two_runs, depth=4)
    with CaptureQueriesContext(connection) as queries:
        pool_build.remove_run(pool=pool, run=two_runs[0])
    (orphans,) = [q["sql"] for q in queries if "NOT EXISTS" in q["sql"] or "IS NULL" in q["sql"]]
    with connection.cursor() as cursor:
        # On these few rows a sequential scan of provenance can cost less than its index, by the table's
        # statistics of the moment (it failed so now and then): plan as for a large pool, where the probe
        # of the key is what the fence keeps.
        cursor.execute("SET enable_seqscan = off")
        try:
            cursor.execute(f"EXPLAIN {orphans}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("RESET enable_seqscan")
    assert "Anti Join" not in plan and "SubPlan" in plan and "pooling_provenance_pkey" in plan


def test_a_build_counts_its_topics_by_one_index_probe_per_topic(
    collection: Collection, two_runs: list[Run]
) -> None:
    """The summary's topic count steps from topic to topic in the item index instead of reading every
    item of the pool (a depth-100 pool of 50 runs has 160,000)."""
    require_services()
    pool = pool_build.create_pool(name="probed", collection=collection, runs=two_runs, depth=4)
    with CaptureQueriesContext(connection) as queries:
        summary = pool_build.build_pool(pool=pool)
    items = PoolItem.objects.filter(pool=pool).count()
    assert (summary.topics, items) == (2, 10)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {queries[-1]['sql']}")
        plan = cursor.fetchone()[0]

    def item_rows(node: dict[str, Any]) -> int:
        read = node.get("Relation Name") == "pooling_poolitem"
        own = node["Actual Rows"] * node["Actual Loops"] if read else 0
        return own + sum(item_rows(child) for child in node.get("Plans", ()))

    assert item_rows(plan[0]["Plan"]) <= summary.topics + 1 < items


def test_it_rebuilds_harmlessly(collection: Collection, two_runs: list[Run]) -> None:
    pool = build(collection, two_runs, depth=3)
    items = dict(PoolItem.objects.filter(pool=pool).values_list("pk", "blind_key"))
    provenance = set(Provenance.objects.filter(item__pool=pool).values_list("item_id", "run_id", "rank"))
    PoolItem.objects.filter(pk=min(items)).update(num_judgements=2)

    summary = pool_build.build_pool(pool=pool)

    assert (summary.items_added, summary.provenance_added) == (0, 0)
    assert dict(PoolItem.objects.filter(pool=pool).values_list("pk", "blind_key")) == items
    assert (
        set(Provenance.objects.filter(item__pool=pool).values_list("item_id", "run_id", "rank")) == provenance
    )
    assert PoolItem.objects.get(pk=min(items)).num_judgements == 2


def test_it_builds_through_the_task_recording_the_job(collection: Collection, two_runs: list[Run]) -> None:
    pool = pool_build.create_pool(name="tasked", collection=collection, runs=two_runs, depth=3)
    job = Job.objects.create(kind=Job.Kind.BUILD_POOL, collection=collection, params={"pool": pool.pk})

    tasks.build_pool(job.pk)
    tasks.build_pool(job.pk)  # a second delivery of the same task does nothing

    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.progress == 1.0
    assert job.counts["items_added"] == 8 and job.counts["topics"] == 2
    assert PoolItem.objects.filter(pool=pool).count() == 8
    pool.refresh_from_db()
    assert pool.status == Pool.Status.BUILT


def test_it_fails_the_job_of_a_pool_without_runs(collection: Collection, two_runs: list[Run]) -> None:
    pool = pool_build.create_pool(name="empty", collection=collection, runs=two_runs[:1], depth=3)
    PoolRun.objects.filter(pool=pool).delete()
    job = Job.objects.create(kind=Job.Kind.BUILD_POOL, collection=collection, params={"pool": pool.pk})
    tasks.build_pool(job.pk)
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert job.errors == ["pool 'empty' has no runs"]


def test_it_adds_runs_to_an_unbuilt_pool_without_items(collection: Collection, two_runs: list[Run]) -> None:
    pool = pool_build.create_pool(name="draft", collection=collection, runs=two_runs[:1], depth=3)
    summary = pool_build.add_runs(pool=pool, runs=two_runs[1:])
    assert summary.items_added == 0 and not PoolItem.objects.filter(pool=pool).exists()
    pool_build.build_pool(pool=pool)
    assert stored_pool(pool) == stored_pool(build(collection, two_runs, depth=3))


def test_adding_runs_to_a_built_pool_is_a_build_its_page_dates(
    collection: Collection, two_runs: list[Run]
) -> None:
    """`built_at` moves when runs are added to a built pool (its page said the first build's time after
    the add-runs job had changed its items); adding a run it has already moves nothing."""
    pool = build(collection, two_runs[:1])
    first = pool.built_at
    assert first is not None
    pool_build.add_runs(pool=pool, runs=two_runs[1:])
    pool.refresh_from_db()
    assert pool.built_at is not None and pool.built_at > first
    again = pool.built_at
    pool_build.add_runs(pool=pool, runs=two_runs[1:])
    pool.refresh_from_db()
    assert pool.built_at == again


def test_it_refuses_a_run_of_another_collection(collection: Collection, two_runs: list[Run]) -> None:
    pool = build(collection, two_runs[:1])
    other = make_collection()
    stranger = make_run(collection=other, name="stranger", lists={"q1": ["d001"]})
    with pytest.raises(pooling_errors.PoolError, match="stranger"):
        pool_build.add_runs(pool=pool, runs=[stranger])
    with pytest.raises(pooling_errors.PoolError, match="stranger"):
        pool_build.create_pool(name="mixed", collection=collection, runs=[*two_runs, stranger])


def test_it_draws_the_double_judged_fraction_reproducibly(collection: Collection) -> None:
    docs = [f"d{i:03d}" for i in range(20)]
    run = make_run(collection=collection, name="long", lists={"q1": docs, "q2": docs[::-1]})
    pool = build(collection, [run], depth=20, judgements_per_item=3, double_judge_fraction=0.5)
    required = list(PoolItem.objects.filter(pool=pool).values_list("required_judgements", flat=True))
    assert set(required) == {1, 3}
    assert 5 <= required.count(3) <= 35
    again = build(collection, [run], depth=20, judgements_per_item=3, double_judge_fraction=1.0)
    assert set(PoolItem.objects.filter(pool=again).values_list("required_judgements", flat=True)) == {3}


# ------------------------------------------------------------------------------------------- export


def export(pool: Pool) -> str:
    out = io.StringIO()
    pool_reads.export_pool(pool=pool, out=out)
    return out.getvalue()


def test_it_exports_sorted_lines_with_sorted_run_names(db: None) -> None:
    collection = make_collection(topics=("q1", "q10", "q2"))
    Document.objects.bulk_create(Document(collection=collection, docid=d) for d in ("D9", "a1", "b"))
    runs = [
        make_run(
            collection=collection, name="zz", lists={"q2": ["b", "d001"], "q10": ["a1"], "q1": ["d002"]}
        ),
        make_run(collection=collection, name="Ab", lists={"q2": ["D9", "b"], "q1": ["d002", "d001"]}),
        make_run(collection=collection, name="mm", lists={"q10": ["a1", "D9"], "q2": ["b"]}),
    ]
    pool = build(collection, runs, depth=2)
    assert export(pool) == (
        "q1\td001\tAb\n"
        "q1\td002\tAb,zz\n"
        "q10\tD9\tmm\n"
        "q10\ta1\tmm,zz\n"
        "q2\tD9\tAb\n"
        "q2\tb\tAb,mm,zz\n"
        "q2\td001\tzz\n"
    )


def test_it_exports_a_kept_judged_item_without_runs(collection: Collection, two_runs: list[Run]) -> None:
    pool = build(collection, two_runs, depth=2)
    PoolItem.objects.filter(pool=pool, topic__qid="q1", document__docid="d002").update(num_judgements=1)
    pool_build.remove_run(pool=pool, run=two_runs[0])
    lines = export(pool).splitlines()
    assert lines == ["q1\td002\t", "q1\td003\tbeta", "q1\td005\tbeta", "q2\td010\tbeta", "q2\td013\tbeta"]


# ----------------------------------------------------------------------------------------- adaptive


def adaptive_campaign(collection: Collection) -> tuple[list[Run], dict[str, dict[str, int]]]:
    runs = [
        make_run(collection=collection, name="good",
                 lists={"q1": ["d001", "d002", "d003", "d004"], "q2": ["d010", "d011", "d012"]}),
        make_run(collection=collection, name="poor",
                 lists={"q1": ["d005", "d006", "d001", "d007"], "q2": ["d013", "d014", "d010"]}),
        make_run(collection=collection, name="mixed",
                 lists={"q1": ["d006", "d002", "d008"], "q2": ["d011", "d015", "d016"]}),
    ]  # fmt: skip
    qrels = {"q1": {"d001": 2, "d002": 1, "d003": 1, "d006": 0}, "q2": {"d010": 1, "d011": 3, "d015": 1}}
    return runs, qrels


@pytest.mark.parametrize("strategy", ["mtf", "bandit-maxmean", "bandit-thompson"])
def test_it_selects_adaptive_items_as_the_chooser_does_within_the_budget(
    collection: Collection, strategy: str
) -> None:
    runs, qrels = adaptive_campaign(collection)
    pool = build(collection, runs, depth=3, strategy=strategy, budget=9, seed=7)
    assert PoolItem.objects.filter(pool=pool).count() == 13  # 6 + 7 candidates
    assert not PoolItem.objects.filter(pool=pool, selected=True).exists()

    order: list[Key] = []
    for topic in Topic.objects.filter(collection=collection).order_by("qid"):
        outcomes: dict[str, int | None] = {}
        while (item := adaptive.select_next(pool=pool, topic=topic, outcomes=outcomes)) is not None:
            docid = item.document.docid
            order.append((topic.qid, docid))
            outcomes[docid] = qrels[topic.qid].get(docid, 0)
            assert item.selected and item.selected_order == len(outcomes)

    ranked = {
        qid: {run.name: [d for d, _ in run.ranked_list(Topic.objects.get(collection=collection, qid=qid))]
              for run in runs}
        for qid in ("q1", "q2")
    }  # fmt: skip
    assert order == strategies.simulate(strategy, ranked, qrels, budget=9, depth=3, seed=7)
    shares = strategies.allocate_budget(9, {"q1": 6, "q2": 7})
    assert [sum(1 for q, _ in order if q == qid) for qid in ("q1", "q2")] == [shares["q1"], shares["q2"]]
    assert PoolItem.objects.filter(pool=pool, selected=True).count() == 9


def test_it_counts_the_budget_for_adaptive_pools(collection: Collection) -> None:
    runs, _ = adaptive_campaign(collection)
    pool = build(
        collection, runs, depth=3, strategy="mtf", budget=9, judgements_per_item=2, price_per_judgement=1.5
    )
    result = stats.pool_statistics(pool)
    assert (result.items, result.selected, result.judged) == (13, 0, 0)
    assert result.judgements_required == 18  # budget 9 x 2 judgements
    assert result.cost == 27.0
    capped = build(collection, runs, depth=3, strategy="mtf", budget=100)
    assert stats.pool_statistics(capped).judgements_required == 13  # no more than the candidates
    assert pool_reads.estimate_pool(pool=capped)["items"] == 13


# --------------------------------------------------------------------------------------- statistics


def test_it_counts_judged_items_per_topic_and_the_cost(collection: Collection, two_runs: list[Run]) -> None:
    pool = build(collection, two_runs, depth=3, judgements_per_item=2, price_per_judgement=0.75)
    items = PoolItem.objects.filter(pool=pool)
    items.filter(topic__qid="q1", document__docid__in=["d001", "d002"]).update(num_judgements=2)
    items.filter(topic__qid="q1", document__docid="d003").update(num_judgements=1)  # not yet enough
    items.filter(topic__qid="q2", document__docid="d010").update(num_judgements=3)

    result = stats.pool_statistics(pool)

    assert [(t.qid, t.items, t.selected, t.judged) for t in result.topics] == [
        ("q1", 4, 4, 2),
        ("q2", 4, 4, 1),
    ]
    assert (result.items, result.selected, result.judged) == (8, 8, 3)
    assert result.judgements_required == 16
    assert result.judgements_done == 8
    assert result.cost == 12.0
    assert stats.pool_progress([pool])[pool.pk] == {"runs": 2, "items": 8, "selected": 8, "judged": 3}


def test_it_computes_statistics_in_a_few_queries(
    collection: Collection, two_runs: list[Run], django_assert_max_num_queries: Any
) -> None:
    pool = build(collection, two_runs, depth=4)
    with django_assert_max_num_queries(8):
        stats.pool_statistics(pool)


def test_it_lists_a_topic_without_items_and_a_run_without_contributions(collection: Collection) -> None:
    Topic.objects.create(collection=collection, qid="q3", query="q3")
    runs = [
        make_run(collection=collection, name="one", lists={"q1": ["d001", "d002"]}),
        make_run(collection=collection, name="two", lists={"q1": ["d001"], "q2": ["d004"]}),
        make_run(collection=collection, name="three", lists={"q2": ["d004", "d005"]}),
    ]
    pool = build(collection, runs, depth=1, segment="")
    result = stats.pool_statistics(pool)
    assert [(t.qid, t.items) for t in result.topics] == [("q1", 1), ("q2", 1), ("q3", 0)]
    assert [(r.run, r.contributed, r.unique) for r in result.runs] == [
        ("one", 1, 0),
        ("three", 1, 0),
        ("two", 2, 0),
    ]
    assert result.overlap_rows() == [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.5, 0.5, 1.0]]


# ---------------------------------------------------------------------------------------------- API


PERSONAS = ["anonymous", "rater", "outsider", "manager", "admin_user"]


def persona(request: Any, name: str) -> Any:
    return None if name == "anonymous" else request.getfixturevalue(name)


@pytest.fixture
def built(collection: Collection, two_runs: list[Run]) -> Pool:
    make_run(collection=collection, name="gamma.v2", lists={"q1": ["d007", "d001"], "q2": ["d010"]})
    return build(collection, two_runs, depth=3)


def endpoint_calls(pool: Pool) -> list[tuple[str, str, dict[str, Any]]]:
    base = f"/api/pools/{pool.name}/"
    return [
        ("get", "/api/pools/", {}),
        ("post", "/api/pools/", {"name": "fresh", "collection": pool.collection.name, "runs": ["alpha"]}),
        ("get", base, {}),
        ("post", f"{base}build/", {}),
        ("post", f"{base}runs/", {"runs": ["gamma.v2"]}),
        ("delete", f"{base}runs/beta/", {}),
        ("get", f"{base}statistics/", {}),
        ("get", f"{base}export/", {}),
    ]


@pytest.mark.parametrize("who", PERSONAS)
def test_it_lets_only_managers_and_admins_use_the_pool_api(
    request: Any, who: str, built: Pool, django_capture_on_commit_callbacks: Any
) -> None:
    client = client_for(persona(request, who))
    allowed = who in ("manager", "admin_user")
    for method, url, data in endpoint_calls(built):
        with django_capture_on_commit_callbacks(execute=True):
            response = getattr(client, method)(url, data, format="json")
        if allowed:
            assert response.status_code in (200, 201, 202), (method, url, response.content)
        else:
            assert response.status_code in (401, 403), (method, url, response.status_code)
    if not allowed:
        assert not Pool.objects.filter(name="fresh").exists()
        assert PoolRun.objects.filter(pool=built).count() == 2
        assert not Job.objects.exists()


def test_it_creates_a_pool_through_the_api_with_its_estimate(
    manager: Any, collection: Collection, two_runs: list[Run]
) -> None:
    response = client_for(manager).post(
        "/api/pools/",
        {
            "name": "campaign",
            "collection": collection.name,
            "runs": ["beta", "alpha"],
            "depth": 3,
            "judgements_per_item": 2,
            "price_per_judgement": "0.50",
            "seed": 5,
            "segment": "head",
            "description": "first",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["runs"] == ["alpha", "beta"]
    assert body["status"] == "draft"
    # q2 is the head topic of the factory collection: alpha's d010 d011 d012 and beta's d013 d010.
    assert body["estimate"] == {"candidates": 4, "items": 4, "judgements": 8, "cost": 4.0}
    pool = Pool.objects.get(name="campaign")
    assert (pool.depth, pool.judgements_per_item, pool.seed, pool.segment) == (3, 2, 5, "head")
    assert float(pool.price_per_judgement) == 0.5
    assert not PoolItem.objects.filter(pool=pool).exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"runs": ["alpha", "nope"]}, "runs"),
        ({"runs": []}, "runs"),
        ({"strategy": "mtf"}, "budget"),
        ({"strategy": "random"}, "strategy"),
        ({"depth": 0}, "depth"),
        ({"collection": "missing"}, "collection"),
        ({"segment": "nowhere"}, "segment"),
        ({"name": "not a slug"}, "name"),
        ({"judgements_per_item": 0}, "judgements_per_item"),
        ({"double_judge_fraction": 1.5}, "double_judge_fraction"),
    ],
)
def test_it_refuses_bad_pool_settings_naming_the_field(
    manager: Any, collection: Collection, two_runs: list[Run], change: dict[str, Any], field: str
) -> None:
    data = {"name": "campaign", "collection": collection.name, "runs": ["alpha"], **change}
    response = client_for(manager).post("/api/pools/", data, format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not Pool.objects.filter(name="campaign").exists()


def test_it_refuses_a_pool_name_already_taken(manager: Any, built: Pool) -> None:
    data = {"name": built.name, "collection": built.collection.name, "runs": ["alpha"]}
    response = client_for(manager).post("/api/pools/", data, format="json")
    assert response.status_code == 400 and "name" in response.json()


def test_it_lists_pools_with_progress(manager: Any, built: Pool) -> None:
    PoolItem.objects.filter(pool=built, topic__qid="q1").update(num_judgements=1)
    body = client_for(manager).get("/api/pools/").json()
    (entry,) = body["results"]
    assert entry["name"] == built.name
    assert entry["progress"] == {"runs": 2, "items": 8, "selected": 8, "judged": 4}
    assert entry["status"] == "built"


def test_it_builds_through_the_api_as_a_job(
    manager: Any, collection: Collection, two_runs: list[Run], django_capture_on_commit_callbacks: Any
) -> None:
    pool = pool_build.create_pool(
        name="later", collection=collection, runs=two_runs, depth=3, created_by=manager
    )
    client = client_for(manager)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post("/api/pools/later/build/")
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.kind, job.status, job.params["pool"]) == ("build_pool", "queued", pool.pk)
    assert not PoolItem.objects.filter(pool=pool).exists()  # nothing before the commit

    again = client.post("/api/pools/later/build/")
    assert again.status_code == 409 and again.json()["job"]["id"] == job.pk

    for callback in callbacks:
        callback()
    job.refresh_from_db()
    assert job.status == "done"
    assert PoolItem.objects.filter(pool=pool).count() == 8
    assert client.get(f"/api/jobs/{job.pk}/").json()["progress"] == 1.0
    assert client.get("/api/pools/later/").json()["build_job"] == job.pk


def test_it_adds_and_removes_runs_through_the_api(manager: Any, built: Pool) -> None:
    client = client_for(manager)
    judged = PoolItem.objects.get(pool=built, topic__qid="q1", document__docid="d002")
    PoolItem.objects.filter(pk=judged.pk).update(num_judgements=1)

    added = client.post(f"/api/pools/{built.name}/runs/", {"runs": ["gamma.v2"]}, format="json")
    assert added.status_code == 200, added.content
    assert added.json()["items_added"] == 1  # q1/d007; d001 and d010 are pooled already
    assert added.json()["runs"] == ["alpha", "beta", "gamma.v2"]

    removed = client.delete(f"/api/pools/{built.name}/runs/gamma.v2/")
    assert removed.status_code == 200
    assert removed.json()["items_removed"] == 1

    removed = client.delete(f"/api/pools/{built.name}/runs/alpha/")
    assert removed.json()["items_removed"] == 2  # q2/d011, q2/d012; the judged q1/d002 stays
    assert PoolItem.objects.filter(pk=judged.pk).exists()

    assert client.delete(f"/api/pools/{built.name}/runs/alpha/").status_code == 404
    refused = client.post(f"/api/pools/{built.name}/runs/", {"runs": ["nope"]}, format="json")
    assert refused.status_code == 400 and "runs" in refused.json()
    assert client.post("/api/pools/missing/runs/", {"runs": ["alpha"]}, format="json").status_code == 404


def test_it_serves_statistics_and_the_export(manager: Any, built: Pool) -> None:
    client = client_for(manager)
    body = client.get(f"/api/pools/{built.name}/statistics/").json()
    assert body == {**stats.pool_statistics(built).as_dict(), "pool_bias_url": None}
    assert body["overlap"]["alpha"]["beta"] == pytest.approx(3 / 8)  # q1 d001 d003, q2 d010 of 8 items
    assert [r["run"] for r in body["runs"]] == ["alpha", "beta"]

    response = client.get(f"/api/pools/{built.name}/export/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == export(built)
    plain = client.get(f"/api/pools/{built.name}/export/", HTTP_ACCEPT="text/plain")
    assert plain.status_code == 200 and plain.content.decode() == export(built)
    assert client.get("/api/pools/missing/export/").status_code == 404


def test_it_counts_items_per_topic_with_an_aggregate(built: Pool) -> None:
    by_sql = {t.qid: t.items for t in stats.topic_counts(built)}
    by_orm = dict(
        PoolItem.objects.filter(pool=built)
        .values("topic__qid")
        .annotate(n=Count("id"))
        .values_list("topic__qid", "n")
    )
    assert by_sql == by_orm == {"q1": 4, "q2": 4}


def test_it_builds_the_factory_pool(db: None) -> None:
    pool = make_pool(depth=2)
    assert PoolItem.objects.filter(pool=pool).count() == 7


def test_the_overlap_of_a_pool_not_built_yet_is_the_runs_real_top_k_overlap(db):
    pool = make_pool(build=False, name="unbuilt")
    # alpha top-5: q1 d001-d004, q2 d010-d012; beta: q1 d003 d005 d001 d006, q2 d013 d010: 3 shared of 10
    before = stats.pool_statistics(pool)
    assert before.overlap_runs == ["alpha", "beta"]
    assert before.overlap_rows() == [[1.0, pytest.approx(0.3)], [pytest.approx(0.3), 1.0]]
    pool_build.build_pool(pool=pool)
    pool.refresh_from_db()
    assert stats.pool_statistics(pool).overlap == before.overlap  # the build contributes exactly those


def test_adding_runs_finds_each_run_rows_item_by_its_key_whatever_the_statistics_say(
    collection: Collection, two_runs: list[Run]
) -> None:
    """A pool built after the statistics were taken is "one item" to the planner: the provenance of added
    runs was a join planned on that, a loop over every item of the pool each scanning the runs (33 s to add
    one run to a 160,000-item pool; a first build of more than BUILD_RUNS runs did the same in its second
    statement). Each run row now probes the item key once, so the run rows are read once."""
    require_services()
    build(collection, two_runs, depth=4)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE pooling_poolitem")  # statistics that know the first pool only
    pool = build(collection, two_runs, depth=4)
    gamma = make_run(
        collection=collection, name="gamma", lists={"q1": ["d007", "d001", "d008"], "q2": ["d014", "d010"]}
    )
    plans: list[Any] = []

    def explain(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if sql.lstrip().startswith("INSERT INTO pooling_provenance"):
            raw = context["cursor"].cursor  # the driver's cursor: not through this wrapper again
            raw.execute("SAVEPOINT probe_plan")
            raw.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
            plans.append(raw.fetchone()[0][0]["Plan"])
            raw.execute("ROLLBACK TO SAVEPOINT probe_plan")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explain):
        summary = pool_build.add_runs(pool=pool, runs=[gamma])

    def run_row_loops(node: dict[str, Any]) -> list[int]:
        reads_runs = str(node.get("Relation Name", "")).startswith("pooling_runrow")
        own = [node["Actual Loops"]] if reads_runs else []
        return own + [n for child in node.get("Plans", ()) for n in run_row_loops(child)]

    (plan,) = plans
    assert run_row_loops(plan) and set(run_row_loops(plan)) == {1}, plan
    assert (summary.items_added, summary.provenance_added) == (3, 5)
    assert stored_pool(pool)[("q1", "d001")] == {("alpha", 1), ("beta", 3), ("gamma", 2)}


def test_the_pool_options_are_the_pools_columns_with_their_defaults(two_runs: list[Run]) -> None:
    """`PoolOptions` is the one list of a new pool's options: each is the `Pool` column of its name with
    that column's default, a pool created without them stores those defaults, and an option it does not
    list is refused rather than dropped."""
    from dataclasses import asdict, fields

    from django.db.models.fields import NOT_PROVIDED

    for option in fields(pool_build.PoolOptions):
        column = Pool._meta.get_field(option.name)
        default = column.default if column.default is not NOT_PROVIDED else (None if column.null else "")  # type: ignore[union-attr]  # a column, not a relation
        assert option.default == default, option.name
    collection = two_runs[0].collection
    pool = pool_build.create_pool(name="defaults", collection=collection, runs=two_runs)
    assert {name: getattr(pool, name) for name in pool_build.PoolOptions.names()} == asdict(
        pool_build.PoolOptions()
    )
    with pytest.raises(TypeError, match="colour"):
        pool_build.create_pool(name="colourful", collection=collection, runs=two_runs, colour="red")
    assert not Pool.objects.filter(name="colourful").exists()
    # a value its column cannot hold is a problem of that option
    problems = pool_build.pool_problems(collection=collection, seed=2**40)
    assert problems["seed"]

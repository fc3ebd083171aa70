"""Pools: create one, set its judgement plan, build it (depth-k union and provenance), add or remove runs,
follow a run whose rows were replaced.

Over 400 lines on purpose: building, adding, removing and replacing runs share the depth-k statements, the
provenance rule, the removal of unjudged items left without provenance and the topic count, and are kept
in one module so that each stays written once."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from pooling.errors import PoolError
from pooling.imports import Progress
from pooling.job_summary import JobSummary
from pooling.models import (
    Collection,
    Document,
    Pool,
    PoolItem,
    PoolRun,
    Provenance,
    Run,
    RunRow,
    Topic,
    column_problems,
)
from pooling.pg_settings import local_settings
from pooling.pool_text import text_problems


@dataclass
class BuildSummary(JobSummary):
    items_added: int = 0
    provenance_added: int = 0
    items_removed: int = 0
    topics: int = 0

    def line(self) -> str:
        return (
            f"pool: {self.items_added} items added, {self.provenance_added} provenance rows, "
            f"{self.items_removed} removed, {self.topics} topics, {self.seconds:.1f} s"
        )


#: The column limits of a pool's relevance level (a small integer) and price (8 digits, 2 decimals).
MAX_RELEVANCE_LEVEL = 32_767
MAX_PRICE = 1_000_000


@dataclass(frozen=True)
class PoolOptions:
    """How a pool chooses and judges its items: the options a new pool takes beside its name, collection
    and runs, with their defaults, each stored in the `Pool` column of its name. The one list of them:
    `pool_problems` checks them, `create_pool` stores them, and the page's form, the API's serializer, the
    admin and `create_pool` (the command) hand them on by these names."""

    strategy: str = "depth"
    depth: int = 10
    budget: int | None = None
    seed: int = 0
    judgements_per_item: int = 1
    double_judge_fraction: float | None = None
    segment: str = ""
    relevance_level: int = 1
    price_per_judgement: float | Decimal = 1

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def given(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The options among `values` (a form's or a command's), leaving out those given as None (their
        default then holds, or None is the default)."""
        return {name: values[name] for name in cls.names() if values.get(name) is not None}


def pool_problems(
    *, collection: Collection, name: str | None = None, runs: list[Run] | None = None, **options: Any
) -> dict[str, list[str]]:
    """What is wrong with a pool's options (`PoolOptions`, by keyword), by option: the one statement of
    the rules a new pool obeys.

    `create_pool` refuses on any; the page's form and the API's serializer call it too, to name the field
    (an option not given yet — `name` or `runs` still being typed — is not checked)."""
    o = PoolOptions(**options)
    problems: dict[str, list[str]] = {}

    def problem(field: str, message: str) -> None:
        problems.setdefault(field, []).append(message)

    if name is not None:
        for message in Pool.name_problems(name):
            problem("name", message)
        if taken := Pool.name_taken_problem(name, exists=f"a pool named {name!r} already exists"):
            problem("name", taken)
    if o.strategy not in Pool.Strategy.values:
        problem("strategy", f"unknown strategy {o.strategy!r}; choose from {', '.join(Pool.Strategy.values)}")
    if o.depth < 1:
        problem("depth", "depth must be at least 1")
    if o.strategy != Pool.Strategy.DEPTH and not o.budget:
        problem("budget", f"strategy {o.strategy!r} needs a judgement budget")
    if o.strategy == Pool.Strategy.DEPTH and o.budget:  # it would be stored and never used: say so
        problem("budget", "a depth-k pool judges every pooled item: a budget is for the adaptive strategies")
    if o.budget is not None and o.budget < 1:
        problem("budget", "budget must be at least 1")
    if o.judgements_per_item < 1:
        problem("judgements_per_item", "judgements per item must be at least 1")
    if o.double_judge_fraction is not None and not 0.0 <= o.double_judge_fraction <= 1.0:
        problem("double_judge_fraction", "double_judge_fraction must be between 0 and 1")
    if not 1 <= o.relevance_level <= MAX_RELEVANCE_LEVEL:
        problem("relevance_level", f"relevance level must be between 1 and {MAX_RELEVANCE_LEVEL:,}")
    if not 0 <= o.price_per_judgement < MAX_PRICE:
        problem("price_per_judgement", f"price per judgement must be at least 0 and under {MAX_PRICE:,}")
    if runs is not None:
        if not runs:
            problem("runs", "a pool needs at least one run")
        foreign = [run.name for run in runs if run.collection_id != collection.id]
        if foreign:
            problem("runs", f"runs not in collection {collection.name!r}: {', '.join(foreign)}")
    if o.segment and not Topic.objects.filter(collection=collection).in_segment(o.segment):
        problem("segment", f"no topic of collection {collection.name!r} has segment {o.segment!r}")
    for column in ("depth", "budget", "seed", "judgements_per_item"):
        value = getattr(o, column)
        # what its column can hold
        if (
            value is not None
            and column not in problems
            and (messages := column_problems(Pool, column, value))
        ):
            problems[column] = [f"{column.replace('_', ' ')}: {message}" for message in messages]
    return problems


def create_pool(
    *,
    name: str,
    collection: Collection,
    runs: Iterable[Run],
    description: str = "",
    instructions: str = "",
    created_by: Any = None,
    **options: Any,
) -> Pool:
    """Configure a pool (not yet built), with its `PoolOptions` by keyword. Validates every parameter;
    nothing is stored on an error.

    `description` is for managers (it may name runs); raters see `instructions` (both held to
    `pool_text.text_problems`, as an edit of them is). `created_by` becomes
    the pool's first manager (None: only admins manage it until one is added)."""
    runs = list(runs)
    problems = pool_problems(name=name, collection=collection, runs=runs, **options)
    problems.update(text_problems(description=description, instructions=instructions))
    if problems:
        raise PoolError(fields=problems)
    with (
        Pool.creating(
            name, refused=lambda: PoolError(fields=pool_problems(name=name, collection=collection))
        ),
        transaction.atomic(),
    ):
        pool = Pool.objects.create(
            name=name,
            description=description,
            instructions=instructions,
            collection=collection,
            **asdict(PoolOptions(**options)),
        )
        PoolRun.objects.bulk_create(PoolRun(pool=pool, run=run) for run in runs)
        if created_by is not None:
            pool.managers.add(created_by)
    return pool


def _blind_key_sql(pool: Pool) -> tuple[str, list[Any]]:
    """SQL for the keyed hash of a docid (60 bits of MD5(key || docid)), for the blind order."""
    key = f"{settings.BLIND_ORDER_KEY}:{pool.pk}:"
    if connection.vendor == "postgresql":
        return "('x' || substr(md5(%s || d.docid), 1, 15))::bit(60)::bigint", [key]
    connection.ensure_connection()
    connection.connection.create_function("blind_key", 2, _blind_key_python, deterministic=True)
    return "blind_key(%s, d.docid)", [key]


def _blind_key_python(key: str, docid: str) -> int:
    return int(hashlib.md5((key + docid).encode(), usedforsecurity=False).hexdigest()[:15], 16)


def blind_order_id() -> str:
    """A fingerprint of the BLIND_ORDER_KEY in use (16 hex digits of an HMAC: it does not give the key
    away), stored on a pool as `Pool.blind_order_id` when its items are drawn."""
    mac = hmac.new(settings.BLIND_ORDER_KEY.encode(), b"labeling blind order", hashlib.sha256)
    return mac.hexdigest()[:16]


def _keep_one_blind_key(pool: Pool) -> None:
    """Before items are added: if the pool's items were drawn under another BLIND_ORDER_KEY than today's,
    redraw every item's blind key under today's, so that a topic's order never mixes two keys (the new
    items' keys would otherwise interleave at random with the old ones'). Whether an item is double
    judged was drawn once, when it was added, and stays. Called with the pool's row locked."""
    current = blind_order_id()
    if pool.blind_order_id == current:
        return
    if pool.blind_order_id:
        blind_sql, blind_params = _blind_key_sql(pool)
        item, doc = PoolItem._meta.db_table, Document._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {item} SET blind_key = "
                f"(SELECT {blind_sql} FROM {doc} d WHERE d.id = {item}.document_id) WHERE pool_id = %s",
                [*blind_params, pool.pk],
            )
    Pool.objects.filter(pk=pool.pk).update(blind_order_id=current)
    pool.blind_order_id = current


def topic_filter(pool: Pool) -> tuple[str, list[Any]]:
    if not pool.segment:
        return "", []
    ids = [topic.id for topic in pool.topics()]
    return f" AND rr.topic_id IN ({', '.join(['%s'] * len(ids))})", ids


def depth_rows(pool: Pool, run_ids: list[int]) -> tuple[str, list[Any]]:
    """The run rows `pool` pools from the runs `run_ids` (`run_id, topic_id, document_id, rank`): rank at
    most its depth, on its segment's topics; the SQL and its parameters. The one rule of what a pool's
    depth-k lists hold: building and adding runs insert their distinct (topic, document) pairs, the
    estimates count them (`pool_reads`)."""
    runs_sql = ", ".join(["%s"] * len(run_ids))
    topics_sql, topic_ids = topic_filter(pool)
    return (
        f"SELECT rr.run_id, rr.topic_id, rr.document_id, rr.rank FROM {RunRow._meta.db_table} rr "
        f"WHERE rr.run_id IN ({runs_sql}) AND rr.rank <= %s{topics_sql}",
        [*run_ids, pool.depth, *topic_ids],
    )


#: The first build's statement: its sorts and hashes in memory, and no JIT compilation (it cost more than
#: it saved here).
BUILD_SETTINGS = {"work_mem": "64MB", "jit": "off"}


def _add_items(*, pool: Pool, run_ids: list[int]) -> tuple[int, int]:
    """Insert the depth-k union of `run_ids` into the pool, with provenance (every run and rank ≤ k).

    Existing items are kept as they are, so re-running is harmless and adding a run adds only documents
    not yet pooled, plus its provenance on the ones already there. The pool's row is locked first, so two
    builders of one pool take turns (the second finds the first one's items).

    Items are numbered in (topic, document) order and provenance goes in in the order of its key (item,
    run), whichever path writes them:
    - a pool without items yet, on PostgreSQL (every first build): one statement reads the runs' rows of
      rank ≤ k once, inserts the items and, from what that insert returns, their provenance. Nothing can
      conflict, so neither insert needs ON CONFLICT's check per row; with the sorts and hashes in memory
      (work_mem for this transaction) and no JIT compilation (it cost more than it saved here), the
      index maintenance is what remains of the time (benchmarks/pool.py).
    - otherwise (adding runs, a re-run, SQLite): two statements, each with ON CONFLICT DO NOTHING, the
      second joining the run rows to every item of the pool.
    """
    if not run_ids:
        return 0, 0
    item = PoolItem._meta.db_table
    prov = Provenance._meta.db_table
    doc = Document._meta.db_table
    blind_sql, blind_params = _blind_key_sql(pool)
    fraction = pool.double_judge_fraction
    if fraction is None or pool.judgements_per_item == 1:
        required_sql, required_params = "%s", [pool.judgements_per_item]
    else:
        # The blind key is a keyed hash: a pseudo-random, reproducible draw of the double-judged fraction.
        required_sql = "CASE WHEN ((k.bk / 7) %% 1000000) < %s THEN %s ELSE 1 END"
        required_params = [int(fraction * 1_000_000), pool.judgements_per_item]
    # The run rows within depth k, and the item rows of their distinct (topic, document) pairs.
    candidates, candidate_params = depth_rows(pool, run_ids)
    columns = (
        "pool_id, topic_id, document_id, blind_key, required_judgements, num_judgements, "
        "active_leases, gold, selected, added_at"
    )
    item_rows = f"""
        SELECT %s, k.topic_id, k.document_id, k.bk, {required_sql}, 0, 0, false, %s, %s
        FROM (
            SELECT c.topic_id, c.document_id, {blind_sql} AS bk
            FROM (SELECT DISTINCT c.topic_id, c.document_id FROM {{pairs}} c) c
            JOIN {doc} d ON d.id = c.document_id
        ) k
        WHERE true
        ORDER BY k.topic_id, k.document_id"""
    item_params = [pool.pk, *required_params, not pool.adaptive, timezone.now(), *blind_params]
    # NO KEY: builders of the pool take turns, while raters' new leases (which reference it) go on.
    locked = Pool.objects.select_for_update(no_key=True).filter(pk=pool.pk).only("blind_order_id").first()
    pool.blind_order_id = locked.blind_order_id if locked else pool.blind_order_id
    _keep_one_blind_key(pool)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and not PoolItem.objects.filter(pool=pool).exists():
            with local_settings(cursor, BUILD_SETTINGS):
                cursor.execute(
                    f"""
                    WITH candidates AS MATERIALIZED ({candidates}),
                    added AS (
                        INSERT INTO {item} ({columns}) {item_rows.format(pairs="candidates")}
                        RETURNING id, topic_id, document_id
                    ),
                    provenance AS (
                        INSERT INTO {prov} (item_id, run_id, rank)
                        SELECT a.id, c.run_id, c.rank
                        FROM candidates c
                        JOIN added a ON a.topic_id = c.topic_id AND a.document_id = c.document_id
                        ORDER BY a.id, c.run_id
                        RETURNING 1
                    )
                    SELECT (SELECT COUNT(*) FROM added), (SELECT COUNT(*) FROM provenance)
                    """,
                    [*candidate_params, *item_params],
                )  # fmt: skip
                items_added, provenance_added = cursor.fetchone()
            return int(items_added), int(provenance_added)
        cursor.execute(
            f"""
            INSERT INTO {item} ({columns}) {item_rows.format(pairs=f"({candidates})")}
            ON CONFLICT (pool_id, topic_id, document_id) DO NOTHING
            """,
            [*item_params, *candidate_params],
        )  # fmt: skip
        items_added = cursor.rowcount
        # Each run row finds its item by one probe of the item key (pool, topic, document), whatever the
        # planner believes of the pool: a join planned on the statistics of a pool whose items were just
        # written (not analysed yet: "one item") became a loop over every item, each scanning the run
        # (33 s to add one run to a 160,000-item pool, against 0.1 s).
        cursor.execute(
            f"""
            INSERT INTO {prov} (item_id, run_id, rank)
            SELECT (
                SELECT pi.id FROM {item} pi
                WHERE pi.pool_id = %s AND pi.topic_id = c.topic_id AND pi.document_id = c.document_id
            ) AS item_id, c.run_id, c.rank
            FROM ({candidates}) c
            WHERE true
            ORDER BY item_id, c.run_id
            ON CONFLICT (item_id, run_id) DO NOTHING
            """,
            [pool.pk, *candidate_params],
        )  # fmt: skip
        provenance_added = cursor.rowcount
    return max(items_added, 0), max(provenance_added, 0)


def build_pool(*, pool: Pool, progress: Progress | None = None) -> BuildSummary:
    """Build (or complete) the pool from all its runs: set-based SQL, idempotent, atomic.

    Depth pools select every item for judging. Adaptive pools store the depth-k candidates with their
    provenance, unselected: the strategy selects them one by one as judgements arrive (`select_next`).
    """
    started = time.monotonic()
    run_ids = list(pool.pool_runs.values_list("run_id", flat=True))
    if not run_ids:
        raise PoolError(f"pool {pool.name!r} has no runs")
    summary = BuildSummary()
    Pool.objects.filter(pk=pool.pk).update(status=Pool.Status.BUILDING)
    try:
        with transaction.atomic():
            for index, chunk in enumerate(_chunks(run_ids, BUILD_RUNS)):
                items, provenance = _add_items(pool=pool, run_ids=chunk)
                summary.items_added += items
                summary.provenance_added += provenance
                if progress:
                    done = min((index + 1) * BUILD_RUNS, len(run_ids)) / len(run_ids)
                    progress(done, f"{summary.items_added} items")
            pool.status = Pool.Status.BUILT
            pool.built_at = timezone.now()
            pool.save(update_fields=["status", "built_at"])
    except Exception:
        Pool.objects.filter(pk=pool.pk).update(status=Pool.Status.FAILED)
        raise
    summary.topics = topics_with_items(pool)
    if pool.adaptive:  # its items are candidates: the count is not what will be judged
        summary.warnings.append(
            f"an adaptive pool ({pool.get_strategy_display()}): the {summary.items_added:,} items added are "
            f"its depth-{pool.depth} candidates, of which at most {pool.budget or 0:,} (its budget) are "
            "selected for judging, one by one as judgements arrive"
        )
    summary.seconds = time.monotonic() - started
    return summary


def topics_with_items(pool: Pool) -> int:
    """How many topics the pool has items of: one probe of the item index (pool, topic, ...) per topic
    (a recursive CTE stepping from topic to topic), not a read of every item: a depth-100 pool of 50
    runs has 160,000, none of them marked all-visible right after its build commits, so counting them
    visited the table too (55 to 70 ms on benchmarks/pool.py's pool, against 2 ms)."""
    item = PoolItem._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH RECURSIVE t(topic_id) AS (
                SELECT MIN(topic_id) FROM {item} WHERE pool_id = %s
                UNION ALL
                SELECT (SELECT MIN(i.topic_id) FROM {item} i WHERE i.pool_id = %s AND i.topic_id > t.topic_id)
                FROM t WHERE t.topic_id IS NOT NULL
            )
            SELECT COUNT(topic_id) FROM t
            """,
            [pool.pk, pool.pk],
        )  # fmt: skip
        return int(cursor.fetchone()[0])


#: Runs per set-based insert in build_pool: each statement re-joins the items already in, so fewer,
#: larger statements are cheaper (progress is reported after each).
BUILD_RUNS = 50


def _chunks(values: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def add_runs(*, pool: Pool, runs: Iterable[Run], progress: Progress | None = None) -> BuildSummary:
    """Add runs to a pool. A built pool gains only documents not already pooled (and its `built_at` is now);
    nothing judged changes."""
    started = time.monotonic()
    runs = list(runs)
    foreign = [run.name for run in runs if run.collection_id != pool.collection_id]
    if foreign:
        raise PoolError(f"runs not in collection {pool.collection.name!r}: {', '.join(foreign)}")
    summary = BuildSummary()
    with transaction.atomic():
        present = set(pool.pool_runs.values_list("run_id", flat=True))
        new = [run for run in runs if run.id not in present]
        PoolRun.objects.bulk_create(PoolRun(pool=pool, run=run) for run in new)
        if pool.status == Pool.Status.BUILT:
            items, provenance = _add_items(pool=pool, run_ids=[run.id for run in new])
            summary.items_added, summary.provenance_added = items, provenance
            if new:  # the pool was built again, incrementally: its page says when
                pool.built_at = timezone.now()
                pool.save(update_fields=["built_at"])
    if progress:
        progress(1.0, f"{summary.items_added} items added")
    summary.topics = topics_with_items(pool)
    summary.seconds = time.monotonic() - started
    return summary


def remove_run(*, pool: Pool, run: Run) -> BuildSummary:
    """Take a run out of a pool: its provenance goes, and the items only it contributed go too — unless
    they have a judgement (those stay, judged evidence is never thrown away). Deleting the run
    (`deletion.delete_run`) takes it out of every pool this way first."""
    summary = BuildSummary()
    with transaction.atomic():
        PoolRun.objects.filter(pool=pool, run=run).delete()
        _drop_provenance(pool=pool, run=run)
        summary.items_removed = _drop_unjudged_orphans(pool=pool)
    return summary


def run_removed(pool: Pool, run: Run, summary: BuildSummary) -> str:
    """What the page and the command say once `remove_run` took `run` out of `pool`."""
    removed = summary.items_removed
    return (
        f"Run {run.name} taken out of pool {pool.name}: {removed} unjudged item{'s' if removed != 1 else ''} "
        "only it contributed removed; judged items stay."
    )


def refresh_run(*, pool: Pool, run: Run) -> BuildSummary:
    """After `run`'s rows were replaced (`imports.import_run`'s replace): bring a built `pool` that uses it
    to what the new rows give, as `remove_run` and then `add_runs` would, in one step: the run's old
    provenance goes, the depth-k lists of its new rows are added (`_add_items`: new documents become items,
    every item in them gets its provenance), and the unjudged items left without provenance go. An item
    that the old and the new rows both pool is kept as it is (its leases, its blind key, its draw); a
    judged item stays, as in `remove_run`. A pool not built yet reads the new rows when it is."""
    summary = BuildSummary()
    with transaction.atomic():
        locked = Pool.objects.select_for_update(no_key=True).filter(pk=pool.pk).only("status").first()
        if locked is None or locked.status != Pool.Status.BUILT:
            return summary
        _drop_provenance(pool=pool, run=run)
        summary.items_added, summary.provenance_added = _add_items(pool=pool, run_ids=[run.pk])
        summary.items_removed = _drop_unjudged_orphans(pool=pool)
        pool.built_at = timezone.now()
        pool.save(update_fields=["built_at"])
    summary.topics = topics_with_items(pool)
    return summary


def _drop_provenance(*, pool: Pool, run: Run) -> None:
    """Delete `run`'s provenance among `pool`'s items: looked for from the pool's items, so the cost is the
    pool's, not the database's (provenance has no index on the run, see `Provenance`)."""
    Provenance.objects.filter(run=run, item_id__in=PoolItem.objects.filter(pool=pool).values("pk")).delete()


def _drop_unjudged_orphans(*, pool: Pool) -> int:
    """Delete `pool`'s items that no run contributes any more and nobody has judged; return how many.

    An item left without provenance is found by probing the (item, run) key once per unjudged item of the
    pool, where a join would hash the provenance of every pool (2 s on a database of a few large pools).
    The probe is kept a probe on PostgreSQL by `OFFSET 0`, which stops the planner from turning the NOT
    EXISTS into that join. The items are locked (and on PostgreSQL re-checked) so a judgement committing
    meanwhile keeps its item."""
    item = PoolItem._meta.db_table
    prov = Provenance._meta.db_table
    fence = " OFFSET 0" if connection.vendor == "postgresql" else ""
    lock = " FOR UPDATE OF i" if connection.features.has_select_for_update_of else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT i.id FROM {item} i
            WHERE i.pool_id = %s AND i.num_judgements = 0
              AND NOT EXISTS (SELECT 1 FROM {prov} p WHERE p.item_id = i.id{fence}){lock}
            """,
            [pool.pk],
        )  # fmt: skip
        orphans = [row[0] for row in cursor.fetchall()]
    _, deleted = PoolItem.objects.filter(pk__in=orphans).delete()
    # delete() also counts the rows it cascades to (leases...): the items only.
    return deleted.get(PoolItem._meta.label, 0)


@transaction.atomic
def set_judgement_plan(*, pool: Pool, judgements_per_item: int, double_judge_fraction: float | None) -> Pool:
    """Change how many judgements an item needs (`judgements_per_item`) and for which fraction of the
    items (`double_judge_fraction`, the agreement sample; None: every item). Only before the pool is
    built: a built pool's items already carry their required judgements, which raters are working to."""
    locked = Pool.objects.select_for_update().get(pk=pool.pk)
    if locked.status in (Pool.Status.BUILT, Pool.Status.BUILDING):
        raise PoolError(
            f"pool {pool.name!r} is {locked.status}: its items already say how many judgements each needs"
        )
    plan = {"judgements_per_item": judgements_per_item, "double_judge_fraction": double_judge_fraction}
    options = {**{name: getattr(locked, name) for name in PoolOptions.names()}, **plan}
    problems = pool_problems(collection=locked.collection, **options)  # the rules a new pool's plan obeys
    if any(name in problems for name in plan):
        raise PoolError(fields={name: problems[name] for name in plan if name in problems})
    locked.judgements_per_item = judgements_per_item
    locked.double_judge_fraction = double_judge_fraction
    locked.save(update_fields=["judgements_per_item", "double_judge_fraction"])
    pool.judgements_per_item, pool.double_judge_fraction = judgements_per_item, double_judge_fraction
    return locked

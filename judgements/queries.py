"""Read-side questions about a pool's judgements: agreement records and summary, unpooled documents
per run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from django.db import connection, transaction

from judgements.agreement.summary import AgreementSummary
from judgements.models import (
    Adjudication,
    GoldLabel,
    Judgement,
    Judging,
    RaterExclusion,
)
from pooling.models import Pool, PoolItem, PoolRun, Run, Topic
from pooling.page_cache import cache_key, read_through

if TYPE_CHECKING:
    from judgements.agreement import Records, Weights

#: Bumped when a cached page's shape changes, so no page reads a cached value of the old shape.
PAGE_VERSION = 4


def data_stamp(pool: Pool) -> tuple[Any, ...]:
    """What every computed page of a pool depends on: its judgements (latest change and count, so a
    deletion counts too), its adjudications and gold labels, the exclusions of raters, its rubric (whose
    full label set weighs every kappa), the pool's runs and items (a run added or taken out, the items it
    brought), the runs of its collection (one imported, replaced, renamed or deleted: `Run.updated_at`),
    its topics (a segment or text changed by an import: `Topic.updated_at`) and the pool's own settings
    that scores read (relevance level, segment)."""
    with connection.cursor() as cursor:
        cursor.execute(_stamp_sql(), {"pool": pool.pk, "collection": pool.collection_id})
        return tuple(cursor.fetchone())


@cache
def _stamp_sql() -> str:
    """`data_stamp`'s one statement: a row of one-row aggregates (each FROM a derived table of one row), so
    the stamp costs one round trip, not one a table. Every kind of judgement: a model judge's new labels
    change the pages that read them (a report filled by it)."""
    read = (Judgement, Adjudication, GoldLabel, Run, PoolRun, PoolItem, Topic, RaterExclusion, Judging, Pool)
    table = {model.__name__: model._meta.db_table for model in read}
    of_items = f"JOIN {table['PoolItem']} i ON i.id = x.item_id WHERE i.pool_id = %(pool)s"
    parts = [
        f"SELECT MAX(x.updated_at), COUNT(*) FROM {table['Judgement']} x {of_items}",
        f"SELECT MAX(x.decided_at), COUNT(*) FROM {table['Adjudication']} x {of_items}",
        f"SELECT MAX(x.created_at), COUNT(*) FROM {table['GoldLabel']} x {of_items}",
        f"SELECT MAX(updated_at), COUNT(*) FROM {table['Run']} WHERE collection_id = %(collection)s",
        f"SELECT MAX(added_at), COUNT(*) FROM {table['PoolRun']} WHERE pool_id = %(pool)s",
        f"SELECT MAX(id), COUNT(*) FROM {table['PoolItem']} WHERE pool_id = %(pool)s",
        f"SELECT MAX(updated_at), COUNT(*) FROM {table['Topic']} WHERE collection_id = %(collection)s",
        f"SELECT MAX(excluded_at), MAX(restored_at), COUNT(*) FROM {table['RaterExclusion']} "
        "WHERE pool_id = %(pool)s",
        f"SELECT MAX(rubric_id) FROM {table['Judging']} WHERE pool_id = %(pool)s",
        f"SELECT MAX(relevance_level), MAX(segment) FROM {table['Pool']} WHERE id = %(pool)s",
    ]
    return "SELECT * FROM " + ", ".join(f"({part}) s{n}" for n, part in enumerate(parts))


def cached_for_pool(pool: Pool, kind: str, compute: Callable[..., Any], **params: Any) -> Any:
    """`compute(pool=pool, **params)`, recomputed only when the pool's data stamp changed; the one
    freshness rule of every cached manager page (agreement, evaluation report, pool bias, two-stage)."""
    key = cache_key(f"page:{PAGE_VERSION}:{kind}:{pool.pk}", data_stamp(pool), sorted(params.items()))
    return read_through(key, lambda: compute(pool=pool, **params))


def agreement_records(*, pool: Pool) -> Records:
    """Every current judgement of a pool (`release_rows.current_judgements_join`: people's, not those of
    raters excluded from the pool, `exclusions`) as `agreement.Records` of (item, qid, rater username,
    grade or None if unrateable), in (item, rater) order: agreement is measured over the labels a release
    would use. Read as integer columns (`release_rows.integer_rows`), topics and raters by id, their
    names after: a few bytes a judgement (the list of tuples it was took 330 MB and 19 s for a million
    judgements; this, 2 s)."""
    from django.contrib.auth import get_user_model

    from judgements.agreement import Records
    from judgements.release_rows import current_judgements_join, integer_rows
    from pooling.models import Topic

    columns = ["i.id", "i.topic_id", "j.rater_id", "COALESCE(j.grade, 0)",
               "CASE WHEN j.grade IS NULL THEN 1 ELSE 0 END"]  # fmt: skip
    tables = f"""FROM {PoolItem._meta.db_table} i
        {current_judgements_join()}
        WHERE i.pool_id = %(pool)s AND j.id IS NOT NULL"""
    with transaction.atomic():
        rows = integer_rows(columns=columns, tables=tables, params={"pool": pool.pk}, chunk_by="i.topic_id")
    rows = rows[np.lexsort((rows[:, 2], rows[:, 0]))]  # (item, rater) order
    user = get_user_model()
    item = _coded(rows[:, 0])
    topic = _coded(rows[:, 1], Topic.objects, "qid")
    rater = _coded(rows[:, 2], user.objects, user.USERNAME_FIELD)
    return Records.of_codes(item, topic, rater, rows[:, 3], rows[:, 4].astype(bool))


def _coded(ids: np.ndarray, objects: Any = None, name: str = "") -> tuple[np.ndarray, list[Any]]:
    """A column of database ids as codes into its distinct ids, in order; with `objects`, the keys are
    those rows' `name` field instead of the ids."""
    distinct, codes = np.unique(ids, return_inverse=True)
    keys: list[Any] = distinct.tolist()
    if objects is not None:
        name_of = dict(objects.filter(pk__in=keys).values_list("pk", name))
        keys = [name_of[key] for key in keys]
    return codes.astype(np.int64), keys


INTERVAL_WEIGHTS = ("unweighted", "linear", "quadratic")


def interval_weights(value: str | None) -> Weights:
    """The `weights` of a request (`?weights=`: unweighted, linear or quadratic; absent: unweighted) for
    the intervals of `pool_agreement`; ValueError naming the choices otherwise."""
    if value in (None, "", "unweighted"):
        return None
    if value not in INTERVAL_WEIGHTS:
        raise ValueError(f"must be one of {', '.join(INTERVAL_WEIGHTS)}, not {value!r}")
    return cast("Weights", value)


@dataclass(frozen=True)
class PoolAgreement(AgreementSummary):
    """A pool's inter-rater agreement (`pool_agreement`): every figure of `agreement.summary_body` over the
    labels a release would use, the one `sentence` on its noise floor, and how many raters are excluded
    from the pool's releases (whose labels are left out). An undefined figure (a kappa of one grade only,
    an interval with no defined resample) is null."""

    sentence: str
    n_excluded_raters: int


def pool_agreement(
    *, pool: Pool, seed: int = 0, n_bootstrap: int = 1000, weights: Weights = None
) -> dict[str, Any]:
    """The agreement summary of a pool's judgements over its rubric's full label set
    (the weights come from every grade, not only from those that occur); the intervals of each pair and
    topic are those of the kappa `weights` asks for (None: unweighted; "linear", "quadratic"). A
    `PoolAgreement` as a dict."""
    from judgements import agreement
    from judgements.exclusions import excluded_rater_ids

    judging = Judging.objects.select_related("rubric").get(pool=pool)
    summary = agreement.summary_body(
        agreement_records(pool=pool),
        labels=judging.rubric.labels,
        relevance_level=pool.relevance_level,
        seed=seed,
        n_bootstrap=n_bootstrap,
        weights=weights,
    )
    body = PoolAgreement(
        **{field.name: getattr(summary, field.name) for field in fields(summary)},
        sentence=agreement.noise_floor_sentence(summary),
        n_excluded_raters=len(excluded_rater_ids(pool=pool)),
    )
    return asdict(body)


def unpooled_by_run(*, pool: Pool) -> dict[str, dict[str, int]]:
    """For every run of the collection: documents it retrieved for the pool's topics, and how many of
    them were never pooled (no selected item) — the `unpooled` state:
    retrieved, never judged, and never scored as irrelevant.

    The pool's topics are a subquery when the pool has no segment (a list of every topic's id was a
    query, thousands of objects and a parameter each); a segment's are listed (segments are filtered in
    Python, `TopicQuerySet.in_segment`)."""
    from pooling.models import Run, RunRow, Topic
    from pooling.pg_settings import local_settings

    if pool.segment:
        topic_ids: list[Any] = [topic.id for topic in pool.topics()]
        if not topic_ids:
            return {}
        topics, params = ", ".join(["%s"] * len(topic_ids)), topic_ids
    else:
        topics = f"SELECT id FROM {Topic._meta.db_table} WHERE collection_id = %s"
        params = [pool.collection_id]
    sql = f"""
        SELECT r.name, COUNT(*), SUM(CASE WHEN i.id IS NULL THEN 1 ELSE 0 END)
        FROM {RunRow._meta.db_table} rr
        JOIN {Run._meta.db_table} r ON r.id = rr.run_id
        LEFT JOIN {PoolItem._meta.db_table} i
          ON i.pool_id = %s AND i.topic_id = rr.topic_id AND i.document_id = rr.document_id AND i.selected
        WHERE r.collection_id = %s AND rr.topic_id IN ({topics})
        GROUP BY r.name ORDER BY r.name
    """
    # work_mem: its hash join in memory, without batches
    with transaction.atomic(), connection.cursor() as cursor, local_settings(cursor, {"work_mem": "64MB"}):
        cursor.execute(sql, [pool.pk, pool.collection_id, *params])
        rows = cursor.fetchall()
    return {name: {"retrieved": int(n), "unpooled": int(u or 0)} for name, n, u in rows}

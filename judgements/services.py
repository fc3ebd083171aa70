"""Every change of judging state goes through these functions, whoever calls them (views, API, admin,
tasks, commands): rubrics, pool membership, leases, judgements and their revisions, gold, adjudication."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from judgements.models import (
    Adjudication,
    Assignment,
    Facet,
    GoldLabel,
    Grade,
    Judgement,
    JudgementRevision,
    Judging,
    Rubric,
)
from pooling import formats
from pooling import services as pooling_services
from pooling.models import Pool, PoolItem

DEFAULT_GRADES: list[dict[str, Any]] = [
    {"value": 3, "label": "Perfect", "key": "3",
     "description": "Highly relevant: answers the question fully; the document a searcher hoped for."},
    {"value": 2, "label": "Good", "key": "2",
     "description": "Relevant: answers a substantial part of the question, or answers it less directly."},
    {"value": 1, "label": "Marginal", "key": "1",
     "description": "On the topic but barely useful: mentions the subject without answering the question."},
    {"value": 0, "label": "Not relevant", "key": "0",
     "description": "Does not help with the question at all."},
]  # fmt: skip


class JudgingError(pooling_services.Refused):
    """A judging action was refused; nothing changed."""


# ------------------------------------------------------------------------------------------- rubrics


def create_rubric(
    *,
    name: str,
    grades: Sequence[dict[str, Any]] = DEFAULT_GRADES,
    facets: Sequence[dict[str, Any]] = (),
    description: str = "",
    allow_unrateable: bool = True,
    unrateable_key: str = "x",
) -> Rubric:
    """Create version 1 of a rubric (or the next version if the name exists). Grades need distinct
    values and distinct one-character keys; the unrateable key may not clash with a grade key."""
    _check_grades(grades, allow_unrateable=allow_unrateable, unrateable_key=unrateable_key)
    with transaction.atomic():
        latest = Rubric.objects.filter(name=name).order_by("-version").first()
        rubric = Rubric.objects.create(
            name=name,
            version=(latest.version + 1) if latest else 1,
            description=description,
            allow_unrateable=allow_unrateable,
            unrateable_key=unrateable_key,
        )
        Grade.objects.bulk_create(
            Grade(
                rubric=rubric,
                value=int(g["value"]),
                label=str(g["label"]),
                description=str(g.get("description", "")),
                key=str(g["key"]),
            )
            for g in grades
        )
        Facet.objects.bulk_create(
            Facet(
                rubric=rubric,
                name=str(f["name"]),
                label=str(f.get("label", f["name"])),
                choices=list(f.get("choices", [])),
                required=bool(f.get("required", False)),
            )
            for f in facets
        )
    return rubric


def _check_grades(grades: Sequence[dict[str, Any]], *, allow_unrateable: bool, unrateable_key: str) -> None:
    if not grades:
        raise JudgingError("a rubric needs at least one grade")
    values = [g.get("value") for g in grades]
    keys = [str(g.get("key", "")) for g in grades]
    if any(not isinstance(v, int) or isinstance(v, bool) for v in values):
        raise JudgingError("grade values must be integers")
    if any(v < 0 for v in values):
        raise JudgingError("grade values must be 0 or more (negative labels mean 'unjudged' in qrels)")
    if len(set(values)) != len(values):
        raise JudgingError("grade values must be distinct")
    if any(len(k) != 1 for k in keys) or len(set(keys)) != len(keys):
        raise JudgingError("every grade needs its own one-character key")
    if allow_unrateable and unrateable_key in keys:
        raise JudgingError(f"the unrateable key {unrateable_key!r} is also a grade key")
    reserved = {"u", "s", "n"} & set(keys)
    if reserved:
        raise JudgingError(f"keys {sorted(reserved)} are reserved (u revise, s skip, n note)")


def default_rubric() -> Rubric:
    """The four-grade scale of SPEC §5 (3 perfect … 0 not relevant), created on first use."""
    rubric = Rubric.objects.filter(name="relevance-4").order_by("-version").first()
    return rubric or create_rubric(name="relevance-4", description="The classic four-grade relevance scale.")


def update_rubric(
    *,
    rubric: Rubric,
    grades: Sequence[dict[str, Any]] | None = None,
    facets: Sequence[dict[str, Any]] | None = None,
    description: str | None = None,
    allow_unrateable: bool | None = None,
) -> Rubric:
    """Change a rubric. One that has judgements is never edited in place: a new version is made (pools
    keep the version their judgements were made under until moved on purpose). Returns the rubric to use."""
    new_grades = (
        grades if grades is not None else list(rubric.grades.values("value", "label", "description", "key"))
    )
    new_facets = (
        facets if facets is not None else list(rubric.facets.values("name", "label", "choices", "required"))
    )
    allow = rubric.allow_unrateable if allow_unrateable is None else allow_unrateable
    _check_grades(new_grades, allow_unrateable=allow, unrateable_key=rubric.unrateable_key)
    if rubric.has_judgements():
        return create_rubric(
            name=rubric.name,
            grades=new_grades,
            facets=new_facets,
            description=rubric.description if description is None else description,
            allow_unrateable=allow,
            unrateable_key=rubric.unrateable_key,
        )
    with transaction.atomic():
        if description is not None:
            rubric.description = description
        rubric.allow_unrateable = allow
        rubric.save()
        if grades is not None:
            rubric.grades.all().delete()
            Grade.objects.bulk_create(
                Grade(rubric=rubric, value=int(g["value"]), label=g["label"],
                      description=g.get("description", ""), key=g["key"])
                for g in grades
            )  # fmt: skip
        if facets is not None:
            rubric.facets.all().delete()
            Facet.objects.bulk_create(
                Facet(rubric=rubric, name=f["name"], label=f.get("label", f["name"]),
                      choices=list(f.get("choices", [])), required=bool(f.get("required", False)))
                for f in facets
            )  # fmt: skip
    return rubric


# ------------------------------------------------------------------------------------ pool membership


def setup_judging(
    *,
    pool: Pool,
    rubric: Rubric | None = None,
    raters: Iterable[AbstractBaseUser] = (),
    lease_minutes: int | None = None,
    adjudication_gap: int | None = None,
) -> Judging:
    """Give a pool its rubric and raters (idempotent: updates an existing setup, adds raters)."""
    from django.conf import settings

    judging, _ = Judging.objects.get_or_create(
        pool=pool,
        defaults={
            "rubric": rubric or default_rubric(),
            "lease_minutes": lease_minutes or settings.LEASE_MINUTES,
            "adjudication_gap": 2 if adjudication_gap is None else adjudication_gap,
        },
    )
    changed = False
    if rubric is not None and judging.rubric_id != rubric.id:
        judging.rubric = rubric
        changed = True
    if lease_minutes is not None and judging.lease_minutes != lease_minutes:
        judging.lease_minutes = lease_minutes
        changed = True
    if adjudication_gap is not None and judging.adjudication_gap != adjudication_gap:
        judging.adjudication_gap = adjudication_gap
        changed = True
    if changed:
        judging.save()
    raters = list(raters)
    if raters:
        judging.raters.add(*raters)
    return judging


def remove_rater(*, pool: Pool, rater: AbstractBaseUser) -> None:
    """Take a rater off a pool: their live leases are released, their judgements stay."""
    with transaction.atomic():
        judging = Judging.objects.get(pool=pool)
        judging.raters.remove(rater)
        for assignment in Assignment.objects.filter(
            item__pool=pool, rater=rater, state=Assignment.State.ACTIVE
        ).select_for_update():
            _release(assignment, Assignment.State.EXPIRED)


# -------------------------------------------------------------------------------------------- leases


_NEXT_SQL = """
SELECT pi.id, (SELECT a.id FROM judgements_assignment a WHERE a.item_id = pi.id AND a.rater_id = %(rater)s)
FROM pooling_poolitem pi
WHERE pi.pool_id = %(pool)s AND pi.selected {topic_clause}
  AND (pi.gold OR pi.num_judgements + pi.active_leases < pi.required_judgements)
  AND NOT EXISTS (SELECT 1 FROM judgements_assignment a
                  WHERE a.item_id = pi.id AND a.rater_id = %(rater)s AND a.state <> 'expired')
  AND NOT EXISTS (SELECT 1 FROM judgements_judgement j WHERE j.item_id = pi.id AND j.rater_id = %(rater)s)
ORDER BY pi.topic_id, pi.blind_key
LIMIT 1 {lock}
"""


# Membership (no row if not a rater), the lease length, the live lease and the topic of the last lease.
_RATER_SQL = """
SELECT j.lease_minutes,
  (SELECT a.id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
   WHERE pi.pool_id = %(pool)s AND a.rater_id = %(rater)s AND a.state = %(active)s AND a.expires_at > %(now)s
   ORDER BY a.leased_at DESC LIMIT 1),
  (SELECT pi.topic_id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
   WHERE pi.pool_id = %(pool)s AND a.rater_id = %(rater)s ORDER BY a.leased_at DESC LIMIT 1)
FROM judgements_judging j JOIN judgements_judging_raters r ON r.judging_id = j.id
WHERE j.pool_id = %(pool)s AND r.user_id = %(rater)s
"""


def _find_open_item(
    *, pool: Pool, rater: AbstractBaseUser, topic_id: int | None
) -> tuple[int, int | None] | None:
    """(item id, id of this rater's expired assignment on it or None), the item locked on PostgreSQL."""
    lock = "FOR UPDATE OF pi SKIP LOCKED" if connection.vendor == "postgresql" else ""
    params = {"pool": pool.pk, "rater": rater.pk, "topic": topic_id}
    with connection.cursor() as cursor:
        if topic_id is not None:
            cursor.execute(_NEXT_SQL.format(topic_clause="AND pi.topic_id = %(topic)s", lock=lock), params)
            row = cursor.fetchone()
            if row:
                return int(row[0]), row[1]
        cursor.execute(_NEXT_SQL.format(topic_clause="", lock=lock), params)
        row = cursor.fetchone()
    return (int(row[0]), row[1]) if row else None


def current_assignment(*, pool: Pool, rater: AbstractBaseUser) -> Assignment | None:
    """The rater's live lease in this pool, if any (a rater resumes where they were)."""
    return (
        Assignment.objects.select_related("item__topic", "item__document")
        .filter(item__pool=pool, rater=rater, state=Assignment.State.ACTIVE, expires_at__gt=timezone.now())
        .order_by("-leased_at")
        .first()
    )


def next_item(*, pool: Pool, rater: AbstractBaseUser) -> Assignment | None:
    """Lease the rater an item that still needs judgements and that they have not judged, preferring the
    topic they are on. Concurrency-safe: on PostgreSQL the item row is locked with SKIP LOCKED and its
    lease counter is re-checked, so no item is ever leased beyond what it still needs. Returns None when
    nothing is left for this rater."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    params = {"pool": pool.pk, "rater": rater.pk, "active": Assignment.State.ACTIVE.value, "now": now}
    with connection.cursor() as cursor:
        cursor.execute(_RATER_SQL, params)
        row = cursor.fetchone()
    if row is None:
        raise JudgingError("you are not a rater of this pool")
    lease_minutes, live_id, last = row
    if live_id is not None:
        live = current_assignment(pool=pool, rater=rater)
        if live is not None:
            return live
    for _attempt in range(3):
        try:
            with transaction.atomic():
                assignment = _lease(pool=pool, rater=rater, topic_id=last, lease_minutes=lease_minutes)
                if assignment is None and pool.adaptive and _select_adaptive(pool=pool):
                    assignment = _lease(pool=pool, rater=rater, topic_id=last, lease_minutes=lease_minutes)
                return assignment
        except IntegrityError:
            continue  # the same rater raced themself (two tabs): try again
    return None


def _lease(
    *, pool: Pool, rater: AbstractBaseUser, topic_id: int | None, lease_minutes: int | None = None
) -> Assignment | None:
    found = _find_open_item(pool=pool, rater=rater, topic_id=topic_id)
    if found is None:
        return None
    item_id, expired_id = found
    now = timezone.now()
    if lease_minutes is None:
        lease_minutes = Judging.objects.filter(pool=pool).values_list("lease_minutes", flat=True).first()
    expires_at = now + timedelta(minutes=lease_minutes or 10)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE pooling_poolitem SET active_leases = active_leases + 1 WHERE id = %s", [item_id]
        )
    assignment: Assignment | None = None
    if expired_id is not None and Assignment.objects.filter(
        pk=expired_id, state=Assignment.State.EXPIRED
    ).update(state=Assignment.State.ACTIVE, leased_at=now, expires_at=expires_at):
        assignment = Assignment.objects.get(pk=expired_id)
    if assignment is None:  # no row of this rater on the item (a racing tab's new row: IntegrityError)
        assignment = Assignment.objects.create(
            item_id=item_id, rater=rater, leased_at=now, expires_at=expires_at
        )
    assignment.item = PoolItem.objects.select_related("topic", "document").get(pk=item_id)
    return assignment


def _select_adaptive(*, pool: Pool) -> bool:
    """Ask the pool's strategy for more items, for every topic whose selected items are all judged."""
    selected_any = False
    for topic in pool.topics():
        items = PoolItem.objects.filter(pool=pool, topic=topic, selected=True)
        if items.filter(num_judgements__lt=F("required_judgements")).exists():
            continue
        outcomes = consensus_outcomes(items)
        if pooling_services.select_next(pool=pool, topic=topic, outcomes=outcomes) is not None:
            selected_any = True
    return selected_any


def consensus_outcomes(items: Any) -> dict[str, int | None]:
    """docid → the item's consensus under the `median` policy (the lower median; None if most said
    unrateable), for the adaptive strategies."""
    from judgements import aggregation

    votes: dict[str, list[tuple[int, int | None]]] = {}
    rows = Judgement.objects.filter(item__in=items).values_list("item__document__docid", "rater_id", "grade")
    for docid, rater_id, grade in rows:
        votes.setdefault(docid, []).append((rater_id, grade))
    return {docid: aggregation.aggregate(v, policy="median").grade for docid, v in votes.items()}


def _release(assignment: Assignment, state: str) -> None:
    if assignment.state == Assignment.State.ACTIVE:
        PoolItem.objects.filter(pk=assignment.item_id).update(active_leases=F("active_leases") - 1)
    assignment.state = state
    assignment.save(update_fields=["state"])


def skip_item(*, assignment: Assignment) -> None:
    """Give an item back: the lease ends and this rater is not offered it again."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.state != Assignment.State.ACTIVE:
            raise JudgingError("this item is no longer leased to you")
        _release(locked, Assignment.State.SKIPPED)


def sweep_expired_leases(*, now: Any = None) -> int:
    """Expire leases past their time and give their items back. Returns how many expired."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = list(
            Assignment.objects.select_for_update(skip_locked=True)
            .filter(state=Assignment.State.ACTIVE, expires_at__lte=now)
            .values_list("id", "item_id")
        )
        if not expired:
            return 0
        Assignment.objects.filter(pk__in=[pk for pk, _ in expired]).update(state=Assignment.State.EXPIRED)
        per_item = Counter(item_id for _, item_id in expired)
        by_count: dict[int, list[int]] = {}
        for item_id, count in per_item.items():
            by_count.setdefault(count, []).append(item_id)
        for count, item_ids in by_count.items():
            PoolItem.objects.filter(pk__in=item_ids).update(active_leases=F("active_leases") - count)
    return len(expired)


# ------------------------------------------------------------------------- the rater API's hot path
#
# `next_lease` and `submit_lease` are `next_item` and `submit_judgement` for the rater API's two hot
# endpoints, answering in plain values (what the API shows) instead of model objects. On PostgreSQL each is
# ONE statement, prepared on the connection (`_one_row`), with no BEGIN/COMMIT of its own: the statement is
# its own transaction. Whatever that statement does not cover (nothing open, so adaptive selection or
# "nothing left"; a rater's own race between two tabs; an expired lease; facets or unrateable; any refusal)
# goes to the general functions above, which decide it as they always have: the statement changes nothing
# in those cases. Elsewhere (SQLite) they are thin wrappers of the general functions.


# The pages of the judging tables the hot statements read, returned as their last column. A generic plan
# that PostgreSQL cached for a prepared statement is not re-planned as the tables grow (only when they are
# analyzed), and one made while they were nearly empty scans them whole: a campaign starts with no
# assignment and no judgement. So the statements' text carries the size class (log2 of the pages of each
# table) they were planned at: when a table has doubled, the next request uses a new text, planned afresh.
_PAGES_SQL = """pg_relation_size('judgements_assignment') / 8192,
  pg_relation_size('judgements_judgement') / 8192"""
_plan_class = {"size": "0 0"}


@dataclass(slots=True)
class Lease:
    """A leased item as its rater sees it (blind: no run, rank, score, other rater's grade, consensus, nor
    whether the item is gold): the assignment, its topic, the raw document, the pool's rubric."""

    assignment: int
    state: str
    leased_at: Any
    expires_at: Any
    pool: str
    qid: str
    query: str
    description: str
    narrative: str
    docid: str
    title: str
    url: str
    text: str
    rubric: dict[str, Any]


@dataclass(slots=True)
class Judged:
    """A judgement just recorded by `submit_lease`, with what the rater API answers about it."""

    id: int
    pool: str
    qid: str
    query: str
    docid: str
    title: str
    grade: int
    note: str
    seconds: float
    created_at: Any


# The lease in one statement: membership, the rater's live lease (returned as is) or an open item —
# on the topic of their last lease first, then any — locked with SKIP LOCKED, their expired assignment on
# it reactivated or a new one inserted, the item's lease counter raised; and the answer's topic, document
# and rubric. The same rules as `_RATER_SQL`, `_NEXT_SQL` and `_lease`. The two item searches are CTEs:
# PostgreSQL runs the second only when the first found nothing. A data-modifying CTE sees the snapshot of
# the statement, but the row it updates is the newest version (READ COMMITTED re-reads a row a concurrent
# lease changed, and `FOR UPDATE` re-checked the counter condition on it), so the counters stay exact.
# A lease lost in a crash is harmless: nothing of it survives (the item is free at once), the rater's
# judgement of it answers 404 and they ask again; and a later judgement's synchronous commit flushes the
# lease with it. So when the statement is its own transaction (an API request: autocommit), it commits
# asynchronously (`synchronous_commit` off for that transaction only). Inside a caller's transaction it
# leaves the setting alone: that transaction may go on to store a judgement, acknowledged as durable.
_OPEN_ITEM_SQL = """
  SELECT pi.id, (SELECT a.id FROM judgements_assignment a WHERE a.item_id = pi.id AND a.rater_id = %(rater)s)
         AS expired_id
  FROM pooling_poolitem pi
  WHERE pi.pool_id = (SELECT pool_id FROM rater) {topic_clause} AND (SELECT live_id FROM rater) IS NULL
    AND pi.selected AND (pi.gold OR pi.num_judgements + pi.active_leases < pi.required_judgements)
    AND NOT EXISTS (SELECT 1 FROM judgements_assignment a
                    WHERE a.item_id = pi.id AND a.rater_id = %(rater)s AND a.state <> 'expired')
    AND NOT EXISTS (SELECT 1 FROM judgements_judgement j WHERE j.item_id = pi.id AND j.rater_id = %(rater)s)
    {first_clause}
  ORDER BY pi.topic_id, pi.blind_key
  LIMIT 1 FOR UPDATE OF pi SKIP LOCKED
"""
# (The pool and the topic come as values of the rater CTE, not as a join with it: so PostgreSQL walks the
# item index (pool, topic, blind_key) in order and stops at the first open item, instead of sorting the
# whole pool for every lease that changes topic.)
_ON_TOPIC = "AND pi.topic_id = (SELECT last_topic FROM rater)"
_IF_NONE_ON_TOPIC = "AND NOT EXISTS (SELECT 1 FROM on_topic)"
_LEASE_SQL = f"""
WITH rater AS (
  SELECT p.id AS pool_id, p.name AS pool_name, j.rubric_id,
    %(now)s::timestamptz + make_interval(mins => COALESCE(NULLIF(j.lease_minutes, 0), 10)) AS expires_at,
    (SELECT a.id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
     WHERE pi.pool_id = p.id AND a.rater_id = %(rater)s AND a.state = 'active' AND a.expires_at > %(now)s
     ORDER BY a.leased_at DESC LIMIT 1) AS live_id,
    (SELECT pi.topic_id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
     WHERE pi.pool_id = p.id AND a.rater_id = %(rater)s ORDER BY a.leased_at DESC LIMIT 1) AS last_topic
  FROM pooling_pool p
  JOIN judgements_judging j ON j.pool_id = p.id
  JOIN judgements_judging_raters r ON r.judging_id = j.id AND r.user_id = %(rater)s
  WHERE p.name = %(pool)s
),
on_topic AS ({_OPEN_ITEM_SQL.format(topic_clause=_ON_TOPIC, first_clause="")}),
any_topic AS ({_OPEN_ITEM_SQL.format(topic_clause="", first_clause=_IF_NONE_ON_TOPIC)}),
picked AS (SELECT * FROM on_topic UNION ALL SELECT * FROM any_topic),
reactivated AS (
  UPDATE judgements_assignment a SET state = 'active', leased_at = %(now)s, expires_at = rater.expires_at
  FROM picked, rater
  WHERE a.id = picked.expired_id AND a.state = 'expired'
  RETURNING a.id, a.item_id, a.state, a.leased_at, a.expires_at
),
inserted AS (
  INSERT INTO judgements_assignment (item_id, rater_id, state, leased_at, expires_at)
  SELECT picked.id, %(rater)s, 'active', %(now)s, rater.expires_at
  FROM picked, rater WHERE picked.expired_id IS NULL
  RETURNING id, item_id, state, leased_at, expires_at
),
leased AS (SELECT * FROM reactivated UNION ALL SELECT * FROM inserted),
counted AS (
  UPDATE pooling_poolitem SET active_leases = active_leases + 1 WHERE id IN (SELECT item_id FROM leased)
  RETURNING set_config('synchronous_commit',
    CASE WHEN %(own_transaction)s THEN 'off' ELSE current_setting('synchronous_commit') END, true)
),
chosen AS (
  SELECT a.id, a.item_id, a.state, a.leased_at, a.expires_at
  FROM rater JOIN judgements_assignment a ON a.id = rater.live_id
  UNION ALL SELECT * FROM leased
)
SELECT c.id, c.state, c.leased_at, c.expires_at, rater.pool_name,
  t.qid, t.query, t.description, t.narrative, d.docid, d.title, d.url, d.text,
  (SELECT count(*) FROM counted),
  ru.id, ru.name, ru.version, ru.description, ru.allow_unrateable, ru.unrateable_key,
  (SELECT json_agg(json_build_array(g.value, g.label, g.description, g.key) ORDER BY g.value DESC)
   FROM judgements_grade g WHERE g.rubric_id = ru.id),
  (SELECT json_agg(json_build_array(f.name, f.label, f.choices, f.required) ORDER BY f.id)
   FROM judgements_facet f WHERE f.rubric_id = ru.id),
  {_PAGES_SQL}
FROM rater
JOIN judgements_rubric ru ON ru.id = rater.rubric_id
LEFT JOIN chosen c ON true
LEFT JOIN pooling_poolitem pi ON pi.id = c.item_id
LEFT JOIN pooling_topic t ON t.id = pi.topic_id
LEFT JOIN pooling_document d ON d.id = pi.document_id
"""


def _one_row(sql: str, params: dict[str, Any], *, sized: bool = True) -> tuple[Any, ...] | None:
    """Run one hot-path statement on PostgreSQL and return its first row (without the pages columns).

    psycopg 3 with server-side binding, prepared on this connection on first use (Django's own cursors
    bind on the client and never prepare): PostgreSQL plans it once per connection and size class (see
    `_PAGES_SQL`) instead of on every request. Errors are Django's (IntegrityError …), as from its
    cursors. Inside an atomic block it runs in a savepoint, so that a failed statement leaves the
    transaction usable; in autocommit (a request of the API) the statement is its own transaction.
    `sized=False` for a statement without the pages columns (its plan does not depend on the growth of
    the judging tables)."""
    text = f"{sql}-- size class {_plan_class['size']}\n" if sized else sql
    if connection.in_atomic_block:
        with transaction.atomic():
            row = _one_row_now(text, params)
    else:
        row = _one_row_now(text, params)
    if row is None or not sized:
        return row
    _plan_class["size"] = f"{int(row[-2]).bit_length()} {int(row[-1]).bit_length()}"
    return tuple(row[:-2])


def _one_row_now(sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    import psycopg

    connection.ensure_connection()
    connection.validate_no_broken_transaction()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        row = cursor.fetchone()
    if connection.queries_logged:  # (the test client's CaptureQueriesContext, DEBUG)
        connection.queries_log.append({"sql": sql, "time": "0.000"})
    return row


def _rubric_values(rubric_row: Sequence[Any]) -> dict[str, Any]:
    """The rubric as the rater API shows it (`RubricForRaterSerializer`'s values) from `_LEASE_SQL`."""
    rubric_id, name, version, description, allow_unrateable, key, grades, facets = rubric_row
    return {
        "id": rubric_id,
        "name": name,
        "version": version,
        "description": description,
        "allow_unrateable": allow_unrateable,
        "unrateable_key": key,
        # The types the serializer's fields give (a facet's choices come from JSON, whatever was stored).
        "grades": [
            {"value": int(value), "label": str(label), "description": str(text), "key": str(grade_key)}
            for value, label, text, grade_key in grades or ()
        ],
        "facets": [
            {"name": str(facet), "label": str(label),
             "choices": [None if c is None else str(c) for c in choices or ()], "required": bool(required)}
            for facet, label, choices, required in facets or ()
        ],
    }  # fmt: skip


def rubric_values(rubric: Rubric) -> dict[str, Any]:
    """`_rubric_values` read through the ORM (the general path)."""
    grades = [
        tuple(g) for g in rubric.grades.order_by("-value").values_list("value", "label", "description", "key")
    ]
    facets = [
        tuple(f) for f in rubric.facets.order_by("id").values_list("name", "label", "choices", "required")
    ]
    return _rubric_values(
        (rubric.id, rubric.name, rubric.version, rubric.description, rubric.allow_unrateable,
         rubric.unrateable_key, grades, facets)
    )  # fmt: skip


# The columns of `_LEASE_SQL` before the lease counter and the rubric, in order.
_LEASE_FIELDS = ("assignment", "state", "leased_at", "expires_at", "pool", "qid", "query", "description",
                 "narrative", "docid", "title", "url", "text")  # fmt: skip


def _lease_of(assignment: Assignment, pool: Pool) -> Lease:
    item = assignment.item
    topic, document = item.topic, item.document
    return Lease(
        assignment=assignment.pk,
        state=assignment.state,
        leased_at=assignment.leased_at,
        expires_at=assignment.expires_at,
        pool=pool.name,
        qid=topic.qid,
        query=topic.query,
        description=topic.description,
        narrative=topic.narrative,
        docid=document.docid,
        title=document.title,
        url=document.url,
        text=document.text,
        rubric=rubric_values(pool.judging.rubric),
    )


def next_lease(*, pool: str, rater: AbstractBaseUser, single_statement: bool | None = None) -> Lease | None:
    """`next_item` for the pool named `pool`, as a `Lease`: the rater's live lease, else a new one, else
    None when nothing is left for them. Raises JudgingError when they are not a rater of such a pool.
    On PostgreSQL one statement (`_LEASE_SQL`) does it whenever there is a live lease or an open item
    (`single_statement=False` forces the general path, for comparisons)."""
    if single_statement is None:
        single_statement = connection.vendor == "postgresql"
    if single_statement:
        params = {"pool": pool, "rater": rater.pk, "now": timezone.now(),
                  "own_transaction": not connection.in_atomic_block}  # fmt: skip
        try:
            row = _one_row(_LEASE_SQL, params)
        except IntegrityError:
            row = ()  # the same rater raced themself (two tabs): the general path tries again
        if row is None:
            raise JudgingError("you are not a rater of this pool")
        if row and row[0] is not None:
            fields = dict(zip(_LEASE_FIELDS, row[:13], strict=True))
            return Lease(**fields, rubric=_rubric_values(row[14:]))
    found = Pool.objects.filter(name=pool).select_related("judging__rubric").first()
    if found is None:
        raise JudgingError("you are not a rater of this pool")
    assignment = next_item(pool=found, rater=rater)
    return None if assignment is None else _lease_of(assignment, found)


# A plain grade (no facets asked or given, not unrateable) on the rater's active lease, in one statement:
# the same checks as `_SUBMIT_SQL` (the assignment is theirs and locked, they still rate the pool, the
# item is not judged by them yet, the grade is on a rubric without facets); when they pass, the judgement,
# the item's counters and the assignment's state, and the answer's fields. Committed synchronously: a
# judgement answered 201 is durable.
_SUBMIT_ONE_SQL = f"""
WITH a AS (
  SELECT a.id, a.state, a.item_id, a.rater_id, j.rubric_id, p.name AS pool_name, pi.topic_id,
    pi.document_id,
    EXISTS (SELECT 1 FROM judgements_judging_raters r WHERE r.judging_id = j.id AND r.user_id = a.rater_id)
      AS member,
    EXISTS (SELECT 1 FROM judgements_judgement x WHERE x.item_id = a.item_id AND x.rater_id = a.rater_id)
      AS judged,
    EXISTS (SELECT 1 FROM judgements_facet f WHERE f.rubric_id = j.rubric_id) AS has_facets,
    EXISTS (SELECT 1 FROM judgements_grade g WHERE g.rubric_id = j.rubric_id AND g.value = %(grade)s)
      AS grade_ok
  FROM judgements_assignment a
  JOIN pooling_poolitem pi ON pi.id = a.item_id
  JOIN pooling_pool p ON p.id = pi.pool_id
  JOIN judgements_judging j ON j.pool_id = pi.pool_id
  WHERE a.id = %(assignment)s AND a.rater_id = %(rater)s
  FOR UPDATE OF a
),
ok AS (SELECT * FROM a WHERE state = 'active' AND member AND NOT judged AND NOT has_facets AND grade_ok),
judged AS (
  INSERT INTO judgements_judgement
    (item_id, rater_id, rubric_id, grade, unrateable, facets, note, seconds, imported, created_at, updated_at)
  SELECT item_id, rater_id, rubric_id, %(grade)s, false, '{{}}', %(note)s, %(seconds)s, false, %(now)s,
    %(now)s
  FROM ok
  RETURNING id, item_id
),
counted AS (
  UPDATE pooling_poolitem SET num_judgements = num_judgements + 1, active_leases = active_leases - 1
  WHERE id IN (SELECT item_id FROM judged)
),
done AS (
  UPDATE judgements_assignment SET state = 'done'
  WHERE id IN (SELECT ok.id FROM ok JOIN judged ON judged.item_id = ok.item_id)
)
SELECT judged.id, a.pool_name, t.qid, t.query, d.docid, d.title, {_PAGES_SQL}
FROM a
LEFT JOIN judged ON true
JOIN pooling_topic t ON t.id = a.topic_id
JOIN pooling_document d ON d.id = a.document_id
"""


def submit_lease(
    *,
    assignment: int,
    rater: AbstractBaseUser,
    grade: int,
    note: str = "",
    seconds: float = 0.0,
    single_statement: bool | None = None,
) -> Judged | None:
    """`submit_judgement` of a plain grade for the rater API's hot path: the rater's own assignment, in a
    pool they still rate, active, not judged, a grade of a rubric that asks no facets. Returns the
    judgement, or None when any of that is not so — then nothing changed, and the general path (the API's
    `get_assignment_to_judge` and `submit_judgement`) decides and answers. On PostgreSQL one statement
    (`_SUBMIT_ONE_SQL`; `single_statement=False` forces the general path, for comparisons)."""
    if single_statement is None:
        single_statement = connection.vendor == "postgresql"
    note = note.strip()
    seconds = max(0.0, min(float(seconds), 24 * 3600.0))
    now = timezone.now()
    if not -(2**31) <= grade < 2**31:
        return None
    if single_statement:
        params = {"assignment": assignment, "rater": rater.pk, "grade": grade, "note": note,
                  "seconds": seconds, "now": now}  # fmt: skip
        try:
            row = _one_row(_SUBMIT_ONE_SQL, params)
        except IntegrityError:
            return None
        if row is None or row[0] is None:
            return None
        judged_id, pool_name, qid, query, docid, title = row
        return Judged(id=judged_id, pool=pool_name, qid=qid, query=query, docid=docid, title=title,
                      grade=grade, note=note, seconds=seconds, created_at=now)  # fmt: skip
    found = (
        Assignment.objects.filter(pk=assignment, rater=rater, item__pool__judging__raters=rater)
        .select_related("item__pool", "item__topic", "item__document")
        .first()
    )
    if found is None or found.state != Assignment.State.ACTIVE:
        return None
    try:
        judgement = submit_judgement(assignment=found, grade=grade, note=note, seconds=seconds)
    except (JudgingError, IntegrityError, Judging.DoesNotExist):
        return None
    item = found.item
    return Judged(
        id=judgement.pk, pool=item.pool.name, qid=item.topic.qid, query=item.topic.query,
        docid=item.document.docid, title=item.document.title, grade=grade, note=judgement.note,
        seconds=judgement.seconds, created_at=judgement.created_at,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------- judgements


def _validate_label(
    rubric: Rubric,
    grade: int | None,
    unrateable: bool,
    facets: dict[str, Any] | None,
    *,
    require_facets: bool = True,
) -> dict[str, Any]:
    if unrateable:
        if not rubric.allow_unrateable:
            raise JudgingError("this rubric has no 'unrateable' choice")
        if grade is not None:
            raise JudgingError("an unrateable judgement has no grade")
    else:
        if grade is None:
            raise JudgingError("choose a grade")
        if grade not in rubric.labels:
            raise JudgingError(f"grade {grade} is not on the rubric ({', '.join(map(str, rubric.labels))})")
    facets = dict(facets or {})
    known = {facet.name: facet for facet in rubric.facets.all()}
    unknown = sorted(set(facets) - set(known))
    if unknown:
        raise JudgingError(f"unknown facets: {', '.join(unknown)}")
    for name, facet in known.items():
        value = facets.get(name)
        if value in (None, ""):
            if facet.required and not unrateable and require_facets:
                raise JudgingError(f"facet {facet.label!r} is required")
            facets.pop(name, None)
        elif facet.choices and value not in facet.choices:
            raise JudgingError(f"{value!r} is not a choice of facet {facet.label!r}")
    return facets


# The rater's hot path writes its SQL by hand: Django took about as long to build each of these queries
# as PostgreSQL took to run them. Locked with FOR UPDATE on PostgreSQL (SQLite locks the whole file).
_SUBMIT_SQL = """
SELECT a.state, a.item_id, a.rater_id, j.id, j.rubric_id,
  EXISTS (SELECT 1 FROM judgements_judging_raters r WHERE r.judging_id = j.id AND r.user_id = a.rater_id),
  EXISTS (SELECT 1 FROM judgements_judgement x WHERE x.item_id = a.item_id AND x.rater_id = a.rater_id),
  EXISTS (SELECT 1 FROM judgements_facet f WHERE f.rubric_id = j.rubric_id),
  EXISTS (SELECT 1 FROM judgements_grade g WHERE g.rubric_id = j.rubric_id AND g.value = %(grade)s)
FROM judgements_assignment a
JOIN pooling_poolitem pi ON pi.id = a.item_id
LEFT JOIN judgements_judging j ON j.pool_id = pi.pool_id
WHERE a.id = %(assignment)s {lock}
"""
_JUDGED_SQL = """
UPDATE pooling_poolitem SET num_judgements = num_judgements + 1, active_leases = active_leases - %s
WHERE id = %s
"""


def submit_judgement(
    *,
    assignment: Assignment,
    grade: int | None,
    unrateable: bool = False,
    facets: dict[str, Any] | None = None,
    note: str = "",
    seconds: float = 0.0,
) -> Judgement:
    """Record the rater's label for their leased item and end the lease. A lease that has expired is
    still honoured if the item has room for this judgement."""
    # The checks ride on the locking query (one round trip instead of five): still a rater of the pool,
    # already judged, the rubric has facets, and — for a plain grade — it is on the rubric. Anything but
    # a plain grade of a facet-less rubric is validated by `_validate_label` as ever.
    plain = not unrateable and not facets and isinstance(grade, int) and -(2**31) <= grade < 2**31
    lock = "FOR UPDATE OF a" if connection.vendor == "postgresql" else ""
    params = {"assignment": assignment.pk, "grade": int(grade) if plain and grade is not None else None}
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_SUBMIT_SQL.format(lock=lock), params)
            row = cursor.fetchone()
        if row is None:
            raise Assignment.DoesNotExist("Assignment matching query does not exist.")
        state, item_id, rater_id, judging_id, rubric_id, is_member, judged, has_facets, grade_ok = row
        if judging_id is None:
            raise Judging.DoesNotExist("Pool has no judging.")
        if not is_member:
            raise JudgingError("you are no longer a rater of this pool")
        if plain and grade_ok and not has_facets:
            facets = {}  # what `_validate_label` returns for a grade of the rubric, no facet asked or given
        else:
            facets = _validate_label(Rubric.objects.get(pk=rubric_id), grade, unrateable, facets)
        if state == Assignment.State.DONE:
            raise JudgingError("you have judged this item already (press u to revise it)")
        if state == Assignment.State.SKIPPED:
            raise JudgingError("you skipped this item")
        if state == Assignment.State.EXPIRED:
            item = PoolItem.objects.select_for_update().get(pk=item_id)
            if not item.gold and item.num_judgements + item.active_leases >= item.required_judgements:
                raise JudgingError("your lease on this item expired and it went to another rater")
        if judged:
            raise JudgingError("you have judged this item already (press u to revise it)")
        now = timezone.now()
        judgement = Judgement.objects.create(
            item_id=item_id,
            rater_id=rater_id,
            rubric_id=rubric_id,
            grade=None if unrateable else grade,
            unrateable=unrateable,
            facets=facets,
            note=note.strip(),
            seconds=max(0.0, min(float(seconds), 24 * 3600.0)),
            created_at=now,
            updated_at=now,
        )
        leases = 1 if state == Assignment.State.ACTIVE else 0
        with connection.cursor() as cursor:
            cursor.execute(_JUDGED_SQL, [leases, item_id])
            cursor.execute(
                "UPDATE judgements_assignment SET state = %s WHERE id = %s",
                [Assignment.State.DONE.value, assignment.pk],
            )
    return judgement


def revise_judgement(
    *,
    judgement: Judgement,
    by: AbstractBaseUser,
    grade: int | None,
    unrateable: bool = False,
    facets: dict[str, Any] | None = None,
    note: str | None = None,
) -> Judgement:
    """Change a judgement, keeping the old and new label as a revision (who, when, old, new). Facets and
    note left as None keep their current values."""
    with transaction.atomic():
        locked = (
            Judgement.objects.select_for_update(of=("self",)).select_related("rubric").get(pk=judgement.pk)
        )
        current = locked.facets if facets is None else facets
        facets = _validate_label(locked.rubric, grade, unrateable, current)
        new_note = locked.note if note is None else note.strip()
        new_grade = None if unrateable else grade
        if (locked.grade, locked.unrateable, locked.facets, locked.note) == (
            new_grade, unrateable, facets, new_note
        ):  # fmt: skip
            return locked
        JudgementRevision.objects.create(
            judgement=locked,
            changed_by=by,
            old_grade=locked.grade,
            old_unrateable=locked.unrateable,
            old_facets=locked.facets,
            old_note=locked.note,
            new_grade=new_grade,
            new_unrateable=unrateable,
            new_facets=facets,
            new_note=new_note,
        )
        locked.grade, locked.unrateable, locked.facets, locked.note = new_grade, unrateable, facets, new_note
        locked.updated_at = timezone.now()
        locked.save()
    return locked


# ------------------------------------------------------------------------------ gold and adjudication


def set_gold(*, item: PoolItem, grade: int, by: AbstractBaseUser) -> GoldLabel:
    """Give an item a known grade; it is then served to every rater of the pool, unannounced."""
    rubric = item.pool.judging.rubric
    if grade not in rubric.labels:
        raise JudgingError(f"grade {grade} is not on the rubric")
    with transaction.atomic():
        gold, _ = GoldLabel.objects.update_or_create(item=item, defaults={"grade": grade, "created_by": by})
        PoolItem.objects.filter(pk=item.pk).update(gold=True)
    return gold


def remove_gold(*, item: PoolItem) -> None:
    with transaction.atomic():
        GoldLabel.objects.filter(item=item).delete()
        PoolItem.objects.filter(pk=item.pk).update(gold=False)


def adjudication_queue(*, pool: Pool, gap: int | None = None) -> list[dict[str, Any]]:
    """Items whose grades differ by at least `gap` (default: the pool's setting), not yet adjudicated,
    largest spread first. Unrateable beside a grade counts as a disagreement of any size."""
    gap = pool.judging.adjudication_gap if gap is None else gap
    rows = (
        Judgement.objects.filter(item__pool=pool, item__adjudication__isnull=True)
        .order_by("item_id")
        .values_list("item_id", "grade", "unrateable")
    )
    grades: dict[int, list[int | None]] = {}
    for item_id, grade, unrateable in rows:
        grades.setdefault(item_id, []).append(None if unrateable else grade)
    queue = []
    for item_id, values in grades.items():
        if len(values) < 2:
            continue
        rated = [v for v in values if v is not None]
        mixed = 0 < len(rated) < len(values)
        spread = (max(rated) - min(rated)) if rated else 0
        if spread >= gap or mixed:
            queue.append({"item_id": item_id, "spread": spread, "unrateable_votes": len(values) - len(rated)})
    queue.sort(key=lambda row: (-row["spread"], row["item_id"]))
    return queue


def adjudicate(
    *,
    item: PoolItem,
    adjudicator: AbstractBaseUser,
    grade: int | None,
    unrateable: bool = False,
    note: str = "",
) -> Adjudication:
    """Record the adjudicator's decision on an item; it overrides every aggregation policy."""
    rubric = item.pool.judging.rubric
    _validate_label(rubric, grade, unrateable, {}, require_facets=False)  # a decision is about the grade
    adjudication, _ = Adjudication.objects.update_or_create(
        item=item,
        defaults={
            "grade": None if unrateable else grade,
            "unrateable": unrateable,
            "note": note.strip(),
            "adjudicator": adjudicator,
            "decided_at": timezone.now(),
        },
    )
    return adjudication


# ------------------------------------------------------------------------------------------- imports


@dataclass
class JudgementImportSummary:
    rows: int = 0
    created: int = 0
    updated: int = 0
    skipped_unpooled: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"judgements: {self.rows} rows, {self.created} created, {self.updated} updated, "
            f"{self.skipped_unpooled} unpooled skipped, {self.seconds:.1f} s"
        )

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "created": self.created, "updated": self.updated,
                "skipped_unpooled": self.skipped_unpooled, "seconds": round(self.seconds, 3)}  # fmt: skip


def import_judgements(
    *,
    pool: Pool,
    path: str | Path,
    rater: AbstractBaseUser,
    skip_unpooled: bool = False,
    display_name: str | None = None,
) -> JudgementImportSummary:
    """Import earlier labels (qrels format) as `rater`'s judgements, atomically. A negative label (unjudged)
    is skipped; a grade not on the rubric is an error; lines for documents outside the pool are errors
    unless `skip_unpooled`. An existing judgement of this rater is revised (with a revision row)."""
    started = time.monotonic()
    display = display_name or str(path)
    judging = Judging.objects.select_related("rubric").get(pool=pool)
    labels = set(judging.rubric.labels)
    items = {
        (qid, docid): pk
        for pk, qid, docid in PoolItem.objects.filter(pool=pool).values_list(
            "pk", "topic__qid", "document__docid"
        )
    }
    summary = JudgementImportSummary()
    errors: list[str] = []
    try:
        with transaction.atomic():
            existing = {j.item_id: j for j in Judgement.objects.filter(item__pool=pool, rater=rater)}
            for entry in formats.read_qrels(path):
                summary.rows += 1
                if entry.rel < 0:
                    continue
                item_id = items.get((entry.qid, entry.docid))
                if item_id is None:
                    if skip_unpooled:
                        summary.skipped_unpooled += 1
                    elif len(errors) < 50:
                        errors.append(
                            f"{display}:{entry.line}: {entry.qid} {entry.docid} is not in pool {pool.name}"
                        )
                    continue
                if entry.rel not in labels:
                    if len(errors) < 50:
                        errors.append(f"{display}:{entry.line}: grade {entry.rel} is not on the rubric")
                    continue
                if item_id in existing:
                    revise_judgement(judgement=existing[item_id], by=rater, grade=entry.rel)
                    summary.updated += 1
                else:
                    existing[item_id] = Judgement.objects.create(
                        item_id=item_id, rater=rater, rubric=judging.rubric, grade=entry.rel, imported=True
                    )
                    PoolItem.objects.filter(pk=item_id).update(num_judgements=F("num_judgements") + 1)
                    # a lease this rater holds on the item ends: the imported label is their judgement
                    for lease in Assignment.objects.select_for_update().filter(item_id=item_id, rater=rater):
                        _release(lease, Assignment.State.DONE)
                    summary.created += 1
            if errors:
                raise pooling_services.ImportFailed(errors)
    except formats.FormatError as exc:
        raise pooling_services.ImportFailed(errors + [str(e) for e in exc.errors]) from None
    summary.seconds = time.monotonic() - started
    return summary


# ------------------------------------------------------------------------------------------ releases


def agreement_records(*, pool: Pool) -> list[tuple[int, str, str, int | None]]:
    """Every current judgement of a pool as (item, qid, rater username, grade or None if unrateable)."""
    return list(
        Judgement.objects.filter(item__pool=pool)
        .order_by("item_id", "rater_id")
        .values_list("item_id", "item__topic__qid", "rater__username", "grade")
    )


def pool_agreement(*, pool: Pool, seed: int = 0, n_bootstrap: int = 1000) -> dict[str, Any]:
    """The agreement summary of a pool's judgements over its rubric's full label set (SPEC §6)."""
    from judgements import agreement

    judging = Judging.objects.select_related("rubric").get(pool=pool)
    summary = agreement.agreement_summary(
        agreement_records(pool=pool),
        labels=judging.rubric.labels,
        relevance_level=pool.relevance_level,
        seed=seed,
        n_bootstrap=n_bootstrap,
    )
    summary["sentence"] = agreement.noise_floor_sentence(summary)
    return summary


def unpooled_by_run(*, pool: Pool) -> dict[str, dict[str, int]]:
    """For every run of the collection: documents it retrieved for the pool's topics, and how many of
    them were never pooled (no selected item) — the `unpooled` state of SPEC §1."""
    from pooling.models import Run, RunRow

    topic_ids = [topic.id for topic in pool.topics()]
    if not topic_ids:
        return {}
    marks = ", ".join(["%s"] * len(topic_ids))
    sql = f"""
        SELECT r.name, COUNT(*), SUM(CASE WHEN i.id IS NULL THEN 1 ELSE 0 END)
        FROM {RunRow._meta.db_table} rr
        JOIN {Run._meta.db_table} r ON r.id = rr.run_id
        LEFT JOIN {PoolItem._meta.db_table} i
          ON i.pool_id = %s AND i.topic_id = rr.topic_id AND i.document_id = rr.document_id AND i.selected
        WHERE r.collection_id = %s AND rr.topic_id IN ({marks})
        GROUP BY r.name ORDER BY r.name
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [pool.pk, pool.collection_id, *topic_ids])
        return {name: {"retrieved": int(n), "unpooled": int(u or 0)} for name, n, u in cursor.fetchall()}


def _iso(value: Any) -> str | None:
    """A timestamp as ISO 8601 UTC with microseconds (SQLite hands back strings, PostgreSQL datetimes)."""
    from datetime import UTC, datetime

    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _iso_text(value: str | None) -> str | None:
    """`_iso` for a time that PostgreSQL already formatted (`_stream_items(iso_times=True)`)."""
    return value


def _json_value(value: Any) -> Any:
    if isinstance(value, str):
        import json

        return json.loads(value) if value else {}
    return value or {}


def _json_text(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, ensure_ascii=False)`, the short way for the scalars of a
    judgement row: the same text (strings through json's own encoder, floats by repr with NaN and
    Infinity, as json writes them)."""
    import json

    kind = type(value)
    if kind is str:
        return json.encoder.encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float:
        return _json_float(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _json_float(value: float) -> str:
    if value - value == 0.0:  # finite
        return float.__repr__(value)
    return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")


@dataclass
class _ItemVotes:
    item_id: int
    qid: str
    docid: str
    required: int
    adjudicated: int | str | None
    votes: list[tuple[Any, int | None]]


# On PostgreSQL a timestamp is formatted by the server exactly as `_iso` formats it (UTC, microseconds;
# FM drops the zero-padding of years below 1000, as strftime's %Y does): parsing a million timestamps into
# datetimes only to format them again was the largest cost of a release.
_ISO_SQL = """to_char({column} AT TIME ZONE 'UTC', 'FMYYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""


def _query_rows(sql: str, params: list[Any], *, copy: bool = False) -> Any:
    """Yield the rows of a query in a flat amount of memory: through a server-side cursor, or with
    `copy` on PostgreSQL through `COPY (query) TO STDOUT`, parsed with the connection's own loaders for
    the column types the query has (read from a `LIMIT 0` run), so the rows are those a cursor returns.
    COPY streams while the server is still producing rows (and may use a parallel plan, which a cursor
    never does). The caller must close the generator before the transaction ends (contextlib.closing).
    With psycopg 2 (no copy with loaders) the cursor is used."""
    if copy and connection.vendor == "postgresql":
        from django.db.backends.postgresql.psycopg_any import is_psycopg3

        copy = is_psycopg3
    else:
        copy = False
    if copy:
        with connection.cursor() as cursor:
            cursor.execute(f"{sql} LIMIT 0", params)
            types = [column.type_code for column in cursor.description]
            with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT", params) as stream:
                stream.set_types(types)
                yield from stream.rows()
        return
    cursor = connection.chunked_cursor()
    try:
        cursor.execute(sql, params)
        while batch := cursor.fetchmany(20000):
            yield from batch
    finally:
        cursor.close()


def _stream_items(*, pool: Pool, iso_times: bool = False, copy: bool = False) -> Any:
    """Yield every selected item of the pool with its current judgements, in qrels order (qid, docid by
    byte order), reading through a server-side cursor so memory stays flat.

    With `iso_times`, on PostgreSQL the rows' created_at and updated_at come as the strings `_iso` makes
    of them (elsewhere as the driver reads them). With `copy`, PostgreSQL streams the rows with COPY
    (see `_query_rows`; close the generator before the transaction ends)."""
    from pooling.models import Document, Topic

    postgres = connection.vendor == "postgresql"
    collate = ' COLLATE "C"' if postgres else ""
    times = "j.created_at, j.updated_at"
    if iso_times and postgres:
        times = f"{_ISO_SQL.format(column='j.created_at')}, {_ISO_SQL.format(column='j.updated_at')}"
    sql = f"""
        SELECT i.id, t.qid, d.docid, i.required_judgements, a.id, a.grade, a.unrateable,
               j.rater_id, j.grade, j.unrateable, j.facets, j.note, j.seconds, {times},
               j.imported
        FROM {PoolItem._meta.db_table} i
        JOIN {Topic._meta.db_table} t ON t.id = i.topic_id
        JOIN {Document._meta.db_table} d ON d.id = i.document_id
        LEFT JOIN {Judgement._meta.db_table} j ON j.item_id = i.id
        LEFT JOIN {Adjudication._meta.db_table} a ON a.item_id = i.id
        WHERE i.pool_id = %s AND i.selected
        ORDER BY t.qid{collate}, d.docid{collate}, j.rater_id
    """
    current: _ItemVotes | None = None
    rows: list[tuple[Any, ...]] = []
    for row in _query_rows(sql, [pool.pk], copy=copy):
        item_id = row[0]
        if current is None or current.item_id != item_id:
            if current is not None:
                yield current, rows
            adjudicated = None
            if row[4] is not None:
                adjudicated = "unrateable" if row[6] else row[5]
            current = _ItemVotes(item_id, row[1], row[2], row[3], adjudicated, [])
            rows = []
        if row[7] is not None:
            current.votes.append((row[7], None if row[9] else row[8]))
            rows.append(row)
    if current is not None:
        yield current, rows


def create_release(
    *,
    pool: Pool,
    policy: str = "majority",
    unjudged: str = "explicit",
    by: AbstractBaseUser | None = None,
    progress: Any = None,
) -> Any:
    """Aggregate a pool's judgements under `policy` and write an immutable release (SPEC §7):

    - `qrels.txt`: `qid 0 docid grade`, sorted by qid then docid (byte order), one line per judged item;
      with `unjudged="explicit"` every pending and unrateable item is written with grade -1, with `omit`
      they are left out;
    - `judgements.jsonl`: every current judgement, rater pseudonymised, with state, grade, facets, note,
      seconds and times;
    - `manifest.json`: pool, policy, rubric version, counts per state, unpooled documents per run, the
      agreement summary (Cohen's kappa, no bootstrap) and the SHA-256 of each file.

    Nothing in the files depends on when the release is made, so two releases of unchanged data are
    byte-identical. Streams: memory does not grow with the number of judgements.
    """
    import contextlib
    import functools
    import hashlib
    import json
    import os
    import shutil
    import tempfile

    import numpy as np
    from django.conf import settings

    from judgements import aggregation, agreement
    from judgements.models import Release

    if unjudged not in Release.Unjudged.values:
        raise JudgingError(f"unjudged must be one of {', '.join(Release.Unjudged.values)}")
    try:
        parsed = aggregation.parse_policy(policy)
    except ValueError as exc:
        raise JudgingError(str(exc)) from None
    judging = Judging.objects.select_related("rubric").filter(pool=pool).first()
    if judging is None:
        raise JudgingError(f"pool {pool.name!r} has no judging set-up (rubric, raters)")
    rubric = judging.rubric
    labels = rubric.labels
    if parsed.kind == "rater":
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(username=parsed.rater).first()
        if user is None:
            raise JudgingError(f"no user named {parsed.rater!r}")
        parsed = aggregation.Policy("rater", str(user.pk))  # votes are keyed by rater id
    secret = f"{settings.SECRET_KEY}:{pool.pk}:".encode()
    pseudonyms: dict[int, str] = {}

    def pseudonym(rater_id: int) -> str:
        name = pseudonyms.get(rater_id)
        if name is None:
            name = "rater-" + hashlib.sha256(secret + str(rater_id).encode()).hexdigest()[:10]
            pseudonyms[rater_id] = name
        return name

    total = max(PoolItem.objects.filter(pool=pool, selected=True).count(), 1)
    counts = {"judged": 0, "unrateable": 0, "pending": 0, "ties": 0, "judgements": 0}
    grades_count: Counter[int] = Counter()
    # (grade of the earlier rater, grade of the later rater) → number of such pairs: the same confusion
    # matrix as the lists of pairs, in memory that does not grow with the number of judgements.
    pair_counts: Counter[tuple[int, int]] = Counter()
    memo: dict[tuple[Any, ...], tuple[aggregation.Aggregate, tuple[tuple[int, int], ...]]] = {}

    def consensus(item: _ItemVotes) -> tuple[aggregation.Aggregate, tuple[tuple[int, int], ...]]:
        """`aggregation.aggregate` of the item and its pairs of grades, remembered by what the result
        depends on: the grades in rater order, `required`, the adjudication and (for `rater:NAME`) which
        vote is NAME's. An item is looked up only when `aggregate` could not raise for it (plain int
        grades, distinct raters), so a remembered result is exactly what `aggregate` would return."""
        votes = item.votes
        grades = tuple([g for _, g in votes])
        key = None
        if (
            type(item.required) is int
            and (item.adjudicated is None or type(item.adjudicated) in (int, str))
            and all(g is None or type(g) is int for g in grades)
            and len({rater for rater, _ in votes}) == len(votes)
        ):
            flags = (
                tuple([str(rater) == parsed.rater for rater, _ in votes]) if parsed.kind == "rater" else ()
            )
            key = (grades, item.required, item.adjudicated, flags)
            found = memo.get(key)
            if found is not None:
                return found
        result = aggregation.aggregate(
            votes, policy=parsed, required=item.required, adjudicated=item.adjudicated
        )
        graded = [g for g in grades if g is not None]
        pairs = tuple((graded[x], graded[y]) for x in range(len(graded)) for y in range(x + 1, len(graded)))
        if key is not None and len(memo) < 4096:
            memo[key] = (result, pairs)
        return result, pairs

    latest = ""
    release_root = Path(settings.MEDIA_ROOT) / "releases" / pool.name
    release_root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=release_root))
    try:
        qrels_path = work / "qrels.txt"
        jsonl_path = work / "judgements.jsonl"
        with (
            transaction.atomic(),
            open(qrels_path, "w", encoding="utf-8", newline="\n") as qrels,
            open(jsonl_path, "w", encoding="utf-8", newline="\n") as jsonl,
            contextlib.closing(_stream_items(pool=pool, iso_times=True, copy=True)) as items,
        ):
            qrels_lines: list[str] = []
            jsonl_lines: list[str] = []
            iso = _iso_text if connection.vendor == "postgresql" else _iso
            dumps = functools.partial(json.dumps, sort_keys=True, ensure_ascii=False)
            encode = json.encoder.encode_basestring
            rater_texts: dict[Any, str] = {}
            facet_texts: dict[str, str] = {}  # facets text -> its JSON (few distinct ones)
            state_texts = {True: _json_text("unrateable"), False: _json_text("graded")}
            for done, (item, rows) in enumerate(items, 1):
                result, pairs = consensus(item)
                counts[result.state] += 1
                counts["ties"] += int(result.tie)
                if result.state == "judged":
                    grades_count[result.grade] += 1  # type: ignore[index]
                    qrels_lines.append(f"{item.qid} 0 {item.docid} {result.grade}\n")
                elif unjudged == "explicit":
                    qrels_lines.append(f"{item.qid} 0 {item.docid} -1\n")
                for pair in pairs:
                    pair_counts[pair] += 1
                if rows:
                    # Each line is json.dumps({...}, sort_keys=True, ensure_ascii=False) of the judgement,
                    # written out key by key in sorted order with the same separators and value texts.
                    counts["judgements"] += len(rows)
                    head = f'{{"consensus": {_json_text(result.state)}, "created_at": '
                    docid = f', "docid": {_json_text(item.docid)}, "facets": '
                    qid = f', "qid": {_json_text(item.qid)}, "rater": '
                for row in rows:
                    rater_id, grade, unrateable, raw, note, seconds, created, updated = row[7:15]
                    if iso is not _iso_text:
                        created, updated = iso(created), iso(updated)
                    if updated is not None and updated > latest:  # max(latest, updated or "")
                        latest = updated
                    rater = rater_texts.get(rater_id)
                    if rater is None:
                        rater = rater_texts[rater_id] = _json_text(pseudonym(rater_id))
                    facets = facet_texts.get(raw) if type(raw) is str else None
                    if facets is None:
                        facets = dumps(_json_value(raw))
                        if type(raw) is str and len(facet_texts) < 1000:
                            facet_texts[raw] = facets
                    # The common types inline, anything else through _json_text: the same text.
                    grade = None if unrateable else grade
                    seconds = round(float(seconds or 0.0), 3)
                    seconds_json = (
                        float.__repr__(seconds) if seconds - seconds == 0.0 else _json_float(seconds)
                    )
                    updated_json = encode(updated) if type(updated) is str else _json_text(updated)
                    jsonl_lines.append(
                        f"{head}{encode(created) if type(created) is str else _json_text(created)}"
                        f"{docid}{facets}"
                        f', "grade": {int.__repr__(grade) if type(grade) is int else _json_text(grade)}'
                        f', "imported": {"true" if row[15] else "false"}'
                        f', "note": {encode(note) if type(note) is str else _json_text(note or "")}'
                        f"{qid}{rater}"
                        f', "seconds": {seconds_json}'
                        f', "state": {state_texts[bool(unrateable)]}'
                        f', "updated_at": {updated_json}}}\n'
                    )
                if len(jsonl_lines) >= 10000 or len(qrels_lines) >= 10000:
                    qrels.writelines(qrels_lines)
                    jsonl.writelines(jsonl_lines)
                    qrels_lines.clear()
                    jsonl_lines.clear()
                    if progress:
                        progress(done / total, f"{done} items")
            qrels.writelines(qrels_lines)
            jsonl.writelines(jsonl_lines)
            adjudicated = Adjudication.objects.filter(item__pool=pool).order_by("-decided_at").first()
            if adjudicated:
                latest = max(latest, _iso(adjudicated.decided_at) or "")

        def sha256(path: Path) -> str:
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()

        n_pairs = sum(pair_counts.values())
        position = {value: i for i, value in enumerate(labels)}
        if (
            labels
            and len(position) == len(labels)
            and all(type(value) is int and -(2**63) <= value < 2**63 for value in labels)
            and all(pa in position and pb in position for pa, pb in pair_counts)
        ):
            # The confusion matrix that cohen_kappa(a, b, labels=labels) builds from the pairs (rows: the
            # earlier rater's grade), without the pairs themselves: memory flat in the number of pairs.
            confusion = np.zeros((len(labels), len(labels)), dtype=np.int64)
            for (pa, pb), n in pair_counts.items():
                confusion[position[pa], position[pb]] += n

            def kappa(weights: Any) -> float | None:
                return agreement.kappa_from_confusion(confusion, weights=weights)

        else:  # anything unusual: cohen_kappa on the pairs themselves, errors included
            repeats = list(pair_counts.values())
            a = np.repeat(np.asarray([pa for pa, _ in pair_counts], dtype=np.int64), repeats)
            b = np.repeat(np.asarray([pb for _, pb in pair_counts], dtype=np.int64), repeats)

            def kappa(weights: Any) -> float | None:
                return agreement.cohen_kappa(a, b, labels=labels, weights=weights)

        kappas = {
            name: (kappa(weights) if n_pairs else None)
            for name, weights in (("unweighted", None), ("linear", "linear"), ("quadratic", "quadratic"))
        }
        files = {
            "qrels.txt": {"sha256": sha256(qrels_path), "lines": counts["judged"] + (
                counts["pending"] + counts["unrateable"] if unjudged == "explicit" else 0)},
            "judgements.jsonl": {"sha256": sha256(jsonl_path), "lines": counts["judgements"]},
        }  # fmt: skip
        candidates = PoolItem.objects.filter(pool=pool, selected=False).count()
        manifest = {
            "format": "relevance-release/1",
            "pool": pool.name,
            "collection": pool.collection.name,
            "strategy": pool.strategy,
            "depth": pool.depth,
            "policy": policy,
            "unjudged": unjudged,
            "unjudged_label": -1 if unjudged == "explicit" else None,
            "relevance_level": pool.relevance_level,
            "rubric": {"name": rubric.name, "version": rubric.version, "labels": labels},
            "counts": {
                "items": counts["judged"] + counts["unrateable"] + counts["pending"],
                "judged": counts["judged"],
                "unrateable": counts["unrateable"],
                "pending": counts["pending"],
                "ties": counts["ties"],
                "judgements": counts["judgements"],
                "unselected_candidates": candidates,
                "grades": {str(g): grades_count[g] for g in labels},
            },
            "runs": unpooled_by_run(pool=pool),
            "agreement": {
                "pairs": n_pairs,
                "cohen_kappa": kappas,
                "band": agreement.landis_koch_band(kappas["unweighted"]),
            },
            "data_as_of": latest or None,
            "files": files,
        }
        (work / "manifest.json").write_text(
            json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        files["manifest.json"] = {"sha256": sha256(work / "manifest.json"), "lines": 0}
        with transaction.atomic():
            release = Release.objects.create(
                pool=pool,
                policy=policy,
                unjudged=unjudged,
                rubric=rubric,
                directory="",
                files={name: info["sha256"] for name, info in files.items()},
                counts=manifest["counts"],
                manifest=manifest,
                created_by=by if by is not None and by.is_authenticated else None,
            )
            final = release_root / str(release.pk)
            os.replace(work, final)
            for name in files:
                os.chmod(final / name, 0o444)
            release.directory = str(final.relative_to(Path(settings.MEDIA_ROOT)))
            release.save(update_fields=["directory"])
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if progress:
        progress(1.0, "released")
    return release


def current_qrels(*, pool: Pool, policy: str = "majority") -> dict[str, dict[str, int]]:
    """The pool's labels right now under `policy`, as `{qid: {docid: grade}}`, with -1 for every pending or
    unrateable item (trec_eval's "in the pool, unjudged"), exactly as an explicit release would write them."""
    from judgements import aggregation

    parsed = aggregation.parse_policy(policy)
    if parsed.kind == "rater":
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(username=parsed.rater).first()
        if user is None:
            raise JudgingError(f"no user named {parsed.rater!r}")
        parsed = aggregation.Policy("rater", str(user.pk))
    qrels: dict[str, dict[str, int]] = {}
    with transaction.atomic(), contextlib.closing(_stream_items(pool=pool, copy=True)) as items:
        for item, _rows in items:
            result = aggregation.aggregate(
                item.votes, policy=parsed, required=item.required, adjudicated=item.adjudicated
            )
            grade = result.grade if result.state == "judged" and result.grade is not None else -1
            qrels.setdefault(item.qid, {})[item.docid] = grade
    return qrels

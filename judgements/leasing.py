"""Leasing an item to a rater (`lease_next`): their live lease, else an item open for them
(`PoolItem.objects.open_for`, as OPEN_FOR_SQL), on the topic they are on first.

The rater loop is two steps, each one public function: `leasing.lease_next` (this module's, answered as a
`Lease`) and `submission.submit_label` (answered as a `Judged`): plain values, what a rater may see.
Every caller (the judging page, the rater API, its hot endpoints, tests, benchmarks) calls these two.
Inside each, PostgreSQL takes ONE statement, prepared on the connection (`prepared.one_row`), with no
BEGIN/COMMIT of its own outside a caller's transaction (the statement is its own transaction). Whatever
that statement does not cover goes to the portable ORM path beside it, which decides it: the statement
changes nothing in those cases. Elsewhere (SQLite) only the portable path runs.
Here the statement is `_LEASE_SQL`; the portable path is `_lease_orm` (nothing open, so adaptive
selection or "nothing left"; a rater's own race between two tabs). How a lease ends (skipped, expired,
swept) is `lease_ends`; asking an adaptive pool for more items, `adaptive_selection`."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from judgements.adaptive_selection import select_adaptive
from judgements.errors import NotARater
from judgements.lease_ends import expire_lapsed
from judgements.models import Assignment, Judging
from judgements.prepared import PAGES_SQL, one_row
from judgements.rubrics import rubric_values, rubric_values_from_row
from pooling.models import OPEN_FOR_SQL, Pool, PoolItem


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
    AND {open_for}
    {first_clause}
  ORDER BY pi.topic_id, pi.blind_key
  LIMIT 1 FOR UPDATE OF pi SKIP LOCKED
""".replace("{open_for}", OPEN_FOR_SQL)
# (The pool and the topic come as values of the rater CTE, not as a join with it: so PostgreSQL walks the
# index of leasable items (pool, topic, blind_key) in order and stops at the first open item, instead of
# sorting the whole pool for every lease that changes topic.)
_ON_TOPIC = "AND pi.topic_id = (SELECT last_topic FROM rater)"
_IF_NONE_ON_TOPIC = "AND NOT EXISTS (SELECT 1 FROM on_topic)"
# The rater's live lease in the pool `p` (a standalone lease returns it as is): `_live_leases` in SQL.
LIVE_ID_SQL = """(SELECT a.id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
     WHERE pi.pool_id = p.id AND a.rater_id = %(rater)s AND a.state = 'active' AND a.expires_at > %(now)s
     ORDER BY a.leased_at DESC LIMIT 1)"""
# The pool `p` and its judging `j` when the rater rates it (`Judging.raters`, as `judging_for` asks it), for
# the pool `{pool}` says: the SQL form of "a rater of the pool" in the statements of the loop.
RATED_POOL_SQL = """FROM pooling_pool p
  JOIN judgements_judging j ON j.pool_id = p.id
  JOIN judgements_judging_raters r ON r.judging_id = j.id AND r.user_id = %(rater)s
  WHERE {pool}"""
# The statement's CTEs, with three blanks (`lease_ctes`): `{live_id}`, `{pool}` (which pool, and whether to
# lease at all) and `{commit}` (what the lease counter's update returns). `_LEASE_SQL` fills them in for a
# lease of its own; `submission` for the lease that follows a judgement in the same statement.
_LEASE_CTES = f"""rater AS (
  SELECT p.id AS pool_id, p.name AS pool_name, j.rubric_id,
    %(now)s::timestamptz + make_interval(mins => COALESCE(NULLIF(j.lease_minutes, 0), 10)) AS expires_at,
    {{live_id}} AS live_id,
    (SELECT pi.topic_id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
     WHERE pi.pool_id = p.id AND a.rater_id = %(rater)s ORDER BY a.leased_at DESC LIMIT 1) AS last_topic
  {RATED_POOL_SQL}
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
  INSERT INTO judgements_assignment (item_id, pool_id, rater_id, state, leased_at, expires_at)
  SELECT picked.id, rater.pool_id, %(rater)s, 'active', %(now)s, rater.expires_at
  FROM picked, rater WHERE picked.expired_id IS NULL
  RETURNING id, item_id, state, leased_at, expires_at
),
leased AS (SELECT * FROM reactivated UNION ALL SELECT * FROM inserted),
lease_counted AS (
  UPDATE pooling_poolitem SET active_leases = active_leases + 1 WHERE id IN (SELECT item_id FROM leased)
  RETURNING {{commit}}
),
chosen AS (
  SELECT a.id, a.item_id, a.state, a.leased_at, a.expires_at
  FROM rater JOIN judgements_assignment a ON a.id = rater.live_id
  UNION ALL SELECT * FROM leased
)"""
# What the statement answers (`lease_of_row` reads it): a row whenever the rater rates the pool.
LEASE_COLUMNS = """c.id, c.state, c.leased_at, c.expires_at, rater.pool_name,
  t.qid, t.query, t.description, t.narrative, d.docid, d.title, d.url, d.text,
  (SELECT count(*) FROM lease_counted),
  ru.id, ru.name, ru.version, ru.description, ru.allow_unrateable, ru.unrateable_key,
  (SELECT json_agg(json_build_array(g.value, g.label, g.description, g.key) ORDER BY g.value DESC)
   FROM judgements_grade g WHERE g.rubric_id = ru.id),
  (SELECT json_agg(json_build_array(f.name, f.label, f.choices, f.required) ORDER BY f.id)
   FROM judgements_facet f WHERE f.rubric_id = ru.id)"""
LEASE_FROM = """FROM rater
JOIN judgements_rubric ru ON ru.id = rater.rubric_id
LEFT JOIN chosen c ON true
LEFT JOIN pooling_poolitem pi ON pi.id = c.item_id
LEFT JOIN pooling_topic t ON t.id = pi.topic_id
LEFT JOIN pooling_document d ON d.id = pi.document_id"""


def lease_ctes(*, live_id: str, pool: str, commit: str) -> str:
    """`_LEASE_CTES` with its blanks filled in."""
    return _LEASE_CTES.replace("{live_id}", live_id).replace("{pool}", pool).replace("{commit}", commit)


# A lease of its own: the live lease is returned as is; committed asynchronously when it is its own
# transaction (see above).
_OWN_COMMIT = """set_config('synchronous_commit',
    CASE WHEN %(own_transaction)s THEN 'off' ELSE current_setting('synchronous_commit') END, true)"""
_LEASE_SQL = f"""
WITH {lease_ctes(live_id=LIVE_ID_SQL, pool="p.name = %(pool)s", commit=_OWN_COMMIT)}
SELECT {LEASE_COLUMNS},
  {PAGES_SQL}
{LEASE_FROM}
"""


# The columns of LEASE_COLUMNS before the lease counter and the rubric, in order.
_LEASE_FIELDS = ("assignment", "state", "leased_at", "expires_at", "pool", "qid", "query", "description",
                 "narrative", "docid", "title", "url", "text")  # fmt: skip


def lease_of_row(row: tuple[Any, ...]) -> Lease:
    """The Lease of a row of LEASE_COLUMNS that holds one."""
    fields = dict(zip(_LEASE_FIELDS, row[:13], strict=True))
    return Lease(**fields, rubric=rubric_values_from_row(row[14:]))


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


def lease_next(*, pool: Pool | str, rater: User) -> Lease | None:
    """Lease the rater the next item of `pool` (a Pool, or its name as the API's URL gives it): their live
    lease if they have one (a rater resumes where they were), else an item that still needs judgements
    and that they have not judged, on the topic they are on first; None when nothing is left for them.
    Raises JudgingError when they are not a rater of such a pool. Concurrency-safe: no item is ever
    leased beyond what it still needs. On PostgreSQL one statement (`_LEASE_SQL`) does it whenever there
    is a live lease or an open item; the rest (adaptive selection, nothing left, a race) and every other
    database take the portable path (`_lease_orm`)."""
    name = pool if isinstance(pool, str) else pool.name
    if connection.vendor == "postgresql":
        params = {"pool": name, "rater": rater.pk, "now": timezone.now(),
                  "own_transaction": not connection.in_atomic_block}  # fmt: skip
        try:
            row = one_row(_LEASE_SQL, params)
        except IntegrityError:
            row = ()  # the same rater raced themself (two tabs): the portable path tries again
        if row is None:
            raise NotARater("you are not a rater of this pool")
        if row and row[0] is not None:
            return lease_of_row(row)
    pools = Pool.objects.select_related("judging__rubric")
    found = pool if isinstance(pool, Pool) else pools.filter(name=name).first()
    if found is None:
        raise NotARater("you are not a rater of this pool")
    assignment = _lease_orm(pool=found, rater=rater)
    return None if assignment is None else _lease_of(assignment, found)


# ------------------------------------------------------------------------------------- portable path

_NEXT_SQL = """
SELECT pi.id, (SELECT a.id FROM judgements_assignment a WHERE a.item_id = pi.id AND a.rater_id = %(rater)s)
FROM pooling_poolitem pi
WHERE pi.pool_id = %(pool)s {topic_clause} AND {open_for}
ORDER BY pi.topic_id, pi.blind_key
LIMIT 1 {lock}
""".replace("{open_for}", OPEN_FOR_SQL)


# Membership (no row if not a rater), the lease length, the live lease, the topic of the last lease, and
# whether a lease of theirs lapsed unswept (active, past its time: the new lease must end it first).
_RATER_SQL = """
SELECT j.lease_minutes,
  (SELECT a.id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
   WHERE pi.pool_id = %(pool)s AND a.rater_id = %(rater)s AND a.state = %(active)s AND a.expires_at > %(now)s
   ORDER BY a.leased_at DESC LIMIT 1),
  (SELECT pi.topic_id FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
   WHERE pi.pool_id = %(pool)s AND a.rater_id = %(rater)s ORDER BY a.leased_at DESC LIMIT 1),
  EXISTS (SELECT 1 FROM judgements_assignment a WHERE a.pool_id = %(pool)s AND a.rater_id = %(rater)s
          AND a.state = %(active)s AND a.expires_at <= %(now)s)
FROM judgements_judging j JOIN judgements_judging_raters r ON r.judging_id = j.id
WHERE j.pool_id = %(pool)s AND r.user_id = %(rater)s
"""


def _find_open_item(*, pool: Pool, rater: User, topic_id: int | None) -> tuple[int, int | None] | None:
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
        if row is None and lock:
            # Nothing unlocked: the open items, if any, are held by leases being made this instant (other
            # raters', or this rater's own racing tab, whose lease commits in a moment). "Nothing left" must
            # not be answered for items that are only busy, so walk again waiting for those locks: each
            # item is re-checked once its holder commits (or rolls back), and a taken one is passed over.
            # (No cycle: this transaction holds only the rater's turn, which no lock holder waits for.)
            cursor.execute(_NEXT_SQL.format(topic_clause="", lock="FOR UPDATE OF pi"), params)
            row = cursor.fetchone()
    return (int(row[0]), row[1]) if row else None


def _live_leases(*, pool: Pool, rater: User) -> QuerySet[Assignment]:
    """The rater's live leases in this pool, the newest first (there is one at most)."""
    return Assignment.objects.filter(
        item__pool=pool, rater=rater, state=Assignment.State.ACTIVE, expires_at__gt=timezone.now()
    ).order_by("-leased_at")


def current_assignment(*, pool: Pool, rater: User) -> Assignment | None:
    """The rater's live lease in this pool, if any (a rater resumes where they were)."""
    return _live_leases(pool=pool, rater=rater).select_related("item__topic", "item__document").first()


def current_topic_id(*, pool: Pool, rater: User) -> int | None:
    """The topic of the rater's live lease in this pool, if any: the one column the progress bars need
    (no join to the topic and document `current_assignment` reads for the page)."""
    return _live_leases(pool=pool, rater=rater).values_list("item__topic_id", flat=True).first()


def _lease_orm(*, pool: Pool, rater: User) -> Assignment | None:
    """The portable path of `lease_next`: lease the rater an item that still needs judgements and that
    they have not judged, preferring the
    topic they are on. Concurrency-safe: on PostgreSQL the item row is locked with SKIP LOCKED and its
    lease counter is re-checked, so no item is ever leased beyond what it still needs. Returns None when
    nothing is left for this rater."""
    for _attempt in range(3):
        try:
            with transaction.atomic():
                # One rater's leases in a pool take turns (two tabs, a double click): the second waits
                # here for the first to commit, then finds its lease live. The database holds one live
                # lease per rater and pool whatever happens (`assignment_one_live_lease`).
                _take_turn(pool=pool, rater=rater)
                now = connection.ops.adapt_datetimefield_value(timezone.now())
                params: dict[str, Any] = {
                    "pool": pool.pk,
                    "rater": rater.pk,
                    "active": Assignment.State.ACTIVE.value,
                    "now": now,
                }
                with connection.cursor() as cursor:
                    cursor.execute(_RATER_SQL, params)
                    row = cursor.fetchone()
                if row is None:
                    raise NotARater("you are not a rater of this pool")
                lease_minutes, live_id, last, lapsed = row
                if live_id is not None:
                    live = current_assignment(pool=pool, rater=rater)
                    if live is not None:
                        return live
                lease = functools.partial(
                    _lease, pool=pool, rater=rater, topic_id=last, lease_minutes=lease_minutes, lapsed=lapsed
                )
                assignment = lease()
                if assignment is None and pool.adaptive and select_adaptive(pool=pool):
                    assignment = lease()
                return assignment
        except IntegrityError:
            continue  # a live lease the turn did not see (the single statement's, racing): try again
    return None


_TURN_SQL = """
SELECT 1 FROM judgements_judging_raters r JOIN judgements_judging j ON j.id = r.judging_id
WHERE j.pool_id = %s AND r.user_id = %s FOR UPDATE OF r
"""


def _take_turn(*, pool: Pool, rater: User) -> None:
    """Lock the rater's membership of the pool until the transaction ends (PostgreSQL; SQLite locks the
    whole database for a write anyway)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_TURN_SQL, [pool.pk, rater.pk])


def _lease(
    *,
    pool: Pool,
    rater: User,
    topic_id: int | None,
    lease_minutes: int | None = None,
    lapsed: bool = False,
) -> Assignment | None:
    found = _find_open_item(pool=pool, rater=rater, topic_id=topic_id)
    if found is None:
        return None
    if lapsed:  # found while the lapsed lease still held its item: a lapsed lease is not resumed
        expire_lapsed(pool=pool, rater=rater)
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
            item_id=item_id, pool=pool, rater=rater, leased_at=now, expires_at=expires_at
        )
    assignment.item = PoolItem.objects.select_related("topic", "document").get(pk=item_id)
    return assignment

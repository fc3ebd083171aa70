"""Submitting a rater's label for the item of their assignment (`submit_label`), which ends the lease.

The second step of the rater loop (the first is `leasing.lease_next`, whose module says how each step
runs one prepared statement on PostgreSQL beside its portable ORM path); answered as a `Judged`.
Here the statement is `_SUBMIT_ONE_SQL` (a plain grade on an active lease); the portable path is
`_submit_orm` (an expired lease, facets or unrateable, any refusal). The key press — the label, then the
next item — is `submit_and_lease`: on PostgreSQL one statement for both steps (`_SUBMIT_AND_LEASE_SQL`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Required, TypedDict, Unpack

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from judgements import leasing
from judgements.errors import JudgingError, NotARater
from judgements.labels import MAX_SECONDS, clean_note, validate_label
from judgements.models import Assignment, Judgement, Judging, Rubric
from judgements.prepared import PAGES_SQL, one_row
from pooling.models import OPEN_FOR_SQL, Pool, PoolItem


@dataclass(slots=True)
class Judged:
    """A judgement just recorded by `submit_label`, with what the rater API answers about it."""

    id: int
    pool: str
    qid: str
    query: str
    docid: str
    title: str
    grade: int | None
    note: str
    seconds: float
    created_at: Any
    unrateable: bool = False
    facets: dict[str, Any] = field(default_factory=dict)


# A plain grade (no facets asked or given, not unrateable) on the rater's active lease, in one statement:
# the same checks as `_SUBMIT_SQL` (the assignment is theirs and locked, they still rate the pool, the
# item is not judged by them yet, the grade is on a rubric without facets); when they pass, the judgement,
# the item's counters and the assignment's state, and the answer's fields. Committed synchronously: a
# judgement answered 201 is durable. `done` returns the pool of the ended lease, for a lease to follow.
_SUBMIT_CTES = """a AS (
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
  SELECT item_id, rater_id, rubric_id, %(grade)s, false, '{}', %(note)s, %(seconds)s, false, %(now)s,
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
  RETURNING pool_id
)"""
_SUBMIT_COLUMNS = "judged.id, a.pool_name, t.qid, t.query, d.docid, d.title"
_SUBMIT_FROM = """FROM a
LEFT JOIN judged ON true
JOIN pooling_topic t ON t.id = a.topic_id
JOIN pooling_document d ON d.id = a.document_id"""
_SUBMIT_ONE_SQL = f"""
WITH {_SUBMIT_CTES}
SELECT {_SUBMIT_COLUMNS}, {PAGES_SQL}
{_SUBMIT_FROM}
"""
# The key press in one statement: `_SUBMIT_ONE_SQL`, then, only once its lease has ended (`done`), the
# lease of `leasing._LEASE_SQL` in the same pool (its CTEs run after `done`, whose row they read: the
# rater's one live lease is over before the next is inserted). The statement's snapshot still shows the
# ended lease as live, so there is no live lease to resume (a rater holds one per pool); and the lease
# commits with the judgement, synchronously. An answer of the judgement alone (no lease) says, in its
# last column, whether `leasing.lease_next` may still find the next item: an adaptive pool (not depth-k,
# `Pool.adaptive`) it may extend, or an item open for the rater that the lease passed over (SKIP LOCKED: a
# racing lease held it, which may leave it room). Otherwise (the last key press of a depth pool: nothing
# open) there is nothing left and no second lease is tried.
_SUBMIT_AND_LEASE_SQL = f"""
WITH {_SUBMIT_CTES},
{leasing.lease_ctes(live_id="NULL::bigint", pool="p.id = (SELECT pool_id FROM done)", commit="1")}
SELECT {_SUBMIT_COLUMNS}, lease.*,
  CASE WHEN NOT EXISTS (SELECT 1 FROM chosen) THEN
    (SELECT p.strategy <> '{Pool.Strategy.DEPTH.value}' FROM pooling_pool p
     WHERE p.id = (SELECT pool_id FROM rater))
    OR EXISTS (SELECT 1 FROM pooling_poolitem pi
               WHERE pi.pool_id = (SELECT pool_id FROM rater) AND {OPEN_FOR_SQL})
  END,
  {PAGES_SQL}
{_SUBMIT_FROM}
LEFT JOIN (SELECT {leasing.LEASE_COLUMNS} {leasing.LEASE_FROM}) lease ON true
"""


def is_plain(grade: int | None, unrateable: bool, facets: dict[str, Any] | None) -> bool:
    """A grade alone (not unrateable, no facets given, an integer of 32 bits): what the one statement, and
    the locking query's check of the rubric, take; any other label goes through `validate_label`."""
    return not unrateable and not facets and type(grade) is int and -(2**31) <= grade < 2**31


class LabelInput(TypedDict, total=False):
    """A label as `submit_label` and `submit_and_lease` take it (`SubmitSerializer`'s fields): a grade of the
    rubric or `unrateable` (then no grade), facets by name, a note, the seconds the rater spent."""

    grade: Required[int | None]
    unrateable: bool
    facets: dict[str, Any] | None
    note: str
    seconds: float


@dataclass(frozen=True, slots=True)
class Label:
    """A `LabelInput` with its defaults, its note cleaned (`clean_note`) and its seconds bounded."""

    grade: int | None
    unrateable: bool
    facets: dict[str, Any] | None
    note: str
    seconds: float

    @classmethod
    def of(cls, label: LabelInput) -> Label:
        seconds = max(0.0, min(float(label.get("seconds", 0.0)), MAX_SECONDS))
        return cls(label["grade"], label.get("unrateable", False), label.get("facets"),
                   clean_note(label.get("note", "")), seconds)  # fmt: skip

    @property
    def plain(self) -> bool:
        return is_plain(self.grade, self.unrateable, self.facets)


def submit_label(*, assignment: int, rater: User, **label: Unpack[LabelInput]) -> Judged:
    """Record the rater's label for the item of their assignment `assignment` (an id) and end the lease.
    A lease that has expired is still honoured if the item has room for this judgement. Raises
    Assignment.DoesNotExist when the assignment is not theirs, JudgingError for any refusal (no longer a
    rater, skipped, judged already, a label the rubric does not allow, a note too long); nothing changed
    then. On PostgreSQL a plain grade (no facets asked or given, not unrateable) on an active lease is one
    statement (`_SUBMIT_ONE_SQL`); everything else, and every other database, takes the portable path
    (`_submit_orm`)."""
    return _submit(assignment=assignment, rater=rater, label=Label.of(label), sql=_SUBMIT_ONE_SQL)[0]


def submit_and_lease(
    *, assignment: int, rater: User, **label: Unpack[LabelInput]
) -> tuple[Judged, leasing.Lease | None]:
    """The key press: `submit_label`, then `leasing.lease_next` in the judgement's pool for the same rater
    (None when nothing is left for them, or they no longer rate the pool: the judgement stands). The same
    refusals as `submit_label`, and then nothing is leased. On PostgreSQL a plain grade on an active lease
    and the lease of the next open item are one statement (`_SUBMIT_AND_LEASE_SQL`); the rest takes the
    two steps."""
    judged, lease, more = _submit(
        assignment=assignment, rater=rater, label=Label.of(label), sql=_SUBMIT_AND_LEASE_SQL
    )
    if lease is None and more:
        try:
            lease = leasing.lease_next(pool=judged.pool, rater=rater)
        except NotARater:
            lease = None  # taken off the pool since: the judgement stands
    return judged, lease


def _submit(
    *, assignment: int, rater: User, label: Label, sql: str
) -> tuple[Judged, leasing.Lease | None, bool]:
    """`sql` (`_SUBMIT_ONE_SQL`, or `_SUBMIT_AND_LEASE_SQL`) for a plain grade on PostgreSQL, else the
    portable path; with the lease the statement made, if it made one, and whether `leasing.lease_next`
    may find one when it did not (always after the portable path)."""
    if label.plain and connection.vendor == "postgresql":
        now = timezone.now()
        params = {"assignment": assignment, "rater": rater.pk, "grade": label.grade, "note": label.note,
                  "seconds": label.seconds, "now": now}  # fmt: skip
        try:
            row = one_row(sql, params)
        except IntegrityError:
            row = None  # a racing submit of the same item (or lease): the portable path names the refusal
        if row is not None and row[0] is not None:
            judged_id, pool_name, qid, query, docid, title = row[:6]
            judged = Judged(id=judged_id, pool=pool_name, qid=qid, query=query, docid=docid, title=title,
                            grade=label.grade, note=label.note, seconds=label.seconds,
                            created_at=now)  # fmt: skip
            if len(row) == 6:  # (`_SUBMIT_ONE_SQL`)
                return judged, None, True
            if row[6] is not None:
                return judged, leasing.lease_of_row(row[6:-1]), False
            return judged, None, row[-1] is not False
    judgement = _submit_orm(assignment=assignment, rater=rater, label=label)
    pool_name, qid, query, docid, title = PoolItem.objects.values_list(
        "pool__name", "topic__qid", "topic__query", "document__docid", "document__title"
    ).get(pk=judgement.item_id)
    judged = Judged(
        id=judgement.pk, pool=pool_name, qid=qid, query=query, docid=docid, title=title,
        grade=judgement.grade, note=judgement.note, seconds=judgement.seconds,
        created_at=judgement.created_at, unrateable=judgement.unrateable, facets=judgement.facets,
    )  # fmt: skip
    return judged, None, True


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


def _submit_orm(*, assignment: int, rater: User, label: Label) -> Judgement:
    """The portable path of `submit_label` and `submit_and_lease`."""
    grade, unrateable, facets = label.grade, label.unrateable, label.facets
    # The checks ride on the locking query (one round trip instead of five): still a rater of the pool,
    # already judged, the rubric has facets, and — for a plain grade — it is on the rubric. Anything but
    # a plain grade of a facet-less rubric is validated by `validate_label` as ever.
    plain = label.plain
    lock = "FOR UPDATE OF a" if connection.vendor == "postgresql" else ""
    params = {"assignment": assignment, "grade": int(grade) if plain and grade is not None else None}
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_SUBMIT_SQL.format(lock=lock), params)
            row = cursor.fetchone()
        if row is None or row[2] != rater.pk:  # another rater's assignment is not found, as none
            raise Assignment.DoesNotExist("Assignment matching query does not exist.")
        state, item_id, rater_id, judging_id, rubric_id, is_member, judged, has_facets, grade_ok = row
        if judging_id is None:
            raise Judging.DoesNotExist("Pool has no judging.")
        if not is_member:
            raise NotARater("you are no longer a rater of this pool")
        if plain and grade_ok and not has_facets:
            facets = {}  # what `validate_label` returns for a grade of the rubric, no facet asked or given
        else:
            facets = validate_label(Rubric.objects.get(pk=rubric_id), grade, unrateable, facets)
        if state == Assignment.State.DONE:
            raise judged_already(item_id=item_id, rater_id=rater_id)
        if state == Assignment.State.SKIPPED:
            raise JudgingError("you skipped this item")
        if state == Assignment.State.EXPIRED:
            item = PoolItem.objects.select_for_update().get(pk=item_id)
            if not item.needs_judgement():
                raise JudgingError("your lease on this item expired and it went to another rater")
        if judged:
            raise judged_already(item_id=item_id, rater_id=rater_id)
        now = timezone.now()
        judgement = Judgement.objects.create(
            item_id=item_id,
            rater_id=rater_id,
            rubric_id=rubric_id,
            grade=None if unrateable else grade,
            unrateable=unrateable,
            facets=facets,
            note=label.note,
            seconds=label.seconds,
            created_at=now,
            updated_at=now,
        )
        leases = 1 if state == Assignment.State.ACTIVE else 0
        with connection.cursor() as cursor:
            cursor.execute(_JUDGED_SQL, [leases, item_id])
            cursor.execute(
                "UPDATE judgements_assignment SET state = %s WHERE id = %s",
                [Assignment.State.DONE.value, assignment],
            )
    return judgement


def judged_already(*, item_id: int, rater_id: int) -> JudgingError:
    """The refusal of a second judgement of one item by one rater, naming how to revise the first: the API
    call (with that judgement's id) and the judging page's key."""
    judgement_id = (
        Judgement.objects.filter(item_id=item_id, rater_id=rater_id).values_list("pk", flat=True).first()
    )
    where = f"PATCH /api/judgements/{judgement_id}/" if judgement_id else "PATCH /api/judgements/<id>/"
    return JudgingError(
        f"you have judged this item already: revise that judgement ({where}; u on the judging page)"
    )

"""The rater loop's two steps (`leasing.lease_next`, `submission.submit_label`) by their rules, on the
database in use: PostgreSQL takes the single statement of each wherever it applies, SQLite the portable
path, and both must give these answers."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgements import errors, lease_ends, leasing, prepared, submission
from judgements.models import Assignment, Judgement
from pooling.models import Pool, PoolItem
from tests.conftest import require_services
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def counters_hold(pool: Pool) -> None:
    """Every item's counters are what its rows say: live leases, and judgements (but the gold item's,
    whose count the test sets)."""
    now = timezone.now()
    for item in PoolItem.objects.filter(pool=pool):
        live = Assignment.objects.filter(item=item, state=Assignment.State.ACTIVE)
        assert item.active_leases == live.count(), item
        assert item.gold or item.num_judgements == Judgement.objects.filter(item=item).count(), item
        assert not live.filter(expires_at__lte=now - timedelta(hours=2)).exists()


def lease(pool: Pool, rater) -> leasing.Lease | None:
    found = leasing.lease_next(pool=pool, rater=rater)
    by_name = leasing.lease_next(pool=pool.name, rater=rater)  # the API's way: the same live lease
    assert (found is None) == (by_name is None)
    assert found is None or by_name is None or found.assignment == by_name.assignment
    counters_hold(pool)
    if found is not None:
        assignments = Assignment.objects.select_related("item__topic", "item__document")
        assignment = assignments.get(pk=found.assignment)
        assert (assignment.rater_id, assignment.state) == (rater.pk, Assignment.State.ACTIVE)
        assert (found.qid, found.docid) == (assignment.item.topic.qid, assignment.item.document.docid)
        assert found.expires_at - found.leased_at == timedelta(minutes=pool.judging.lease_minutes or 10)
    return found


def judge(pool: Pool, rater, found: leasing.Lease, grade: int) -> submission.Judged:
    judged = submission.submit_label(
        assignment=found.assignment, rater=rater, grade=grade, note=" n ", seconds=3
    )
    stored = Judgement.objects.get(pk=judged.id)
    assert (stored.rater_id, stored.grade, stored.note, stored.seconds) == (rater.pk, grade, "n", 3.0)
    assert (judged.pool, judged.qid, judged.docid, judged.grade, judged.note) == (
        pool.name, found.qid, found.docid, grade, "n")  # fmt: skip
    assert Assignment.objects.get(pk=found.assignment).state == Assignment.State.DONE
    counters_hold(pool)
    return judged


def test_the_loop_leases_and_judges_by_its_rules():
    raters = [make_user(f"r{i}") for i in range(3)]
    pool = make_pool(raters=raters, name="hot", judgements_per_item=2)  # q1: 6 items, q2: 4 items
    r1, r2, r3 = raters
    outsider = make_user("outsider")
    with pytest.raises(errors.JudgingError):
        leasing.lease_next(pool=pool, rater=outsider)
    with pytest.raises(errors.JudgingError):
        leasing.lease_next(pool="no-such-pool", rater=r1)
    assert not Assignment.objects.exists()

    first = lease(pool, r1)  # no last topic: the first item of the pool
    assert first is not None and first.qid == "q1"
    assert first.rubric["grades"][0]["value"] == 3 and set(first.rubric) >= {"grades", "facets"}
    assert lease(pool, r1).assignment == first.assignment  # the live lease, as it is
    with pytest.raises(Assignment.DoesNotExist):  # another rater's assignment is not theirs to judge
        submission.submit_label(assignment=first.assignment, rater=r2, grade=1)
    judge(pool, r1, first, 3)
    with pytest.raises(errors.JudgingError, match="judged this item already"):
        submission.submit_label(assignment=first.assignment, rater=r1, grade=2)
    assert Judgement.objects.count() == 1

    # r2 on q2 (its last topic) leases q2 first, even though q1 has open items earlier in the order
    q2_item = PoolItem.objects.filter(pool=pool, topic__qid="q2").order_by("blind_key").first()
    Assignment.objects.create(item=q2_item, pool=pool, rater=r2, state=Assignment.State.SKIPPED,
                              leased_at=timezone.now(), expires_at=timezone.now())  # fmt: skip
    on_topic = lease(pool, r2)
    assert on_topic is not None and on_topic.qid == "q2"

    # r2's lease expires: the next lease reactivates their own assignment on the same item
    lease_ends.sweep_expired_leases(now=timezone.now() + timedelta(hours=1))
    assert Assignment.objects.get(pk=on_topic.assignment).state == Assignment.State.EXPIRED
    again = lease(pool, r2)
    assert again is not None and again.assignment == on_topic.assignment and again.docid == on_topic.docid

    # a gold item is served to every rater even when it has all its judgements
    judge(pool, r2, again, 1)
    gold = PoolItem.objects.get(pk=Assignment.objects.get(pk=first.assignment).item_id)
    PoolItem.objects.filter(pk=gold.pk).update(num_judgements=gold.required_judgements, gold=True)
    served = lease(pool, r3)
    assert served is not None and served.docid == first.docid

    # a skipped item is never offered again; the rest of the pool, then nothing left
    lease_ends.skip_item(assignment=Assignment.objects.get(pk=served.assignment))
    everything = []
    while (found := lease(pool, r3)) is not None:
        everything.append(found.docid)
        judge(pool, r3, found, 0)
    assert len(everything) == len(set(everything)) > 0 and served.docid not in everything
    assert lease(pool, r3) is None  # nothing left


def test_the_loop_judges_an_unrateable_label_and_refuses_a_bad_one_changing_nothing():
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    found = leasing.lease_next(pool=pool, rater=rater)
    for bad in ({"grade": 9}, {"grade": 2**40}, {"grade": 2, "facets": {"colour": "red"}},
                {"grade": 2, "note": "x" * 10_001}):  # fmt: skip
        with pytest.raises(errors.JudgingError):
            submission.submit_label(assignment=found.assignment, rater=rater, **bad)
    assert not Judgement.objects.exists()
    assert Assignment.objects.get(pk=found.assignment).state == Assignment.State.ACTIVE
    judged = submission.submit_label(assignment=found.assignment, rater=rater, grade=None, unrateable=True)
    assert (judged.grade, judged.unrateable, judged.facets) == (None, True, {})
    assert Judgement.objects.get(pk=judged.id).unrateable


def test_the_single_statement_answers_the_api_with_its_prepared_plans_refreshed_as_tables_grow():
    require_services()
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    prepared.plan_class["size"] = "99 99"
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/")
    assert leased.status_code == 200
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('judgements_assignment') / 8192, "
            "pg_relation_size('judgements_judgement') / 8192"
        )
        pages = cursor.fetchone()
    assert prepared.plan_class["size"] == f"{int(pages[0]).bit_length()} {int(pages[1]).bit_length()}"
    judged = client.post(f"/api/assignments/{leased.json()['assignment']}/judgement/", {"grade": 0},
                         format="json")  # fmt: skip
    assert judged.status_code == 201


def synchronous_commit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        return str(cursor.fetchone()[0])


def test_only_a_lease_that_is_its_own_transaction_commits_asynchronously():
    require_services()
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    assert synchronous_commit() == "on"
    lease = leasing.lease_next(pool=pool.name, rater=rater)  # inside the test's transaction
    assert lease is not None and synchronous_commit() == "on"
    assert submission.submit_label(assignment=lease.assignment, rater=rater, grade=1).grade == 1
    assert synchronous_commit() == "on"  # a judgement never turns it off
    # what an API request runs (autocommit: the statement is its own transaction), seen from inside
    params = {"pool": pool.name, "rater": rater.pk, "now": timezone.now(), "own_transaction": True}
    assert prepared.one_row(leasing._LEASE_SQL, params)[0] is not None
    assert synchronous_commit() == "off"


class _Undo(Exception):
    pass


def test_the_key_press_is_the_two_steps_and_on_postgresql_one_statement():
    r1, r2 = make_user("r1"), make_user("r2")
    pool = make_pool(raters=[r1, r2], name="hot", judgements_per_item=2)
    current = leasing.lease_next(pool=pool, rater=r1)
    pressed = 0
    while current is not None:
        label = {"grade": pressed % 4, "note": " n ", "seconds": 2.5}
        with pytest.raises(_Undo), transaction.atomic():  # what the two steps would have done, undone
            steps = (submission.submit_label(assignment=current.assignment, rater=r1, **label),
                     leasing.lease_next(pool=pool.name, rater=r1))  # fmt: skip
            raise _Undo
        with CaptureQueriesContext(connection) as queries:
            judged, following = submission.submit_and_lease(assignment=current.assignment, rater=r1, **label)
        if connection.vendor == "postgresql" and following is not None:
            sent = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
            assert len(sent) == 1 and sent[0].startswith(submission._SUBMIT_AND_LEASE_SQL)
        stored = Judgement.objects.get(pk=judged.id)
        assert (stored.rater_id, stored.grade, stored.note, stored.seconds) == (r1.pk, pressed % 4, "n", 2.5)
        assert dataclasses.replace(judged, id=0, created_at=None) == dataclasses.replace(
            steps[0], id=0, created_at=None)  # fmt: skip
        assert Assignment.objects.get(pk=current.assignment).state == Assignment.State.DONE
        blank = {"assignment": 0, "leased_at": None, "expires_at": None}
        assert (following and dataclasses.replace(following, **blank)) == (
            steps[1] and dataclasses.replace(steps[1], **blank))  # fmt: skip
        counters_hold(pool)
        current, pressed = following, pressed + 1
    assert pressed == PoolItem.objects.filter(pool=pool).count()  # every item once, then nothing left


def test_a_refused_key_press_leases_nothing():
    r1, r2 = make_user("r1"), make_user("r2")
    pool = make_pool(raters=[r1, r2], name="hot")
    mine = leasing.lease_next(pool=pool, rater=r1)
    with pytest.raises(Assignment.DoesNotExist):  # another rater's assignment
        submission.submit_and_lease(assignment=mine.assignment, rater=r2, grade=1)
    submission.submit_label(assignment=mine.assignment, rater=r1, grade=1)
    with pytest.raises(errors.JudgingError, match="judged this item already"):
        submission.submit_and_lease(assignment=mine.assignment, rater=r1, grade=2)
    assert Assignment.objects.count() == 1 and Judgement.objects.count() == 1
    counters_hold(pool)


def test_psycopg_caches_the_conversion_of_every_hot_statement():
    from psycopg import _queries

    for sql in (leasing._LEASE_SQL, submission._SUBMIT_ONE_SQL, submission._SUBMIT_AND_LEASE_SQL):
        assert len(f"{sql}-- size class 99 99\n".encode()) <= _queries.MAX_CACHED_STATEMENT_LENGTH


def test_the_last_key_press_of_a_depth_pool_is_one_statement_and_an_adaptive_pool_is_still_extended():
    rater = make_user("r1")
    pool = make_pool(raters=[rater], name="hot")
    current = leasing.lease_next(pool=pool, rater=rater)
    while current is not None:
        with CaptureQueriesContext(connection) as queries:
            _, current = submission.submit_and_lease(assignment=current.assignment, rater=rater, grade=1)
        if connection.vendor == "postgresql":  # the last too: nothing open, no second lease tried
            sent = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
            assert len(sent) == 1 and sent[0].startswith(submission._SUBMIT_AND_LEASE_SQL)
    assert Judgement.objects.filter(rater=rater).count() == PoolItem.objects.filter(pool=pool).count()
    assert leasing.lease_next(pool=pool, rater=rater) is None

    # an adaptive pool whose selected items are all judged: the key press asks its strategy for more
    other = make_user("r2")
    adaptive = make_pool(raters=[other], name="grows", strategy="mtf", budget=6, seed=3)
    selected = PoolItem.objects.filter(pool=adaptive, selected=True)
    current = leasing.lease_next(pool=adaptive, rater=other)
    judged_first = selected.count()
    for _ in range(judged_first):
        assert current is not None
        _, current = submission.submit_and_lease(assignment=current.assignment, rater=other, grade=2)
    assert current is not None and selected.count() > judged_first

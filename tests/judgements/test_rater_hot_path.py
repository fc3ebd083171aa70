"""The rater's hot path (`POST /api/pools/<pool>/next/`, `POST /api/assignments/<id>/judgement/`): the lean
answers against the DRF views they stand in for, byte for byte; every error still answered as the DRF view
answers it; and on PostgreSQL the one-statement services against the general ones, step by step."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import Count
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from judgements import api, errors, leasing, membership, prepared, rubrics
from judgements.models import Assignment, Judgement
from pooling.models import Pool, PoolItem
from pooling.permissions import MANAGERS_GROUP
from tests.conftest import require_services
from tests.factories import make_pool, make_user

pytestmark = pytest.mark.django_db

HEADERS = ("Content-Type", "Allow", "Vary")


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def lean(monkeypatch):
    """Records which lean function answered (True) or handed over to the DRF view (False); `lean.off()`
    hands everything to the DRF views, `lean.on()` brings the lean answers back."""

    class Lean(list):
        wrappers: dict[str, Any] = {}

        def off(self) -> None:
            for name in self.wrappers:
                monkeypatch.setattr(api, name, lambda *args: None)

        def on(self) -> None:
            for name, wrapper in self.wrappers.items():
                monkeypatch.setattr(api, name, wrapper)

    answered = Lean()
    for name in ("lean_next", "lean_judgement"):

        def wrapper(*args: Any, _original: Any = getattr(api, name), _name: str = name) -> Any:
            response = _original(*args)
            answered.append((_name, response is not None))
            return response

        answered.wrappers[name] = wrapper
    answered.on()
    return answered


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def session_client(user, *, csrf: bool = True) -> APIClient:
    """Logged in with a session, CSRF enforced as for a browser; with `csrf` a valid token is sent."""
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    if csrf:
        secret = "a" * 32
        client.cookies["csrftoken"] = secret
        client.credentials(HTTP_X_CSRFTOKEN=secret)
    return client


def judge_url(assignment: int) -> str:
    return f"/api/assignments/{assignment}/judgement/"


def same_answer(first, second) -> None:
    assert first.status_code == second.status_code
    assert first.content == second.content
    for header in HEADERS:
        assert first.headers.get(header) == second.headers.get(header), header


def rendered_judgement(pk: int) -> bytes:
    judgement = (
        Judgement.objects.select_related("item__pool", "item__topic", "item__document")
        .annotate(num_revisions=Count("revisions"))
        .get(pk=pk)
    )
    return JSONRenderer().render(api.JudgementSerializer(judgement).data)


# ------------------------------------------------------------------------------- lean vs DRF answers


@pytest.mark.parametrize("auth", ["token", "session"])
def test_the_lean_next_answers_byte_for_byte_as_the_drf_view(lean, auth):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater) if auth == "token" else session_client(rater)
    first = client.post(f"/api/pools/{pool.name}/next/")
    assert first.status_code == 200 and lean == [("lean_next", True)]
    payload = first.json()
    assert set(payload) == {"assignment", "state", "leased_at", "expires_at", "pool", "topic", "document",
                            "rubric"}  # fmt: skip
    assert payload["rubric"]["grades"][0] == {
        "value": 3, "label": "Perfect", "key": "3", "description": rubrics.DEFAULT_GRADES[0]["description"]
    }  # fmt: skip
    lean.off()
    again = client.post(f"/api/pools/{pool.name}/next/")  # the live lease, answered by the DRF view
    same_answer(first, again)
    assert Assignment.objects.count() == 1


@pytest.mark.parametrize("auth", ["token", "session"])
def test_the_lean_judgement_answers_as_the_serializer_renders_the_stored_judgement(lean, auth):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater) if auth == "token" else session_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    body = {"grade": 2, "note": "  on topic \u2028 mostly  ", "seconds": 7}
    answer = client.post(judge_url(leased["assignment"]), body, format="json")
    assert answer.status_code == 201 and lean[-1] == ("lean_judgement", True)
    assert answer.content == rendered_judgement(answer.json()["id"])
    assert b"\\u2028" in answer.content  # escaped as JSONRenderer does
    stored = Judgement.objects.get()
    assert (stored.grade, stored.note, stored.seconds) == (2, "on topic \u2028 mostly", 7.0)
    assert Assignment.objects.get().state == Assignment.State.DONE
    item = PoolItem.objects.get(pk=stored.item_id)
    assert (item.num_judgements, item.active_leases) == (1, 0)

    lean.off()
    other = client.post(f"/api/pools/{pool.name}/next/").json()
    drf = client.post(judge_url(other["assignment"]), body, format="json")
    assert drf.status_code == 201
    assert drf.content == rendered_judgement(drf.json()["id"])
    for header in HEADERS:
        assert answer.headers.get(header) == drf.headers.get(header), header


def test_the_existing_api_tests_take_the_lean_path_with_a_forced_user(lean):
    """DRF's APIClient.force_authenticate (what the API tests use) is honoured, so they run the lean path."""
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = APIClient()
    client.force_authenticate(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    assert client.post(judge_url(leased["assignment"]), {"grade": 1}, format="json").status_code == 201
    assert lean == [("lean_next", True), ("lean_judgement", True)]


def both_paths(lean, request) -> Any:
    """The same request with the lean path on, then with the DRF view only: the same answer, nothing
    changed in between (a refusal changes nothing). Returns the answer; the lean path is on again."""
    lean.on()
    first = request()
    lean.off()
    second = request()
    lean.on()
    same_answer(first, second)
    return first


@pytest.mark.parametrize(
    ("who", "status", "detail"),
    [
        ("anonymous", 401, "Authentication credentials were not provided."),
        ("bad token", 401, "Invalid token."),
        ("rater of another pool", 404, None),
        ("manager, not a rater", 403, "you are not a rater of this pool"),
        ("session without csrf", 403, "CSRF Failed: CSRF cookie not set."),
    ],
)
def test_next_refusals_are_the_drf_views(lean, who, status, detail):
    rater, other = make_user("rater"), make_user("other")
    pool = make_pool(raters=[rater], name="hot")
    make_pool(raters=[other], name="elsewhere")
    manager = make_user("manager")
    manager.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    pool.managers.add(manager)  # a manager of this pool who does not rate it
    client = {
        "anonymous": APIClient,
        "bad token": lambda: APIClient(HTTP_AUTHORIZATION="Token " + "0" * 40),
        "rater of another pool": lambda: token_client(other),
        "manager, not a rater": lambda: token_client(manager),
        "session without csrf": lambda: session_client(rater, csrf=False),
    }[who]()
    answer = both_paths(lean, lambda: client.post(f"/api/pools/{pool.name}/next/"))
    assert answer.status_code == status
    if detail is not None:
        assert answer.json() == {"detail": detail}
    assert not Assignment.objects.exists()


def test_next_of_an_unknown_pool_is_the_drf_views_404(lean):
    rater = make_user("rater")
    make_pool(raters=[rater], name="hot")
    client = token_client(rater)
    assert both_paths(lean, lambda: client.post("/api/pools/no-such-pool/next/")).status_code == 404
    assert lean == [("lean_next", False)]


def test_nothing_left_is_the_same_204_as_the_drf_view(lean):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    PoolItem.objects.filter(pool=pool).update(num_judgements=5)
    client = token_client(rater)
    answer = both_paths(lean, lambda: client.post(f"/api/pools/{pool.name}/next/"))
    assert answer.status_code == 204 and answer.content == b"" and "Content-Type" not in answer.headers
    assert lean == [("lean_next", True)]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"grade": 9}, "detail", "grade 9 is not on the rubric (0, 1, 2, 3)"),
        ({"grade": "high"}, "grade", "A valid integer is required."),
        ({"grade": True}, "grade", "A valid integer is required."),
        ({}, "detail", "choose a grade"),
        ({"grade": 2, "seconds": -1}, "seconds", "Ensure this value is greater than or equal to 0.0."),
        ({"grade": 2, "note": "x" * 10_001}, "note", "Ensure this field has no more than 10000 characters."),
        ({"grade": 2, "note": None}, "note", "This field may not be null."),
        ({"grade": 2, "facets": {"colour": "red"}}, "detail", "unknown facets: colour"),
        ({"grade": 2, "unrateable": True}, "detail", "an unrateable judgement has no grade"),
        ({"grade": 2**40}, "detail", f"grade {2**40} is not on the rubric (0, 1, 2, 3)"),
    ],
)
def test_a_bad_judgement_is_the_drf_views_400_naming_the_field(lean, body, field, message):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    answer = both_paths(lean, lambda: client.post(judge_url(leased["assignment"]), body, format="json"))
    assert answer.status_code == 400
    detail = answer.json()[field]
    assert (detail if isinstance(detail, str) else detail[0]) == message
    assert not Judgement.objects.exists()
    assert Assignment.objects.get().state == Assignment.State.ACTIVE


def test_judgement_refusals_are_the_drf_views(lean):
    rater, second = make_user("rater"), make_user("second")
    pool = make_pool(raters=[rater, second], name="hot")
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    url = judge_url(leased["assignment"])

    # another rater's assignment, an unknown one, a malformed id: 404
    malformed = "/api/assignments/x1/judgement/"
    for who, path in [(token_client(second), url), (client, judge_url(10**9)), (client, malformed)]:
        answer = both_paths(lean, lambda who=who, path=path: who.post(path, {"grade": 1}, format="json"))
        assert answer.status_code == 404
    lean.clear()

    # already judged: 400
    assert client.post(url, {"grade": 1}, format="json").status_code == 201
    twice = both_paths(lean, lambda: client.post(url, {"grade": 2}, format="json"))
    assert twice.status_code == 400 and "judged this item already" in twice.json()["detail"]
    assert Judgement.objects.count() == 1


def test_a_judgement_after_leaving_the_pool_or_on_an_expired_lease_is_the_drf_views(lean):
    rater, second = make_user("rater"), make_user("second")
    pool = make_pool(raters=[rater, second], name="hot")
    client = token_client(rater)
    first = client.post(f"/api/pools/{pool.name}/next/").json()
    membership.remove_rater(pool=pool, rater=rater)
    gone = both_paths(lean, lambda: client.post(judge_url(first["assignment"]), {"grade": 1}, format="json"))
    assert gone.status_code == 404

    membership.setup_judging(pool=pool, raters=[rater])
    assert not PoolItem.objects.filter(pool=pool, active_leases__gt=0).exists()
    PoolItem.objects.filter(pool=pool).exclude(pk=PoolItem.objects.filter(pool=pool).first().pk).delete()
    Assignment.objects.all().delete()
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    assignment = Assignment.objects.get(pk=leased["assignment"])
    leasing.sweep_expired_leases(now=assignment.expires_at)
    token_client(second).post(f"/api/pools/{pool.name}/next/")
    taken = both_paths(lean, lambda: client.post(judge_url(assignment.pk), {"grade": 1}, format="json"))
    assert taken.status_code == 400 and "went to another rater" in taken.json()["detail"]


def test_an_expired_lease_with_room_is_still_judged(lean):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    assignment = Assignment.objects.get(pk=leased["assignment"])
    leasing.sweep_expired_leases(now=assignment.expires_at)
    answer = client.post(judge_url(assignment.pk), {"grade": 1}, format="json")
    assert answer.status_code == 201
    assert answer.content == rendered_judgement(answer.json()["id"])


# --------------------------------------------------- the two steps of the loop, on the database in use


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


def judge(pool: Pool, rater, found: leasing.Lease, grade: int) -> leasing.Judged:
    judged = leasing.submit_label(
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
        leasing.submit_label(assignment=first.assignment, rater=r2, grade=1)
    judge(pool, r1, first, 3)
    with pytest.raises(errors.JudgingError, match="judged this item already"):
        leasing.submit_label(assignment=first.assignment, rater=r1, grade=2)
    assert Judgement.objects.count() == 1

    # r2 on q2 (its last topic) leases q2 first, even though q1 has open items earlier in the order
    q2_item = PoolItem.objects.filter(pool=pool, topic__qid="q2").order_by("blind_key").first()
    Assignment.objects.create(item=q2_item, pool=pool, rater=r2, state=Assignment.State.SKIPPED,
                              leased_at=timezone.now(), expires_at=timezone.now())  # fmt: skip
    on_topic = lease(pool, r2)
    assert on_topic is not None and on_topic.qid == "q2"

    # r2's lease expires: the next lease reactivates their own assignment on the same item
    leasing.sweep_expired_leases(now=timezone.now() + timedelta(hours=1))
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
    leasing.skip_item(assignment=Assignment.objects.get(pk=served.assignment))
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
            leasing.submit_label(assignment=found.assignment, rater=rater, **bad)
    assert not Judgement.objects.exists()
    assert Assignment.objects.get(pk=found.assignment).state == Assignment.State.ACTIVE
    judged = leasing.submit_label(assignment=found.assignment, rater=rater, grade=None, unrateable=True)
    assert (judged.grade, judged.unrateable, judged.facets) == (None, True, {})
    assert Judgement.objects.get(pk=judged.id).unrateable


def test_the_single_statement_answers_the_api_with_its_prepared_plans_refreshed_as_tables_grow(lean):
    require_services()
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    prepared.plan_class["size"] = "99 99"
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/")
    assert leased.status_code == 200 and lean == [("lean_next", True)]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('judgements_assignment') / 8192, "
            "pg_relation_size('judgements_judgement') / 8192"
        )
        pages = cursor.fetchone()
    assert prepared.plan_class["size"] == f"{int(pages[0]).bit_length()} {int(pages[1]).bit_length()}"
    judged = client.post(judge_url(leased.json()["assignment"]), {"grade": 0}, format="json")
    assert judged.status_code == 201 and lean[-1] == ("lean_judgement", True)


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
    assert leasing.submit_label(assignment=lease.assignment, rater=rater, grade=1).grade == 1
    assert synchronous_commit() == "on"  # a judgement never turns it off
    # what an API request runs (autocommit: the statement is its own transaction), seen from inside
    params = {"pool": pool.name, "rater": rater.pk, "now": timezone.now(), "own_transaction": True}
    assert prepared.one_row(leasing._LEASE_SQL, params)[0] is not None
    assert synchronous_commit() == "off"

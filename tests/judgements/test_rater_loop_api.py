"""The rater loop in the API (`judgements/rater_api.py`): `POST /api/pools/<pool>/next/`,
`POST /api/assignments/<id>/judgement/` and the loop in one request, `…/judgement-and-next/`. What each
answers — payloads as the serializers render the stored rows, DRF's JSON and headers — who may call them
(token, session with CSRF; no test-only shortcut), and every refusal: its code, its message, and nothing
changed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db.models import Count
from rest_framework.authtoken.models import Token
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from judgements import lease_ends, leasing, membership, rubrics
from judgements.models import Assignment, Judgement
from judgements.rater_api import lease_payload
from judgements.serializers import AssignmentPayloadSerializer, JudgementSerializer
from pooling.models import PoolItem
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_pool, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]


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


def loop_url(assignment: int) -> str:
    return f"/api/assignments/{assignment}/judgement-and-next/"


def rendered_judgement(pk: int) -> bytes:
    """The judgement as the DRF API renders it (`JudgementSerializer`, `JSONRenderer`)."""
    judgement = (
        Judgement.objects.select_related("item__pool", "item__topic", "item__document")
        .annotate(num_revisions=Count("revisions"))
        .get(pk=pk)
    )
    return JSONRenderer().render(JudgementSerializer(judgement).data)


def rendered_assignment(pk: int) -> dict[str, Any]:
    """The assignment as the DRF API renders it (`AssignmentPayloadSerializer`, as `/api/assignments/`)."""
    assignment = Assignment.objects.select_related(
        "item__pool__judging__rubric", "item__topic", "item__document"
    ).get(pk=pk)
    import json

    return json.loads(JSONRenderer().render(AssignmentPayloadSerializer(assignment).data))


def drf_headers(answer) -> None:
    assert answer.headers.get("Content-Type") == "application/json"
    assert answer.headers.get("Allow") == "POST, OPTIONS"
    assert answer.headers.get("Vary", "").split(", ")[0] == "Accept"  # (a session adds Cookie)


def nothing_changed() -> None:
    assert not Judgement.objects.exists()
    assert not Assignment.objects.exclude(state=Assignment.State.ACTIVE).exists()


# --------------------------------------------------------------------------------- what they answer


@pytest.mark.parametrize("auth", ["token", "session"])
def test_next_answers_the_item_as_the_api_renders_the_assignment_and_resumes_it(auth):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater) if auth == "token" else session_client(rater)
    first = client.post(f"/api/pools/{pool.name}/next/")
    assert first.status_code == 200
    drf_headers(first)
    payload = first.json()
    assert set(payload) == {"assignment", "state", "leased_at", "expires_at", "pool", "topic", "document",
                            "rubric"}  # fmt: skip
    assert payload["rubric"]["grades"][0] == {
        "value": 3, "label": "Perfect", "key": "3", "description": rubrics.DEFAULT_GRADES[0]["description"]
    }  # fmt: skip
    assert payload == rendered_assignment(payload["assignment"])
    again = client.post(f"/api/pools/{pool.name}/next/")  # the live lease, as it was
    assert again.status_code == 200 and again.content == first.content
    assert Assignment.objects.count() == 1


@pytest.mark.parametrize("auth", ["token", "session"])
def test_a_judgement_answers_as_the_serializer_renders_the_stored_judgement(auth):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater) if auth == "token" else session_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    body = {"grade": 2, "note": "  on topic \u2028 mostly  ", "seconds": 7}
    answer = client.post(judge_url(leased["assignment"]), body, format="json")
    assert answer.status_code == 201
    drf_headers(answer)
    assert answer.content == rendered_judgement(answer.json()["id"])
    assert b"\\u2028" in answer.content  # escaped as JSONRenderer does
    stored = Judgement.objects.get()
    assert (stored.grade, stored.note, stored.seconds) == (2, "on topic \u2028 mostly", 7.0)
    assert Assignment.objects.get().state == Assignment.State.DONE
    item = PoolItem.objects.get(pk=stored.item_id)
    assert (item.num_judgements, item.active_leases) == (1, 0)

    # a label through a form post (DRF's form parser) and one with facets and unrateable: the same answer
    other = client.post(f"/api/pools/{pool.name}/next/").json()
    by_form = client.post(judge_url(other["assignment"]), {"grade": 1, "seconds": "2.5"})
    assert by_form.status_code == 201 and by_form.content == rendered_judgement(by_form.json()["id"])
    third = client.post(f"/api/pools/{pool.name}/next/").json()
    unrateable = client.post(judge_url(third["assignment"]), {"unrateable": True}, format="json")
    assert unrateable.status_code == 201
    assert unrateable.content == rendered_judgement(unrateable.json()["id"])
    assert unrateable.json()["unrateable"] is True and unrateable.json()["grade"] is None


@pytest.mark.parametrize("auth", ["token", "session"])
def test_judgement_and_next_judges_and_leases_the_next_item_in_one_request(auth):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater) if auth == "token" else session_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    answer = client.post(loop_url(leased["assignment"]), {"grade": 3, "seconds": 4.5}, format="json")
    assert answer.status_code == 201
    drf_headers(answer)
    data = answer.json()
    assert set(data) == {"judgement", "next"}
    stored = Judgement.objects.get()
    assert data["judgement"]["id"] == stored.pk and stored.grade == 3
    assert JSONRenderer().render(data["judgement"]) == rendered_judgement(stored.pk)
    assert Assignment.objects.get(pk=leased["assignment"]).state == Assignment.State.DONE
    following = data["next"]
    assert following["assignment"] != leased["assignment"]
    assert following == rendered_assignment(following["assignment"])
    assert following["document"]["docid"] != leased["document"]["docid"]
    live = Assignment.objects.get(state=Assignment.State.ACTIVE)
    assert live.pk == following["assignment"] and live.rater == rater

    # the whole pool through this one request; the last answer has no next item, its judgement stands
    count = 1
    while following is not None:
        answer = client.post(loop_url(following["assignment"]), {"grade": 1}, format="json")
        assert answer.status_code == 201
        following = answer.json()["next"]
        count += 1
    assert count == PoolItem.objects.filter(pool=pool).count() == Judgement.objects.count()
    assert not Assignment.objects.filter(state=Assignment.State.ACTIVE).exists()
    assert client.post(f"/api/pools/{pool.name}/next/").status_code == 204


def keys_of(data: Any) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {key for value in data.values() for key in keys_of(value)}
    if isinstance(data, list):
        return {key for value in data for key in keys_of(value)}
    return set()


def test_the_payloads_never_carry_runs_ranks_scores_or_other_raters_grades():
    rater, other = make_user("rater"), make_user("zed-other")
    pool = make_pool(raters=[rater, other], name="hot", judgements_per_item=2)
    first = token_client(other)
    leased = first.post(f"/api/pools/{pool.name}/next/").json()
    first.post(judge_url(leased["assignment"]), {"grade": 3, "note": "SECRET-NOTE"}, format="json")
    PoolItem.objects.filter(pool=pool).update(gold=True)
    client = token_client(rater)
    answers = [client.post(f"/api/pools/{pool.name}/next/")]
    answers.append(client.post(loop_url(answers[0].json()["assignment"]), {"grade": 0}, format="json"))
    run_names = list(pool.runs.values_list("name", flat=True))
    assert run_names
    for answer in answers:
        text = answer.content.decode()
        assert "SECRET-NOTE" not in text and "zed-other" not in text
        assert not any(f'"{name}"' in text for name in run_names)
        keys = keys_of(answer.json())
        assert not keys & {"run", "runs", "rank", "ranks", "score", "gold", "provenance", "rater", "raters",
                           "consensus", "judgements", "item"}  # fmt: skip
    lease = answers[1].json()["next"]
    assert set(lease["document"]) == {"docid", "title", "url", "body"}
    assert set(lease["topic"]) == {"qid", "query", "description", "narrative"}


def test_nothing_left_is_a_204_without_a_body():
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    PoolItem.objects.filter(pool=pool).update(num_judgements=5)
    answer = token_client(rater).post(f"/api/pools/{pool.name}/next/")
    assert answer.status_code == 204 and answer.content == b"" and "Content-Type" not in answer.headers
    assert answer.headers.get("Allow") == "POST, OPTIONS"


def test_the_lease_payload_is_the_one_function_every_answer_uses():
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    lease = leasing.lease_next(pool=pool, rater=rater)
    assert lease is not None
    assert lease_payload(lease) == rendered_assignment(lease.assignment)


# ------------------------------------------------------------------------------------- who may call


def test_a_test_only_shortcut_is_no_credential():
    """APIClient.force_authenticate sets a hook only DRF's Request reads: the loop's views ignore it."""
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = APIClient()
    client.force_authenticate(rater)
    answer = client.post(f"/api/pools/{pool.name}/next/")
    assert answer.status_code == 401 and answer.json() == {
        "detail": "Authentication credentials were not provided."
    }
    assert answer.headers.get("WWW-Authenticate") == "Token"
    assert not Assignment.objects.exists()


@pytest.mark.parametrize(
    ("who", "status", "detail"),
    [
        ("anonymous", 401, "Authentication credentials were not provided."),
        ("bad token", 401, "Invalid token."),
        ("inactive", 401, "User inactive or deleted."),
        ("rater of another pool", 404, "Not found."),
        ("manager, not a rater", 403, "you are not a rater of this pool"),
        ("session without csrf", 403, "CSRF Failed: CSRF cookie not set."),
    ],
)
def test_next_refuses_whoever_may_not_lease(who, status, detail):
    rater, other = make_user("rater"), make_user("other")
    pool = make_pool(raters=[rater], name="hot")
    make_pool(raters=[other], name="elsewhere")
    manager = make_user("manager")
    manager.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    pool.managers.add(manager)  # a manager of this pool who does not rate it
    inactive = make_user("inactive")
    membership.setup_judging(pool=pool, raters=[inactive])
    client = {
        "anonymous": APIClient,
        "bad token": lambda: APIClient(HTTP_AUTHORIZATION="Token " + "0" * 40),
        "inactive": lambda: token_client(inactive),
        "rater of another pool": lambda: token_client(other),
        "manager, not a rater": lambda: token_client(manager),
        "session without csrf": lambda: session_client(rater, csrf=False),
    }[who]()
    inactive.is_active = False
    inactive.save()
    answer = client.post(f"/api/pools/{pool.name}/next/")
    assert answer.status_code == status
    assert answer.json() == {"detail": detail}
    assert not Assignment.objects.exists()


def test_next_of_an_unknown_pool_is_a_404():
    rater = make_user("rater")
    make_pool(raters=[rater], name="hot")
    answer = token_client(rater).post("/api/pools/no-such-pool/next/")
    assert answer.status_code == 404 and answer.json() == {"detail": "Not found."}


def test_only_post_leases_and_options_says_so():
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater)
    for method in ("get", "put", "delete"):
        answer = getattr(client, method)(f"/api/pools/{pool.name}/next/")
        assert answer.status_code == 405
        assert answer.json() == {"detail": f'Method "{method.upper()}" not allowed.'}
    options = client.options(f"/api/pools/{pool.name}/next/")
    assert options.status_code == 200 and options.headers["Allow"] == "POST, OPTIONS"
    assert not Assignment.objects.exists()


def test_the_loop_is_in_the_api_schema():
    schema = APIClient().get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert "200" in paths["/api/pools/{name}/next/"]["post"]["responses"]
    assert "201" in paths["/api/assignments/{id}/judgement/"]["post"]["responses"]
    loop = paths["/api/assignments/{id}/judgement-and-next/"]["post"]
    assert loop["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/Submit")
    assert loop["responses"]["201"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/JudgementAndNext"
    )


# ------------------------------------------------------------------------------------ bad judgements


@pytest.mark.parametrize("url", [judge_url, loop_url])
@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"grade": 9}, "grade", "grade 9 is not on the rubric (0, 1, 2, 3)"),
        ({"grade": "high"}, "grade", "A valid integer is required."),
        ({"grade": True}, "grade", "A valid integer is required."),
        ({}, "grade", "choose a grade"),
        ({"grade": 2, "seconds": -1}, "seconds", "Ensure this value is greater than or equal to 0.0."),
        ({"grade": 2, "note": "x" * 10_001}, "note", "Ensure this field has no more than 10000 characters."),
        ({"grade": 2, "note": None}, "note", "This field may not be null."),
        ({"grade": 2, "facets": {"colour": "red"}}, "facets", "unknown facets: colour"),
        ({"grade": 2, "unrateable": True}, "grade", "an unrateable judgement has no grade"),
        ({"grade": 2**40}, "grade", f"grade {2**40} is not on the rubric (0, 1, 2, 3)"),
    ],
)
def test_a_bad_judgement_is_a_400_naming_the_field_and_changes_nothing(url, body, field, message):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    answer = client.post(url(leased["assignment"]), body, format="json")
    assert answer.status_code == 400
    detail = answer.json()[field]
    assert (detail if isinstance(detail, str) else detail[0]) == message
    nothing_changed()
    assert Assignment.objects.get().state == Assignment.State.ACTIVE  # and nothing more was leased


@pytest.mark.parametrize(
    ("content", "content_type", "code", "detail"),
    [
        (b'{"grade": NaN}', "application/json", 400, "JSON parse error"),
        (b'{"grade": ', "application/json", 400, "JSON parse error"),
        (b"grade=1", "text/plain", 415, 'Unsupported media type "text/plain" in request.'),
    ],
)
def test_a_body_that_is_not_json_or_a_form_is_refused(content, content_type, code, detail):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    answer = client.generic("POST", loop_url(leased["assignment"]), content, content_type=content_type)
    assert answer.status_code == code and answer.json()["detail"].startswith(detail)
    nothing_changed()


@pytest.mark.parametrize("url", [judge_url, loop_url])
def test_judgement_refusals_name_what_is_wrong_and_change_nothing(url):
    rater, second = make_user("rater"), make_user("second")
    pool = make_pool(raters=[rater, second], name="hot")
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    path = url(leased["assignment"])

    # another rater's assignment, an unknown one, a malformed id: 404
    malformed = path.replace(str(leased["assignment"]), "x1")
    for who, where in [(token_client(second), path), (client, url(10**9)), (client, malformed),
                       (client, url(10**30))]:  # fmt: skip
        answer = who.post(where, {"grade": 1}, format="json")
        assert answer.status_code == 404 and "detail" in answer.json()
    nothing_changed()

    # already judged: 400, naming how to revise
    assert client.post(judge_url(leased["assignment"]), {"grade": 1}, format="json").status_code == 201
    twice = client.post(path, {"grade": 2}, format="json")
    assert twice.status_code == 400 and "judged this item already" in twice.json()["detail"]
    assert Judgement.objects.count() == 1


@pytest.mark.parametrize("url", [judge_url, loop_url])
def test_a_judgement_after_leaving_the_pool_or_on_a_lease_that_went_to_another_rater(url):
    rater, second = make_user("rater"), make_user("second")
    pool = make_pool(raters=[rater, second], name="hot")
    client = token_client(rater)
    first = client.post(f"/api/pools/{pool.name}/next/").json()
    membership.remove_rater(pool=pool, rater=rater)
    gone = client.post(url(first["assignment"]), {"grade": 1}, format="json")
    assert gone.status_code == 404
    assert not Judgement.objects.exists()

    membership.setup_judging(pool=pool, raters=[rater])
    assert not PoolItem.objects.filter(pool=pool, active_leases__gt=0).exists()
    PoolItem.objects.filter(pool=pool).exclude(pk=PoolItem.objects.filter(pool=pool).first().pk).delete()
    Assignment.objects.all().delete()
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    assignment = Assignment.objects.get(pk=leased["assignment"])
    lease_ends.sweep_expired_leases(now=assignment.expires_at)
    token_client(second).post(f"/api/pools/{pool.name}/next/")
    taken = client.post(url(assignment.pk), {"grade": 1}, format="json")
    assert taken.status_code == 400 and "went to another rater" in taken.json()["detail"]
    assert not Judgement.objects.exists()


@pytest.mark.parametrize("url", [judge_url, loop_url])
def test_an_expired_lease_with_room_is_still_judged(url):
    rater = make_user("rater")
    pool = make_pool(raters=[rater], name="hot")
    client = token_client(rater)
    leased = client.post(f"/api/pools/{pool.name}/next/").json()
    assignment = Assignment.objects.get(pk=leased["assignment"])
    lease_ends.sweep_expired_leases(now=assignment.expires_at)
    answer = client.post(url(assignment.pk), {"grade": 1}, format="json")
    assert answer.status_code == 201
    judgement = answer.json() if url is judge_url else answer.json()["judgement"]
    assert JSONRenderer().render(judgement) == rendered_judgement(judgement["id"])

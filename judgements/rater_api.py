"""The rater's loop in the API, as plain Django function views (every other endpoint is a DRF viewset):

    POST /api/pools/<pool>/next/                       lease the next item (200 with it; 204: nothing left)
    POST /api/assignments/<id>/judgement/              judge the leased item (201 with the judgement)
    POST /api/assignments/<id>/judgement-and-next/     judge it AND lease the next one, in one request
                                                       (201 with {"judgement": …, "next": item or null})

The last is the loop at one request per judgement: what an API client loops on, and what the judging page's
key press posts. These are the requests a rater makes all day, so they skip DRF's request wrapper, content
negotiation and renderer, and keep the rules: the API's authentication (`labeling.auth.TokenAuthentication`,
or the session with DRF's CSRF check), its throttles (`labeling.throttling`, REST_FRAMEWORK's
DEFAULT_THROTTLE_CLASSES), the serializers' validation and errors (`SubmitSerializer`: a 400 naming the
field), the JSON DRF's renderer writes, and the calls of the loop (`leasing.lease_next`,
`submission.submit_label`, and both at once, `submission.submit_and_lease`). The plumbing (authentication,
throttles, refusals, the OpenAPI schema through `documented_by`) is `labeling.plain_api`'s, shared with the
interleaving search path.

Blind: a payload carries the topic, the document (sanitised), the rubric and the rater's own label; no run,
rank, score, other rater's grade, consensus, nor whether the item is gold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth.models import User
from django.db import IntegrityError
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, status
from rest_framework.views import APIView

from judgements import leasing, submission
from judgements.documents import render_body, safe_link
from judgements.errors import JudgingError, NotARater
from judgements.models import Assignment, Judging
from judgements.serializers import AssignmentPayloadSerializer, JudgementSerializer, SubmitSerializer
from labeling import parsers, plain_api
from pooling.models import Pool

_ALLOW = "POST, OPTIONS"
T = TypeVar("T")

# ------------------------------------------------------------------------------------------ payloads


def _drf_time(value: Any) -> str:
    """A datetime as DRF's DateTimeField shows it (current time zone, ISO 8601, `Z` for UTC)."""
    text = value.astimezone(timezone.get_current_timezone()).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def lease_payload(lease: leasing.Lease) -> dict[str, Any]:
    """A leased item as `AssignmentPayloadSerializer` shows it (the rubric is already in its shape)."""
    return {
        "assignment": lease.assignment,
        "state": lease.state,
        "leased_at": _drf_time(lease.leased_at),
        "expires_at": _drf_time(lease.expires_at),
        "pool": lease.pool,
        "topic": {"qid": lease.qid, "query": lease.query, "description": lease.description,
                  "narrative": lease.narrative},
        "document": {"docid": lease.docid, "title": lease.title, "url": safe_link(lease.url) or "",
                     "body": str(render_body(lease.text or ""))},
        "rubric": lease.rubric,
    }  # fmt: skip


def judged_payload(judged: submission.Judged) -> dict[str, Any]:
    """A judgement `submit_label` just recorded, as `JudgementSerializer` shows it (no revisions yet)."""
    created = _drf_time(judged.created_at)
    return {
        "id": judged.id, "pool": judged.pool, "qid": judged.qid, "query": judged.query, "docid": judged.docid,
        "title": judged.title, "grade": judged.grade, "unrateable": judged.unrateable,
        "facets": judged.facets, "note": judged.note, "seconds": judged.seconds,
        "created_at": created, "updated_at": created, "revisions": 0,
    }  # fmt: skip


# ------------------------------------------------------------------------------------------ plumbing


def _answer(data: Any, code: int) -> HttpResponse:
    return plain_api.answer(data, code, allow=_ALLOW)


def _data(request: HttpRequest) -> Any:
    """The body as the API's parsers read it: JSON (`parsers.read_json`, as every DRF view reads it), a
    form or multipart; nothing is {}."""
    media_type = request.content_type or ""
    if media_type == "application/json":
        return parsers.read_json(request.body or b"null", encoding=request.encoding)
    if media_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        return request.POST
    if not request.body:
        return {}
    raise exceptions.UnsupportedMediaType(media_type)


#: POST only (OPTIONS says so); the caller authenticated and within the API's rates; a refusal of the
#: loop (`JudgingError`) a 400 with its message (see `labeling.plain_api.endpoint`).
_rater_endpoint = plain_api.endpoint(methods=["POST"], refused=[JudgingError])


def _assignment_id(raw: str) -> int:
    """The assignment of the URL; anything but a database id is a 404 like a foreign one."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18 or int(raw) < 1:
        raise exceptions.NotFound()
    return int(raw)


def _submit(request: HttpRequest, rater: User, pk: str, submit: Callable[..., T]) -> T:
    """Validate the label (`SubmitSerializer`: 400 naming the field) and submit it (`submit`:
    `submission.submit_label` or `submit_and_lease`); an assignment that is not the caller's, or of a pool
    they no longer rate, is a 404."""
    assignment = _assignment_id(pk)
    form = SubmitSerializer(data=_data(request))
    form.is_valid(raise_exception=True)
    try:
        return submit(assignment=assignment, rater=rater, **form.validated_data)
    except (Assignment.DoesNotExist, Judging.DoesNotExist, NotARater):
        raise exceptions.NotFound(f"No {Assignment._meta.object_name} matches the given query.") from None
    except IntegrityError:  # the same item judged by a racing request of the same rater
        item = Assignment.objects.filter(pk=assignment).values_list("item_id", flat=True).first()
        raise submission.judged_already(item_id=item or 0, rater_id=rater.pk) from None


def _lease(rater: User, pool: str) -> dict[str, Any] | None:
    """The next lease's payload, or None when nothing is left; not a rater of the pool: 404, or 403 for
    one of its managers (the pool exists for them)."""
    try:
        lease = leasing.lease_next(pool=pool, rater=rater)
    except NotARater:
        if Pool.objects.managed_by(rater).filter(name=pool).exists():
            raise exceptions.PermissionDenied("you are not a rater of this pool") from None
        raise exceptions.NotFound() from None
    return None if lease is None else lease_payload(lease)


# ------------------------------------------------------------------------------------------ endpoints


class _NextSchema(APIView):
    @extend_schema(
        operation_id="pools_next_create",
        request=None,
        responses={
            200: AssignmentPayloadSerializer,
            204: OpenApiResponse(description="Nothing is left for you in this pool."),
        },
        tags=["pools"],
    )
    def post(self, request: Any, name: str) -> Any:
        """Lease the next item (or resume the live lease): topic, document (sanitised), rubric."""


class _JudgementSchema(APIView):
    @extend_schema(
        operation_id="assignments_judgement_create",
        request=SubmitSerializer,
        responses={201: JudgementSerializer},
        tags=["assignments"],
    )
    def post(self, request: Any, id: str) -> Any:
        """Judge the leased item: a grade of the rubric or `unrateable`, facets, a note, seconds spent."""


class _JudgementAndNextSchema(APIView):
    @extend_schema(
        operation_id="assignments_judgement_and_next_create",
        request=SubmitSerializer,
        responses={
            201: inline_serializer(
                "JudgementAndNext",
                {"judgement": JudgementSerializer(), "next": AssignmentPayloadSerializer(allow_null=True)},
            )
        },
        tags=["assignments"],
    )
    def post(self, request: Any, id: str) -> Any:
        """Judge the leased item and lease the next one of its pool (`next` is null when nothing is left):
        the rater's loop in one request."""


@plain_api.documented_by(_NextSchema)
@_rater_endpoint
def next_item(request: HttpRequest, rater: User, name: str) -> HttpResponse:
    """Lease the next item (or resume the live lease)."""
    payload = _lease(rater, name)
    if payload is None:
        return _answer(None, status.HTTP_204_NO_CONTENT)
    return _answer(payload, status.HTTP_200_OK)


@plain_api.documented_by(_JudgementSchema)
@_rater_endpoint
def judgement(request: HttpRequest, rater: User, id: str) -> HttpResponse:
    """Judge the leased item."""
    return _answer(
        judged_payload(_submit(request, rater, id, submission.submit_label)), status.HTTP_201_CREATED
    )


@plain_api.documented_by(_JudgementAndNextSchema)
@_rater_endpoint
def judgement_and_next(request: HttpRequest, rater: User, id: str) -> HttpResponse:
    """Judge the leased item and lease the next one of its pool."""
    judged, following = _submit(request, rater, id, submission.submit_and_lease)
    payload = {"judgement": judged_payload(judged), "next": following and lease_payload(following)}
    return _answer(payload, status.HTTP_201_CREATED)

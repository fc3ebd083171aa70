"""REST API of the judging app: what a rater and a pool manager do.

Raters (members of a pool's `Judging.raters`):
    GET  /api/judging/                     my pools, with progress (managers: every pool; `?mine=1` to narrow)
    GET  /api/judging/<pool>/              one pool's setup, rubric and progress
    POST /api/pools/<pool>/next/           lease the next item (200 with the item, 204 when nothing is left)
    GET  /api/assignments/                 my live leases; GET /api/assignments/<id>/ one of mine
    POST /api/assignments/<id>/judgement/  judge the leased item
    POST /api/assignments/<id>/skip/       give it back (never offered again)
    GET  /api/judgements/                  my judgements (`?pool=`); GET /api/judgements/<id>/
    PATCH /api/judgements/<id>/            revise (the old label is kept as a revision)
    GET  /api/judgements/<id>/history/     the revisions of one of my judgements

Managers (the `pool managers` group) and admins:
    /api/rubrics/                          CRUD; a judged rubric is versioned, never edited in place
    POST /api/rubrics/default/             the default four-grade rubric (created on first use)
    POST /api/judging/                     set up judging of a pool (rubric, raters, lease, gap)
    PATCH /api/judging/<pool>/             change rubric, lease minutes, adjudication gap
    POST /api/judging/<pool>/raters/       add raters; DELETE /api/judging/<pool>/raters/<username>/
    GET/POST /api/judging/<pool>/gold/     gold labels; DELETE /api/judging/<pool>/gold/<item>/
    GET  /api/judging/<pool>/stats/        per-rater statistics and gold accuracy
    GET/POST /api/judging/<pool>/adjudication/  the queue (every grade, note, rater) and decisions
    GET  /api/judging/<pool>/adjudications/     decisions recorded
    GET  /api/judging/<pool>/judgements/   every judgement of the pool with its revisions

Every queryset is scoped to the user: another rater's judgement, assignment or pool answers 404; a rater
calling a manager endpoint answers 403. A refused action (`JudgingError`) answers 400 with its message.

Blindness: nothing a rater can reach carries run names, ranks, scores, other raters' grades,
the consensus, or whether an item is gold.
"""

from __future__ import annotations

import json
import math
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection
from django.db.models import Count, Exists, OuterRef, ProtectedError, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, AuthenticationFailed, NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from judgements import adjudication, errors, labels, leasing, membership, prepared, rubrics, stats
from judgements.documents import render_body, safe_link
from judgements.models import (
    Adjudication,
    Assignment,
    GoldLabel,
    Judgement,
    JudgementRevision,
    Judging,
    Rubric,
)
from pooling.models import Pool, PoolItem
from pooling.permissions import IsManager, is_manager

# ------------------------------------------------------------------------------------------- plumbing


class Refused(APIException):
    """A judging action refused by the services: 400 with the service's message."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "refused"
    default_detail = "This action was refused."


class JudgingAPIMixin:
    """Maps `JudgingError` to a 400 with its message (the services are the one place rules live)."""

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, errors.JudgingError):
            exc = Refused(str(exc))
        return super().handle_exception(exc)  # type: ignore[misc]  # a mixin of APIView


def sanitise(text: str) -> str:
    """A document body as HTML safe to insert into the rater's page (the pages' sanitiser)."""
    return str(render_body(text or ""))


def safe_url(url: str) -> str:
    """The document's URL if it is http(s), else empty (never a `javascript:` link)."""
    return safe_link(url) or ""


def _pool_item(pool: Pool, data: dict[str, Any]) -> PoolItem:
    """The item named by `item` (id) or `qid` + `docid`, in `pool`; 404 otherwise."""
    items = PoolItem.objects.filter(pool=pool).select_related("topic", "document", "pool__judging__rubric")
    if data.get("item") is not None:
        return get_object_or_404(items, pk=data["item"])
    return get_object_or_404(items, topic__qid=data["qid"], document__docid=data["docid"])


# ------------------------------------------------------------------------------------------ hot path
#
# A rater's loop is two requests: `POST /api/pools/<pool>/next/` and `POST /api/assignments/<id>/judgement/`.
# Their usual case is answered here without DRF's request wrapper, negotiation, serializers and renderer:
# the same authentication (DRF's token class, or the session with DRF's CSRF check), one service call
# (one statement on PostgreSQL) and the JSON those serializers and `JSONRenderer` would have produced,
# byte for byte, with the headers DRF adds. Anything else — another method, an Accept or format other
# than plain JSON, a body that is not a plain grade, no or failed authentication, any refusal — returns
# None and goes through the DRF view as before, which decides and answers every error (the services
# change nothing before refusing). tests/judgements/test_rater_hot_path.py compares both answers.

_PLAIN_ACCEPT = {"", "*/*", "application/json"}
_POST_ONLY = "POST, OPTIONS"  # what DRF sends as `Allow` for these two actions


def _lean_request(request: HttpRequest) -> bool:
    """A POST asking for plain JSON (what `JSONRenderer` answers without options), no query string."""
    return (
        request.method == "POST"
        and request.META.get("HTTP_ACCEPT", "").strip() in _PLAIN_ACCEPT
        and not request.META.get("QUERY_STRING")
    )


class LeanTokenAuthentication(TokenAuthentication):
    """DRF's token authentication, the token's user read by one prepared statement on PostgreSQL (the
    ORM took longer to build its query than PostgreSQL to run it). The same answers: the active user of
    the token, or AuthenticationFailed."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if connection.vendor != "postgresql":
            return super().authenticate_credentials(key)
        row = prepared.one_row(_USER_BY_KEY_SQL, {"key": key}, sized=False)
        if row is None:
            raise AuthenticationFailed("Invalid token.")
        user = _USER_MODEL.from_db(connection.alias, _USER_FIELDS, row)
        if not user.is_active:
            raise AuthenticationFailed("User inactive or deleted.")
        return user, None


_USER_MODEL = get_user_model()
_USER_FIELDS = [field.attname for field in _USER_MODEL._meta.concrete_fields]
_USER_SELECT = "SELECT {columns} FROM {tokens} t JOIN {users} u ON u.{pk} = t.user_id WHERE t.key = %(key)s"
_USER_BY_KEY_SQL = _USER_SELECT.format(
    columns=", ".join(f"u.{field.column}" for field in _USER_MODEL._meta.concrete_fields),
    tokens=Token._meta.db_table,
    users=_USER_MODEL._meta.db_table,
    pk=_USER_MODEL._meta.pk.column,
)


def _lean_user(request: HttpRequest) -> Any:
    """The user as DRF's TokenAuthentication then SessionAuthentication would find them, or None (no
    credentials, bad ones, or a CSRF failure: the DRF view answers those)."""
    forced = getattr(request, "_force_auth_user", None)  # DRF's APIClient.force_authenticate (tests)
    if forced is not None:
        request.user = forced
        return forced
    header = request.META.get("HTTP_AUTHORIZATION")
    if header:
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "token":
            return None
        try:
            user, _ = LeanTokenAuthentication().authenticate_credentials(parts[1])
        except APIException:
            return None
        request.user = user  # as DRF sets it on the Django request (the session is never touched)
        return user
    user = getattr(request, "user", None)
    if user is None or not user.is_active:
        return None
    try:
        SessionAuthentication().enforce_csrf(request)
    except APIException:
        return None
    return user


def _within_rates(request: HttpRequest) -> bool:
    """The API's throttles (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES), counted as the DRF view counts
    them; over a rate the DRF view answers (its 429 with Retry-After). With the rate off (empty), no cache
    is asked."""
    return all(throttle().allow_request(request, None) for throttle in api_settings.DEFAULT_THROTTLE_CLASSES)


def _json(data: Any, code: int) -> HttpResponse:
    """`Response(data, status=code)` as DRF renders it for these views with `JSONRenderer`."""
    if data is None:
        response = HttpResponse(status=code)
        del response["Content-Type"]
    else:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        content = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()
        response = HttpResponse(content, status=code, content_type="application/json")
    patch_vary_headers(response, ["Accept"])
    response["Allow"] = _POST_ONLY
    return response


def _drf_time(value: Any) -> str:
    """A datetime as DRF's DateTimeField shows it (current time zone, ISO 8601, `Z` for UTC)."""
    text = value.astimezone(timezone.get_current_timezone()).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def lease_payload(lease: leasing.Lease) -> dict[str, Any]:
    """`AssignmentPayloadSerializer`'s data for a lease (its rubric is already in the serializer's shape)."""
    return {
        "assignment": lease.assignment,
        "state": lease.state,
        "leased_at": _drf_time(lease.leased_at),
        "expires_at": _drf_time(lease.expires_at),
        "pool": lease.pool,
        "topic": {"qid": lease.qid, "query": lease.query, "description": lease.description,
                  "narrative": lease.narrative},
        "document": {"docid": lease.docid, "title": lease.title, "url": safe_url(lease.url),
                     "body": sanitise(lease.text)},
        "rubric": lease.rubric,
    }  # fmt: skip


def judged_payload(judged: leasing.Judged) -> dict[str, Any]:
    """`JudgementSerializer`'s data for a judgement `submit_label` just recorded (no revisions yet)."""
    created = _drf_time(judged.created_at)
    return {
        "id": judged.id, "pool": judged.pool, "qid": judged.qid, "query": judged.query, "docid": judged.docid,
        "title": judged.title, "grade": judged.grade, "unrateable": judged.unrateable,
        "facets": judged.facets, "note": judged.note, "seconds": judged.seconds,
        "created_at": created, "updated_at": created, "revisions": 0,
    }  # fmt: skip


def lean_next(request: HttpRequest, name: str) -> HttpResponse | None:
    """`RaterPoolViewSet.next_item`'s answer when the caller rates the pool, else None."""
    if not _lean_request(request):
        return None
    user = _lean_user(request)
    if user is None or not _within_rates(request):
        return None
    try:
        lease = leasing.lease_next(pool=name, rater=user)
    except errors.JudgingError:
        return None  # not a rater of such a pool: 404 or 403, the DRF view tells which
    if lease is None:
        return _json(None, status.HTTP_204_NO_CONTENT)
    return _json(lease_payload(lease), status.HTTP_200_OK)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # as DRF's strict JSONParser


def lean_judgement(request: HttpRequest, pk: str) -> HttpResponse | None:
    """`AssignmentViewSet.judgement`'s 201 for a plain grade (a JSON body with an integer `grade` and
    at most a string `note`, a number `seconds`, `unrateable: false` and empty `facets`), else None."""
    if not _lean_request(request) or not (pk.isascii() and pk.isdigit() and len(pk) < 19):
        return None
    # Who asks comes first: nothing of the body is looked at for an anonymous caller (the DRF view
    # answers 401/403), and a number the body holds is judged by DRF's rules (a 400 naming the field).
    user = _lean_user(request)
    if user is None or not _within_rates(request):
        return None
    media_type = request.META.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json":
        return None
    try:
        data = json.loads(request.body, parse_constant=_refuse_constant)
    except ValueError:
        return None
    if type(data) is not dict:
        return None
    grade, note, seconds = data.get("grade"), data.get("note", ""), data.get("seconds", 0.0)
    if type(grade) is not int or data.get("unrateable", False) is not False or data.get("facets", {}) != {}:
        return None
    if type(note) is not str or type(seconds) not in (int, float) or not _finite(seconds) or seconds < 0:
        return None  # SubmitSerializer answers these (an int too large for a float is a 400 there)
    note = note.strip()
    if len(note) > labels.NOTE_MAX_LENGTH or "\x00" in note or not _encodable(note):
        return None  # the serializer's length, NUL and surrogate checks answer these
    try:
        judged = leasing.submit_label(assignment=int(pk), rater=user, grade=grade, note=note, seconds=seconds)
    except (errors.JudgingError, Assignment.DoesNotExist, Judging.DoesNotExist, IntegrityError):
        return None  # refused, nothing changed: the DRF view decides (404, 400 …) and answers
    return _json(judged_payload(judged), status.HTTP_201_CREATED)


def _finite(number: float) -> bool:
    """A JSON number that is a finite float (an integer of 400 digits has no float)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# ---------------------------------------------------------------------------------------- serializers


class GradeSerializer(serializers.Serializer):
    value = serializers.IntegerField(min_value=0, max_value=rubrics.MAX_GRADE)
    label = serializers.CharField(max_length=100)
    description = serializers.CharField(allow_blank=True, required=False, default="")
    key = serializers.CharField(min_length=1, max_length=1)


class FacetSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=50)
    label = serializers.CharField(max_length=100, required=False)
    choices = serializers.ListField(child=serializers.CharField(max_length=100), required=False, default=list)
    required = serializers.BooleanField(required=False, default=False)


class RubricSerializer(serializers.ModelSerializer):
    """A rubric: grades (highest first) and optional facets. Creating without grades gives the default
    four-grade scale. Updating a judged rubric makes a new version (answered 201), an unjudged one is
    changed in place (200); the name and the unrateable key never change."""

    grades = GradeSerializer(many=True, required=False)
    facets = FacetSerializer(many=True, required=False)
    judged = serializers.SerializerMethodField()

    class Meta:
        model = Rubric
        fields = [
            "id", "name", "version", "description", "allow_unrateable", "unrateable_key", "grades",
            "facets", "judged", "created_at",
        ]  # fmt: skip
        read_only_fields = ["id", "version", "created_at"]
        validators: list[Any] = []  # (name, version) is assigned by the service, never by the client

    def get_judged(self, rubric: Rubric) -> bool:
        return rubric.has_judgements()

    def _whole_items(self, field: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The list as a whole replacement. A PATCH (partial) replaces `grades` or `facets` whole, but DRF
        passes `partial` down to the items, which then skip their required fields: check them again."""
        if not self.partial:
            return items
        nested = type(self.fields[field].child)
        whole = nested(data=self.initial_data.get(field), many=True)
        if not whole.is_valid():
            raise serializers.ValidationError(whole.errors)
        return cast(list[dict[str, Any]], whole.validated_data)

    def validate_grades(self, grades: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._whole_items("grades", grades)

    def validate_facets(self, facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
        facets = self._whole_items("facets", facets)
        names = [facet["name"] for facet in facets]
        if len(set(names)) != len(names):
            raise serializers.ValidationError("facet names must be distinct")
        return facets

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.instance is not None:
            for name in ("name", "unrateable_key"):
                if name in attrs and attrs[name] != getattr(self.instance, name):
                    raise serializers.ValidationError({name: f"the {name} of a rubric cannot change"})
        return attrs

    def create(self, validated_data: dict[str, Any]) -> Rubric:
        return rubrics.create_rubric(
            name=validated_data["name"],
            grades=validated_data.get("grades") or rubrics.DEFAULT_GRADES,
            facets=validated_data.get("facets", ()),
            description=validated_data.get("description", ""),
            allow_unrateable=validated_data.get("allow_unrateable", True),
            unrateable_key=validated_data.get("unrateable_key", "x"),
        )

    def update(self, instance: Rubric, validated_data: dict[str, Any]) -> Rubric:
        return rubrics.update_rubric(
            rubric=instance,
            grades=validated_data.get("grades"),
            facets=validated_data.get("facets"),
            description=validated_data.get("description"),
            allow_unrateable=validated_data.get("allow_unrateable"),
        )


class RubricForRaterSerializer(serializers.ModelSerializer):
    """The rubric as the judging page shows it: grades highest first with their keys, facets."""

    grades = GradeSerializer(many=True, read_only=True)
    facets = FacetSerializer(many=True, read_only=True)

    class Meta:
        model = Rubric
        fields = [
            "id", "name", "version", "description", "allow_unrateable", "unrateable_key", "grades", "facets",
        ]  # fmt: skip


class TopicForRaterSerializer(serializers.Serializer):
    qid = serializers.CharField()
    query = serializers.CharField()
    description = serializers.CharField()
    narrative = serializers.CharField()


class DocumentForRaterSerializer(serializers.Serializer):
    """`title` is plain text (render it as text); `body` is sanitised HTML; `url` is http(s) or empty."""

    docid = serializers.CharField()
    title = serializers.CharField()
    url = serializers.SerializerMethodField()
    body = serializers.SerializerMethodField()

    def get_url(self, document: Any) -> str:
        return safe_url(document.url)

    def get_body(self, document: Any) -> str:
        return sanitise(document.text)


class AssignmentPayloadSerializer(serializers.ModelSerializer):
    """A leased item as a rater sees it: the topic, the document and the rubric — blind: no run, rank,
    score, other rater's grade, consensus, nor whether the item is gold."""

    assignment = serializers.IntegerField(source="pk", read_only=True)
    pool = serializers.CharField(source="item.pool.name", read_only=True)
    topic = TopicForRaterSerializer(source="item.topic", read_only=True)
    document = DocumentForRaterSerializer(source="item.document", read_only=True)
    rubric = RubricForRaterSerializer(source="item.pool.judging.rubric", read_only=True)

    class Meta:
        model = Assignment
        fields = ["assignment", "state", "leased_at", "expires_at", "pool", "topic", "document", "rubric"]


class LabelInputSerializer(serializers.Serializer):
    """A label: a grade of the rubric, or `unrateable: true` (then no grade); facets by name; a note."""

    grade = serializers.IntegerField(required=False, allow_null=True, default=None)
    unrateable = serializers.BooleanField(required=False, default=False)
    facets = serializers.DictField(required=False, default=dict)
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=labels.NOTE_MAX_LENGTH
    )


class SubmitSerializer(LabelInputSerializer):
    seconds = serializers.FloatField(required=False, default=0.0, min_value=0.0)


class ReviseSerializer(serializers.Serializer):
    """A revision: only the fields given change (`unrateable: true` clears the grade; a grade clears
    `unrateable`)."""

    grade = serializers.IntegerField(required=False, allow_null=True)
    unrateable = serializers.BooleanField(required=False)
    facets = serializers.DictField(required=False)
    note = serializers.CharField(required=False, allow_blank=True, max_length=labels.NOTE_MAX_LENGTH)


class JudgementSerializer(serializers.ModelSerializer):
    """One of my judgements (never anyone else's)."""

    pool = serializers.CharField(source="item.pool.name", read_only=True)
    qid = serializers.CharField(source="item.topic.qid", read_only=True)
    query = serializers.CharField(source="item.topic.query", read_only=True)
    docid = serializers.CharField(source="item.document.docid", read_only=True)
    title = serializers.CharField(source="item.document.title", read_only=True)
    revisions = serializers.SerializerMethodField()

    class Meta:
        model = Judgement
        fields = [
            "id", "pool", "qid", "query", "docid", "title", "grade", "unrateable", "facets", "note",
            "seconds", "created_at", "updated_at", "revisions",
        ]  # fmt: skip
        read_only_fields = fields

    def get_revisions(self, judgement: Judgement) -> int:
        """How many times it was revised."""
        count = getattr(judgement, "num_revisions", None)
        return int(count) if count is not None else judgement.revisions.count()


class RevisionSerializer(serializers.ModelSerializer):
    """One change of a judgement: who, when, the old and the new label."""

    changed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = JudgementRevision
        fields = [
            "id", "changed_by", "changed_at", "old_grade", "old_unrateable", "old_facets", "old_note",
            "new_grade", "new_unrateable", "new_facets", "new_note",
        ]  # fmt: skip
        read_only_fields = fields


class PoolJudgementSerializer(serializers.ModelSerializer):
    """A judgement of a pool for its managers: the rater, the label and every revision."""

    qid = serializers.CharField(source="item.topic.qid", read_only=True)
    docid = serializers.CharField(source="item.document.docid", read_only=True)
    rater = serializers.SlugRelatedField(slug_field="username", read_only=True)
    revisions = RevisionSerializer(many=True, read_only=True)

    class Meta:
        model = Judgement
        fields = [
            "id", "item", "qid", "docid", "rater", "grade", "unrateable", "facets", "note", "seconds",
            "imported", "created_at", "updated_at", "revisions",
        ]  # fmt: skip
        read_only_fields = fields


class ProgressSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    complete = serializers.IntegerField()
    required = serializers.IntegerField()
    judgements = serializers.IntegerField()
    fraction = serializers.FloatField()
    mine = serializers.IntegerField()
    left_for_me = serializers.IntegerField()


class JudgingSerializer(serializers.ModelSerializer):
    """A pool's judging setup with its progress (for the requesting user); `raters` for managers only."""

    pool = serializers.CharField(source="pool.name", read_only=True)
    instructions = serializers.CharField(source="pool.instructions", read_only=True)
    rubric = RubricForRaterSerializer(read_only=True)
    raters = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()

    class Meta:
        model = Judging
        # No pool description: a manager may have written run names in it (raters never see runs);
        # the pool's `instructions` are what is written for raters.
        fields = ["pool", "instructions", "rubric", "lease_minutes", "adjudication_gap", "raters", "progress"]
        read_only_fields = fields

    def get_raters(self, judging: Judging) -> list[str] | None:
        """Usernames of the pool's raters (null unless the caller manages this pool)."""
        request = self.context.get("request")
        if request is None or not is_manager(request.user):
            return None
        if "managed_pools" not in self.context:  # the context is shared by every row of a list
            managed = Pool.objects.managed_by(request.user).values_list("pk", flat=True)
            self.context["managed_pools"] = set(managed)
        if judging.pool_id not in self.context["managed_pools"]:
            return None
        return sorted(judging.raters.values_list("username", flat=True))

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, judging: Judging) -> dict[str, Any]:
        request = self.context["request"]
        return stats.pool_progress(pool=judging.pool, rater=request.user).as_dict()


class JudgingSetupSerializer(serializers.Serializer):
    """Set up (or update) judging of a pool; raters are added, never removed, by this call."""

    pool = serializers.SlugRelatedField(slug_field="name", queryset=Pool.objects.all())
    rubric = serializers.PrimaryKeyRelatedField(queryset=Rubric.objects.all(), required=False)
    raters = serializers.ListField(child=serializers.CharField(max_length=150), required=False, default=list)
    lease_minutes = serializers.IntegerField(required=False, min_value=1, max_value=24 * 60)
    adjudication_gap = serializers.IntegerField(required=False, min_value=1, max_value=1000)

    def validate_raters(self, usernames: list[str]) -> list[Any]:
        return _users(usernames)


class JudgingUpdateSerializer(serializers.Serializer):
    rubric = serializers.PrimaryKeyRelatedField(queryset=Rubric.objects.all(), required=False)
    lease_minutes = serializers.IntegerField(required=False, min_value=1, max_value=24 * 60)
    adjudication_gap = serializers.IntegerField(required=False, min_value=1, max_value=1000)


class RatersSerializer(serializers.Serializer):
    usernames = serializers.ListField(child=serializers.CharField(max_length=150), min_length=1)

    def validate_usernames(self, usernames: list[str]) -> list[Any]:
        return _users(usernames)


def _users(usernames: list[str]) -> list[Any]:
    found = {user.get_username(): user for user in get_user_model().objects.filter(username__in=usernames)}
    missing = [name for name in usernames if name not in found]
    if missing:
        raise serializers.ValidationError(f"no user named {', '.join(map(repr, missing))}")
    return [found[name] for name in dict.fromkeys(usernames)]


class ItemRefSerializer(serializers.Serializer):
    """An item of the pool, by `item` id or by `qid` and `docid`."""

    item = serializers.IntegerField(required=False, min_value=1)
    qid = serializers.CharField(required=False, max_length=100)
    docid = serializers.CharField(required=False, max_length=255)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("item") is None and not (attrs.get("qid") and attrs.get("docid")):
            raise serializers.ValidationError({"item": "name the item by id, or by qid and docid"})
        return attrs


class GoldInputSerializer(ItemRefSerializer):
    grade = serializers.IntegerField()


class GoldSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="item.topic.qid", read_only=True)
    docid = serializers.CharField(source="item.document.docid", read_only=True)
    title = serializers.CharField(source="item.document.title", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = GoldLabel
        fields = ["item", "qid", "docid", "title", "grade", "created_by", "created_at"]
        read_only_fields = fields


class GoldAccuracySerializer(serializers.Serializer):
    n = serializers.IntegerField()
    exact = serializers.IntegerField()
    within_one = serializers.IntegerField()
    exact_rate = serializers.FloatField(allow_null=True)
    within_one_rate = serializers.FloatField(allow_null=True)


class RaterStatsSerializer(serializers.Serializer):
    """See `judgements.stats.RaterStats` for the exact definitions."""

    rater = serializers.CharField()
    member = serializers.BooleanField()
    judgements = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    grades = serializers.DictField(child=serializers.IntegerField())
    unrateable = serializers.IntegerField()
    unrateable_share = serializers.FloatField(allow_null=True)
    skips = serializers.IntegerField()
    gold = GoldAccuracySerializer()


class QueueJudgementSerializer(serializers.Serializer):
    judgement_id = serializers.IntegerField()
    rater = serializers.CharField()
    grade = serializers.IntegerField(allow_null=True)
    unrateable = serializers.BooleanField()
    facets = serializers.DictField()
    note = serializers.CharField()
    seconds = serializers.FloatField()
    updated_at = serializers.DateTimeField()


class QueueEntrySerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item_id")
    qid = serializers.CharField()
    query = serializers.CharField()
    docid = serializers.CharField()
    title = serializers.CharField()
    spread = serializers.IntegerField()
    unrateable_votes = serializers.IntegerField()
    gold = serializers.IntegerField(allow_null=True)
    judgements = QueueJudgementSerializer(many=True)


class AdjudicateSerializer(ItemRefSerializer):
    grade = serializers.IntegerField(required=False, allow_null=True, default=None)
    unrateable = serializers.BooleanField(required=False, default=False)
    note = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=labels.NOTE_MAX_LENGTH
    )


class QueueQuerySerializer(serializers.Serializer):
    gap = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=1000,
        help_text="a whole number of grades (default: the pool's)",
    )


class AdjudicationSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="item.topic.qid", read_only=True)
    docid = serializers.CharField(source="item.document.docid", read_only=True)
    adjudicator = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Adjudication
        fields = ["item", "qid", "docid", "grade", "unrateable", "note", "adjudicator", "decided_at"]
        read_only_fields = fields


# ------------------------------------------------------------------------------------------ viewsets


class RubricViewSet(JudgingAPIMixin, viewsets.ModelViewSet):
    """Rubrics, for managers. A judged rubric is never edited in place: an update makes a new version."""

    permission_classes = [IsAuthenticated, IsManager]
    serializer_class = RubricSerializer
    queryset = Rubric.objects.prefetch_related("grades", "facets").order_by("name", "-version")

    @extend_schema(responses={200: RubricSerializer, 201: RubricSerializer})
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        partial = kwargs.pop("partial", False)
        rubric = self.get_object()
        # Rubrics are shared, but an unjudged one is changed in place: not under another manager's pool.
        others = Judging.objects.filter(rubric=rubric).exclude(pool__in=Pool.objects.managed_by(request.user))
        if not rubric.has_judgements() and others.exists():
            raise PermissionDenied(
                "this rubric is used by a pool you do not manage; create a rubric of your own"
            )
        form = self.get_serializer(rubric, data=request.data, partial=partial)
        form.is_valid(raise_exception=True)
        result = form.save()
        fresh = Rubric.objects.get(pk=result.pk)  # the prefetched grades of `rubric` are stale now
        code = status.HTTP_201_CREATED if fresh.pk != rubric.pk else status.HTTP_200_OK
        return Response(self.get_serializer(fresh).data, status=code)

    @extend_schema(responses={200: RubricSerializer, 201: RubricSerializer})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self.update(request, *args, partial=True, **kwargs)

    def perform_destroy(self, instance: Rubric) -> None:
        if instance.has_judgements() or Judging.objects.filter(rubric=instance).exists():
            raise Refused("this rubric is in use by a pool or has judgements; it cannot be deleted")
        try:
            instance.delete()
        except ProtectedError:
            raise Refused("this rubric is in use; it cannot be deleted") from None

    @extend_schema(request=None, responses={200: RubricSerializer})
    @action(detail=False, methods=["post"])
    def default(self, request: Request) -> Response:
        """The default four-grade rubric (3 perfect, 2 good, 1 marginal, 0 not relevant)."""
        return Response(self.get_serializer(rubrics.default_rubric()).data)


class RaterPoolViewSet(JudgingAPIMixin, viewsets.GenericViewSet):
    """The rater's entry to a pool: lease the next item."""

    serializer_class = AssignmentPayloadSerializer
    queryset = Pool.objects.all()
    lookup_field = "name"

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if self.action_map.get("post") == "next_item":
            answer = lean_next(request, kwargs.get("name", ""))
            if answer is not None:
                return answer
        return super().dispatch(request, *args, **kwargs)

    def get_object(self) -> Pool:
        name = self.kwargs["name"]
        pool = (
            Pool.objects.filter(name=name, judging__raters=self.request.user)
            .select_related("judging__rubric")
            .first()
        )
        if pool is None:
            if Pool.objects.managed_by(self.request.user).filter(name=name).exists():
                raise PermissionDenied("you are not a rater of this pool")
            raise Http404
        return pool

    @extend_schema(
        request=None,
        responses={
            200: AssignmentPayloadSerializer,
            204: OpenApiResponse(description="Nothing is left for you in this pool."),
        },
    )
    @action(detail=True, methods=["post"], url_path="next", url_name="next")
    def next_item(self, request: Request, name: str | None = None) -> Response:
        """Lease the next item (or resume the live lease): topic, document (sanitised), rubric."""
        pool = self.get_object()
        lease = leasing.lease_next(pool=pool, rater=request.user)
        if lease is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(lease_payload(lease))


@extend_schema_view(
    list=extend_schema(parameters=[OpenApiParameter("state", str, enum=[s.value for s in Assignment.State])])
)
class AssignmentViewSet(
    JudgingAPIMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The rater's own leases (only in pools they still rate); `?state=` (default `active`)."""

    serializer_class = AssignmentPayloadSerializer

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if self.action_map.get("post") == "judgement":
            answer = lean_judgement(request, str(kwargs.get("pk", "")))
            if answer is not None:
                return answer
        return super().dispatch(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[Assignment]:
        if getattr(self, "swagger_fake_view", False):
            return Assignment.objects.none()
        user = self.request.user
        queryset = (
            Assignment.objects.filter(rater=user, item__pool__judging__raters=user)
            .select_related("item__pool__judging__rubric", "item__topic", "item__document")
            .order_by("-leased_at", "-id")
        )
        if self.action == "list":
            queryset = queryset.filter(state=self.request.query_params.get("state", Assignment.State.ACTIVE))
        return queryset

    def get_assignment_to_judge(self) -> Assignment:
        """The assignment `get_object` would find (mine, in a pool I still rate; 404 otherwise), with its
        item's pool, topic and document for the answer. Membership is a select-list EXISTS: PostgreSQL
        plans this query in about 0.4 ms, where the same filter as a join of `get_queryset`'s eight
        tables took 20-40 ms of planning on every judgement."""
        user = self.request.user
        member = Judging.objects.filter(pool_id=OuterRef("item__pool_id"), raters=user)
        queryset = (
            Assignment.objects.filter(rater=user)
            .select_related("item__pool", "item__topic", "item__document")
            .annotate(member=Exists(member))
        )
        assignment = generics.get_object_or_404(queryset, pk=self.kwargs["pk"])
        if not assignment.member:
            raise Http404(f"No {Assignment._meta.object_name} matches the given query.")
        self.check_object_permissions(self.request, assignment)
        return assignment

    @extend_schema(request=SubmitSerializer, responses={201: JudgementSerializer})
    @action(detail=True, methods=["post"])
    def judgement(self, request: Request, pk: str | None = None) -> Response:
        """Judge the leased item: a grade of the rubric or `unrateable`, facets, a note, seconds spent."""
        assignment = self.get_assignment_to_judge()
        form = SubmitSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            judged = leasing.submit_label(assignment=assignment.pk, rater=request.user, **form.validated_data)
        except IntegrityError:
            raise Refused(
                str(leasing.judged_already(item_id=assignment.item_id, rater_id=request.user.pk))
            ) from None
        return Response(judged_payload(judged), status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={204: OpenApiResponse(description="Skipped.")})
    @action(detail=True, methods=["post"])
    def skip(self, request: Request, pk: str | None = None) -> Response:
        """Give the item back; it is not offered to you again."""
        leasing.skip_item(assignment=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(parameters=[OpenApiParameter("pool", str, description="only this pool's judgements")])
)
class JudgementViewSet(
    JudgingAPIMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The rater's own judgements: list, revise (PATCH, keeping a revision), history."""

    serializer_class = JudgementSerializer
    http_method_names = ["get", "patch", "head", "options"]

    def get_queryset(self) -> QuerySet[Judgement]:
        if getattr(self, "swagger_fake_view", False):
            return Judgement.objects.none()
        queryset = (
            Judgement.objects.filter(rater=self.request.user)
            .select_related("item__pool", "item__topic", "item__document")
            .annotate(num_revisions=Count("revisions"))
            .order_by("-updated_at", "-id")
        )
        pool = self.request.query_params.get("pool")
        if pool:
            queryset = queryset.filter(item__pool__name=pool)
        return queryset

    @extend_schema(request=ReviseSerializer, responses={200: JudgementSerializer})
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        """Revise one of my judgements; the old label is kept as a revision (who, when, old, new)."""
        judgement = self.get_object()
        if not Judging.objects.filter(pool_id=judgement.item.pool_id, raters=request.user).exists():
            raise PermissionDenied("you are no longer a rater of this pool")
        form = ReviseSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        # Fields not given keep their value; a grade alone means "not unrateable", `unrateable` alone
        # clears the grade; both together go to the service as given (which refuses a graded unrateable).
        unrateable = data.get("unrateable", False if "grade" in data else judgement.unrateable)
        grade = data.get("grade", None if unrateable else judgement.grade)
        revised = labels.revise_judgement(
            judgement=judgement,
            by=request.user,
            grade=grade,
            unrateable=unrateable,
            facets=data.get("facets", judgement.facets),
            note=data.get("note"),
        )
        return Response(JudgementSerializer(revised).data)

    @extend_schema(responses={200: RevisionSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def history(self, request: Request, pk: str | None = None) -> Response:
        """Every revision of one of my judgements, oldest first."""
        judgement = self.get_object()
        revisions = judgement.revisions.select_related("changed_by").order_by("changed_at", "id")
        return Response(RevisionSerializer(revisions, many=True).data)


MANAGER_ACTIONS = {
    "create", "partial_update", "raters", "remove_rater", "gold", "remove_gold", "stats", "adjudication",
    "adjudications", "judgements",
}  # fmt: skip


@extend_schema_view(
    list=extend_schema(parameters=[OpenApiParameter("mine", bool, description="only pools I am a rater of")])
)
class JudgingViewSet(
    JudgingAPIMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Pools as judging campaigns. Raters see the pools they belong to (with their progress); managers see
    and configure every pool: rubric, raters, lease, adjudication gap, gold, statistics, adjudication."""

    serializer_class = JudgingSerializer
    lookup_field = "pool__name"
    lookup_url_kwarg = "pool"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_permissions(self) -> list[Any]:
        if self.action in MANAGER_ACTIONS:
            return [IsAuthenticated(), IsManager()]
        return [IsAuthenticated()]

    def get_queryset(self) -> QuerySet[Judging]:
        if getattr(self, "swagger_fake_view", False):
            return Judging.objects.none()
        user = self.request.user
        queryset = Judging.objects.select_related("pool", "rubric").prefetch_related(
            "rubric__grades", "rubric__facets"
        )
        managed = Pool.objects.managed_by(user).values("pk")
        if self.action in MANAGER_ACTIONS:
            queryset = queryset.filter(pool__in=managed)
        elif not is_manager(user) or self.request.query_params.get("mine") in {"1", "true", "yes"}:
            queryset = queryset.filter(raters=user)
        else:  # a manager's list: the pools they manage and those they rate
            rated = Judging.objects.filter(raters=user).values("pk")
            queryset = queryset.filter(Q(pool__in=managed) | Q(pk__in=rated))
        return queryset.order_by("pool__name")

    def _out(self, judging: Judging, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=judging.pk)
        return Response(self.get_serializer(fresh).data, status=code)

    @extend_schema(request=JudgingSetupSerializer, responses={200: JudgingSerializer, 201: JudgingSerializer})
    def create(self, request: Request) -> Response:
        """Set up judging of a pool (rubric, raters to add, lease minutes, adjudication gap); idempotent."""
        form = JudgingSetupSerializer(data=request.data)
        form.fields["pool"].queryset = Pool.objects.managed_by(request.user)  # another's: "does not exist"
        form.is_valid(raise_exception=True)
        data = form.validated_data
        existing = Judging.objects.filter(pool=data["pool"]).first()
        judging = membership.setup_judging(
            pool=data["pool"],
            rubric=data.get("rubric"),
            raters=data["raters"],
            lease_minutes=data.get("lease_minutes"),
            adjudication_gap=data.get("adjudication_gap"),
        )
        return self._out(judging, status.HTTP_200_OK if existing else status.HTTP_201_CREATED)

    @extend_schema(request=JudgingUpdateSerializer, responses={200: JudgingSerializer})
    def partial_update(self, request: Request, pool: str | None = None) -> Response:
        """Change the rubric, lease minutes or adjudication gap of a pool."""
        judging = self.get_object()
        form = JudgingUpdateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        judging = membership.setup_judging(
            pool=judging.pool,
            rubric=data.get("rubric"),
            lease_minutes=data.get("lease_minutes"),
            adjudication_gap=data.get("adjudication_gap"),
        )
        return self._out(judging)

    @extend_schema(request=RatersSerializer, responses={200: JudgingSerializer})
    @action(detail=True, methods=["post"])
    def raters(self, request: Request, pool: str | None = None) -> Response:
        """Add raters to the pool."""
        judging = self.get_object()
        form = RatersSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        membership.setup_judging(pool=judging.pool, raters=form.validated_data["usernames"])
        return self._out(judging)

    @extend_schema(
        parameters=[OpenApiParameter("username", str, OpenApiParameter.PATH)],
        request=None,
        responses={204: OpenApiResponse(description="Removed; their judgements stay.")},
    )
    @action(detail=True, methods=["delete"], url_path=r"raters/(?P<username>[^/]+)", url_name="remove-rater")
    def remove_rater(self, request: Request, pool: str | None = None, username: str = "") -> Response:
        """Take a rater off the pool: their live leases are released, their judgements stay."""
        judging = self.get_object()
        rater = judging.raters.filter(username=username).first()
        if rater is None:
            raise NotFound(f"{username!r} is not a rater of this pool")
        membership.remove_rater(pool=judging.pool, rater=rater)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(methods=["GET"], responses={200: GoldSerializer(many=True)})
    @extend_schema(methods=["POST"], request=GoldInputSerializer, responses={201: GoldSerializer})
    @action(detail=True, methods=["get", "post"])
    def gold(self, request: Request, pool: str | None = None) -> Response:
        """Gold labels: items with a known grade, served to every rater unannounced."""
        judging = self.get_object()
        if request.method == "GET":
            golds = GoldLabel.objects.filter(item__pool=judging.pool).select_related(
                "item__topic", "item__document", "created_by"
            )
            return Response(GoldSerializer(golds.order_by("item__topic__qid", "item__document__docid"),
                                           many=True).data)  # fmt: skip
        form = GoldInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        item = _pool_item(judging.pool, form.validated_data)
        gold = adjudication.set_gold(item=item, grade=form.validated_data["grade"], by=request.user)
        return Response(GoldSerializer(gold).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("item_id", int, OpenApiParameter.PATH)],
        request=None,
        responses={204: OpenApiResponse(description="The item is no longer gold.")},
    )
    @action(detail=True, methods=["delete"], url_path=r"gold/(?P<item_id>[0-9]+)", url_name="remove-gold")
    def remove_gold(self, request: Request, pool: str | None = None, item_id: str = "") -> Response:
        judging = self.get_object()
        item = get_object_or_404(PoolItem, pool=judging.pool, pk=int(item_id), gold_label__isnull=False)
        adjudication.remove_gold(item=item)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={200: RaterStatsSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def stats(self, request: Request, pool: str | None = None) -> Response:
        """Per rater: judgements, median seconds, grade distribution, unrateable share, skips, gold
        accuracy (exact and within one grade)."""
        judging = self.get_object()
        rows = [row.as_dict() for row in stats.rater_statistics(pool=judging.pool)]
        return Response(RaterStatsSerializer(rows, many=True).data)

    @extend_schema(
        methods=["GET"],
        parameters=[OpenApiParameter("gap", int, description="override the pool's adjudication gap")],
        responses={200: QueueEntrySerializer(many=True)},
    )
    @extend_schema(methods=["POST"], request=AdjudicateSerializer, responses={201: AdjudicationSerializer})
    @action(detail=True, methods=["get", "post"])
    def adjudication(self, request: Request, pool: str | None = None) -> Response:
        """The queue of items whose grades differ by at least the gap, with every grade, note and rater;
        POST records the adjudicator's decision (it overrides aggregation)."""
        judging = self.get_object()
        if request.method == "GET":
            query = QueueQuerySerializer(data=request.query_params)
            query.is_valid(raise_exception=True)
            queue = stats.adjudication_queue_details(pool=judging.pool, gap=query.validated_data.get("gap"))
            return Response(QueueEntrySerializer(queue, many=True).data)
        form = AdjudicateSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        item = _pool_item(judging.pool, data)
        decision = adjudication.adjudicate(
            item=item, adjudicator=request.user, grade=data["grade"], unrateable=data["unrateable"],
            note=data["note"],
        )  # fmt: skip
        return Response(AdjudicationSerializer(decision).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: AdjudicationSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def adjudications(self, request: Request, pool: str | None = None) -> Response:
        """The decisions recorded in this pool."""
        judging = self.get_object()
        decisions = Adjudication.objects.filter(item__pool=judging.pool).select_related(
            "item__topic", "item__document", "adjudicator"
        )
        return Response(AdjudicationSerializer(decisions.order_by("-decided_at"), many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("rater", str, description="only this rater's judgements"),
            OpenApiParameter("qid", str, description="only this topic's judgements"),
        ],
        responses={200: PoolJudgementSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def judgements(self, request: Request, pool: str | None = None) -> Response:
        """Every judgement of the pool with its revisions (paginated)."""
        judging = self.get_object()
        rows = (
            Judgement.objects.filter(item__pool=judging.pool)
            .select_related("item__topic", "item__document", "rater")
            .prefetch_related("revisions__changed_by")
            .order_by("item__topic__qid", "item__document__docid", "rater__username")
        )
        if request.query_params.get("rater"):
            rows = rows.filter(rater__username=request.query_params["rater"])
        if request.query_params.get("qid"):
            rows = rows.filter(item__topic__qid=request.query_params["qid"])
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(PoolJudgementSerializer(page, many=True).data)


def register(router: Any) -> None:
    """Register this app's viewsets on the project router."""
    router.register("rubrics", RubricViewSet, basename="rubric")
    router.register("judging", JudgingViewSet, basename="judging")
    router.register("assignments", AssignmentViewSet, basename="assignment")
    router.register("judgements", JudgementViewSet, basename="judgement")
    router.register("pools", RaterPoolViewSet, basename="judging-pool")
    # The rater's `pools/<name>/next/` is a detail route only: moved first, it cannot shadow the pooling
    # app's own `pools` routes, and theirs (registered later in the list) keeps the API root's link.
    router.registry.insert(0, router.registry.pop())

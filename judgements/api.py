"""REST API of the judging app for raters, and rubrics for managers.

Raters (members of a pool's `Judging.raters`):
    GET  /api/assignments/                 my live leases; GET /api/assignments/<id>/ one of mine
    POST /api/assignments/<id>/skip/       give it back (never offered again)
    GET  /api/judgements/                  my judgements (`?pool=`); GET /api/judgements/<id>/
    PATCH /api/judgements/<id>/            revise (the old label is kept as a revision)
    GET  /api/judgements/<id>/history/     the revisions of one of my judgements
The loop itself — lease the next item, judge it, or both in one request — is `judgements.rater_api`;
the campaigns (`/api/judging/`) are `judgements.judging_api`.

Managers (the `pool managers` group) and admins:
    /api/rubrics/                          CRUD; a judged rubric is versioned, never edited in place
    POST /api/rubrics/default/             the default four-grade rubric (created on first use)

Every queryset is scoped to the user: another rater's judgement or assignment answers 404; a rater
calling a manager endpoint answers 403. A refused action (`JudgingError`) answers 400 with its message, on
the field it names (`refusal`).

Blindness: nothing a rater can reach carries run names, ranks, scores, other raters' grades,
the consensus, or whether an item is gold.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, ProtectedError, QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from judgements import errors, labels, lease_ends, rubrics
from judgements.models import Assignment, Judgement, Judging, Rubric
from judgements.serializers import (
    AssignmentPayloadSerializer,
    JudgementSerializer,
    ReviseSerializer,
    RevisionSerializer,
    RubricSerializer,
)
from pooling.models import Pool
from pooling.permissions import IsManager

# ------------------------------------------------------------------------------------------- plumbing


class Refused(APIException):
    """A judging action refused by the services: 400 with the service's message."""

    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "refused"
    default_detail = "This action was refused."


def refusal(exc: errors.JudgingError) -> APIException:
    """The 400 of a refused judging action: its message on the field it names (`JudgingError.field`), as
    a serializer's error would be; with no field, the message as `detail`."""
    return ValidationError(exc.as_data()) if exc.field else Refused(str(exc))


class JudgingAPIMixin:
    """Maps `JudgingError` to its 400 (`refusal`; the services are the one place rules live)."""

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, errors.JudgingError):
            exc = refusal(exc)
        return super().handle_exception(exc)  # type: ignore[misc]  # a mixin of APIView


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


@extend_schema_view(
    list=extend_schema(parameters=[OpenApiParameter("state", str, enum=[s.value for s in Assignment.State])])
)
class AssignmentViewSet(
    JudgingAPIMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The rater's own leases (only in pools they still rate); `?state=` (default `active`)."""

    serializer_class = AssignmentPayloadSerializer

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
            state = self.request.query_params.get("state") or Assignment.State.ACTIVE
            if state not in Assignment.State.values:  # the schema's enum: anything else is a 400, not []
                choices = ", ".join(Assignment.State.values)
                raise ValidationError({"state": [f"{state!r} is not a state; one of {choices}"]})
            queryset = queryset.filter(state=state)
        return queryset

    @extend_schema(request=None, responses={204: OpenApiResponse(description="Skipped.")})
    @action(detail=True, methods=["post"])
    def skip(self, request: Request, pk: str | None = None) -> Response:
        """Give the item back; it is not offered to you again."""
        lease_ends.skip_item(assignment=self.get_object())
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

    # A plain array, not a page: the revisions of one judgement, each made by its rater by hand, are few.
    @extend_schema(responses={200: RevisionSerializer(many=True)})
    @action(detail=True, methods=["get"], pagination_class=None)
    def history(self, request: Request, pk: str | None = None) -> Response:
        """Every revision of one of my judgements, oldest first."""
        judgement = self.get_object()
        revisions = judgement.revisions.select_related("changed_by").order_by("changed_at", "id")
        return Response(RevisionSerializer(revisions, many=True).data)


def register(router: Any) -> None:
    """Register this app's viewsets on the project router (the rater loop's function views are routed in
    `labeling.api_urls`)."""
    from judgements.judging_api import JudgingViewSet

    router.register("rubrics", RubricViewSet, basename="rubric")
    router.register("judging", JudgingViewSet, basename="judging")
    router.register("assignments", AssignmentViewSet, basename="assignment")
    router.register("judgements", JudgementViewSet, basename="judgement")

"""Rater quality API (pool managers): each rater's confusion matrices, accuracy, κ and flags; excluding a
rater's labels from the pool's releases and restoring them."""

from __future__ import annotations

from typing import Any

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from judgements import crowd_quality, exclusions
from judgements.errors import JudgingError
from judgements.exclusions import ExclusionRecord
from judgements.models import Judging, RaterExclusion
from judgements.queries import cached_for_pool
from judgements.report_serializers import RaterQualitySerializer
from labeling.bodies import body_serializer
from labeling.pagination import PagedViewSetMixin
from pooling.models import Pool
from pooling.permissions import IsManager, managed_pool


class ExclusionSerializer(serializers.Serializer):
    rater = serializers.CharField(max_length=150)
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


@extend_schema(parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH, description="pool name")])
class RaterQualityViewSet(PagedViewSetMixin, viewsets.ViewSet):
    """Per-rater quality of a pool and the exclusions of raters from its releases."""

    permission_classes = [IsManager]
    lookup_field = "name"

    def _pool(self, name: str | None) -> Pool:
        pool = managed_pool(self.request, name or "", queryset=Pool.objects.all())
        if not Judging.objects.filter(pool=pool).exists():
            raise Http404
        return pool

    @extend_schema(responses={200: RaterQualitySerializer})
    def retrieve(self, request: Request, name: str | None = None) -> Response:
        return Response(cached_for_pool(self._pool(name), "rater-quality", crowd_quality.pool_rater_quality))

    @extend_schema(methods=["GET"], responses={200: body_serializer(ExclusionRecord)(many=True)})
    @extend_schema(
        methods=["POST"],
        request=ExclusionSerializer,
        responses={201: body_serializer(ExclusionRecord)},
    )
    @action(detail=True, methods=["get", "post"], url_path="exclusions")
    def exclusions(self, request: Request, name: str | None = None) -> Response:
        pool = self._pool(name)
        if request.method == "GET":
            rows = RaterExclusion.objects.filter(pool=pool).select_related(
                "rater", "excluded_by", "restored_by"
            )
            return self.page(rows, lambda page: [exclusions.exclusion_record(row) for row in page])
        params = ExclusionSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        wanted = params.validated_data["rater"]
        # Only the pool's raters are found: an unknown name and someone else's account answer alike, so
        # the answer never tells which usernames exist.
        rater = exclusions.pool_raters(pool=pool).filter(username=wanted).first()
        if rater is None:
            raise serializers.ValidationError({"rater": [f"{wanted} has no judgement in {pool.name}"]})
        try:
            row = exclusions.exclude_rater(
                pool=pool,
                rater=rater,
                by=request.user,
                reason=params.validated_data["reason"],
            )
        except JudgingError as exc:
            raise serializers.ValidationError({"rater": [str(exc)]}) from None
        return Response(exclusions.exclusion_record(row), status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: body_serializer(ExclusionRecord)})
    @action(detail=True, methods=["delete"], url_path=r"exclusions/(?P<username>[^/]+)")
    def restore(self, request: Request, name: str | None = None, username: str = "") -> Response:
        return self._restore(self._pool(name), username)

    @extend_schema(
        operation_id="rater_quality_exclusions_destroy_by_query",
        parameters=[OpenApiParameter("rater", str, OpenApiParameter.QUERY, required=True)],
        request=None,
        responses={200: body_serializer(ExclusionRecord)},
    )
    @exclusions.mapping.delete
    def restore_named(self, request: Request, name: str | None = None) -> Response:
        """`DELETE …/exclusions/?rater=NAME`: any name, where the path holds neither `..` nor a `/`."""
        return self._restore(self._pool(name), request.query_params.get("rater", ""))

    def _restore(self, pool: Pool, username: str) -> Response:
        """End the exclusion of the pool's rater `username`; 404 for anyone else (`pool_raters`)."""
        rater = exclusions.pool_raters(pool=pool).filter(username=username).first()
        if rater is None:
            raise Http404
        try:
            row = exclusions.restore_rater(pool=pool, rater=rater, by=self.request.user)
        except JudgingError as exc:
            raise serializers.ValidationError({"rater": [str(exc)]}) from None
        return Response(exclusions.exclusion_record(row))


def register(router: Any) -> None:
    router.register("rater-quality", RaterQualityViewSet, basename="rater-quality")

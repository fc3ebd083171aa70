"""Evaluation API (managers): a pool's report, its pool-bias table, the two-stage diagnosis."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from evaluation import noise_pool, services
from judgements.queries import cached_for_pool
from pooling.models import Pool
from pooling.permissions import IsManager, managed_pool


class TwoStageSerializer(serializers.Serializer):
    candidate = serializers.CharField()
    reranked = serializers.CharField()
    k = serializers.IntegerField(min_value=1, max_value=10000, default=100)
    policy = serializers.CharField(default="majority")


class NoiseFloorSerializer(serializers.Serializer):
    policy = serializers.CharField(default="majority")
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    topic_samples = serializers.IntegerField(
        min_value=10, max_value=noise_pool.MAX_TOPIC_SAMPLES, default=1000
    )
    label_samples = serializers.IntegerField(min_value=0, max_value=noise_pool.MAX_LABEL_SAMPLES, default=200)
    splits = serializers.IntegerField(min_value=0, max_value=noise_pool.MAX_SPLITS, default=20)


class ReportSerializer(serializers.Serializer):
    policy = serializers.CharField(default="majority")
    gain = serializers.ChoiceField(choices=["linear", "exp"], default="linear")
    judge = serializers.CharField(
        required=False, allow_blank=True, help_text="an admitted model judge whose labels fill unjudged items"
    )

    def validate_judge(self, value: str) -> str | None:
        return value.strip() or None


@extend_schema(parameters=[OpenApiParameter("name", str, OpenApiParameter.PATH, description="pool name")])
class EvaluationViewSet(viewsets.ViewSet):
    """Scores of the runs of a pool's collection on the pool's current labels."""

    permission_classes = [IsManager]
    lookup_field = "name"

    def _pool(self, name: str | None) -> Pool:
        return managed_pool(self.request, name or "", queryset=Pool.objects.all())

    @extend_schema(parameters=[ReportSerializer], responses={200: OpenApiResponse(description="report")})
    @action(detail=True, methods=["get"])
    def report(self, request: Request, name: str | None = None) -> Response:
        params = ReportSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        try:
            data = cached_for_pool(self._pool(name), "report", services.pool_report, **params.validated_data)
        except services.PARAMETER_ERRORS as exc:
            field = "judge" if str(exc).startswith("judge: ") else "policy"
            raise serializers.ValidationError({field: [str(exc)]}) from None
        return Response(data)

    @extend_schema(
        parameters=[OpenApiParameter("policy", str, default="majority")],
        responses={200: OpenApiResponse(description="pool bias")},
    )
    @action(detail=True, methods=["get"], url_path="pool-bias")
    def pool_bias(self, request: Request, name: str | None = None) -> Response:
        policy = request.query_params.get("policy", "majority")
        try:
            return Response(cached_for_pool(self._pool(name), "bias", services.pool_bias, policy=policy))
        except services.PARAMETER_ERRORS as exc:
            raise serializers.ValidationError({"policy": [str(exc)]}) from None

    @extend_schema(parameters=[TwoStageSerializer], responses={200: OpenApiResponse(description="diagnosis")})
    @action(detail=True, methods=["get"], url_path="two-stage")
    def two_stage(self, request: Request, name: str | None = None) -> Response:
        params = TwoStageSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        try:
            data = cached_for_pool(self._pool(name), "two-stage", services.two_stage, **params.validated_data)
        except services.PARAMETER_ERRORS as exc:
            raise serializers.ValidationError({"candidate": [str(exc)]}) from None
        return Response(data)

    @extend_schema(
        parameters=[NoiseFloorSerializer],
        responses={200: OpenApiResponse(description="noise floor: stability, intervals, verdicts")},
    )
    @action(detail=True, methods=["get"], url_path="noise-floor")
    def noise_floor(self, request: Request, name: str | None = None) -> Response:
        params = NoiseFloorSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        try:
            data = cached_for_pool(
                self._pool(name), "noise-floor", noise_pool.pool_noise_floor, **params.validated_data
            )
        except services.PARAMETER_ERRORS as exc:
            raise serializers.ValidationError({"policy": [str(exc)]}) from None
        return Response(data)


def register(router: Any) -> None:
    router.register("evaluation", EvaluationViewSet, basename="evaluation")

"""Evaluation API (managers): a pool's report, its pool-bias table, the two-stage diagnosis."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from evaluation import noise_pool, services
from evaluation.serializers import (
    EvaluationReportSerializer,
    NoiseFloorReportSerializer,
    PoolBiasSerializer,
    TwoStageReportSerializer,
)
from judgements.queries import cached_for_pool
from judgements.release_policy import PolicyField
from pooling.errors import Refused, UnknownRuns
from pooling.models import Pool
from pooling.permissions import IsManager, managed_pool


class PolicySerializer(serializers.Serializer):
    policy = PolicyField()


class TwoStageSerializer(serializers.Serializer):
    candidate = serializers.CharField()
    reranked = serializers.CharField()
    k = serializers.IntegerField(min_value=1, max_value=10000, default=100)
    policy = PolicyField()


class NoiseFloorSerializer(serializers.Serializer):
    policy = PolicyField()
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    topic_samples = serializers.IntegerField(
        min_value=10, max_value=noise_pool.MAX_TOPIC_SAMPLES, default=1000
    )
    label_samples = serializers.IntegerField(min_value=0, max_value=noise_pool.MAX_LABEL_SAMPLES, default=200)
    splits = serializers.IntegerField(min_value=0, max_value=noise_pool.MAX_SPLITS, default=20)


class ReportSerializer(serializers.Serializer):
    policy = PolicyField()
    gain = serializers.ChoiceField(choices=["linear", "exp"], default="linear")
    judge = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="an admitted model judge whose labels fill the items people left pending",
    )
    average = serializers.ChoiceField(
        choices=services.AVERAGES,
        default="common",
        help_text="common: each run over the judged topics it has (trec_eval's default); all: over every "
        "judged topic, one the run lacks scoring 0 (trec_eval -c). Topics nobody judged are in neither.",
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

    def _answer(
        self,
        name: str | None,
        key: str,
        compute: Callable[..., Any],
        params: dict[str, Any],
    ) -> Response:
        """`compute(pool=pool, **params)` on the manager's pool `name`, cached per pool under `key`. A
        parameter the computation refuses is a 400 on it (`_refused`)."""
        try:
            return Response(cached_for_pool(self._pool(name), key, compute, **params))
        except services.PARAMETER_ERRORS as exc:
            raise serializers.ValidationError(_refused(exc, params)) from None

    @extend_schema(parameters=[ReportSerializer], responses={200: EvaluationReportSerializer})
    @action(detail=True, methods=["get"])
    def report(self, request: Request, name: str | None = None) -> Response:
        return self._answer(name, "report", services.pool_report, _query(ReportSerializer, request))

    @extend_schema(parameters=[PolicySerializer], responses={200: PoolBiasSerializer})
    @action(detail=True, methods=["get"], url_path="pool-bias")
    def pool_bias(self, request: Request, name: str | None = None) -> Response:
        return self._answer(name, "bias", services.pool_bias, _query(PolicySerializer, request))

    @extend_schema(parameters=[TwoStageSerializer], responses={200: TwoStageReportSerializer})
    @action(detail=True, methods=["get"], url_path="two-stage")
    def two_stage(self, request: Request, name: str | None = None) -> Response:
        params = _query(TwoStageSerializer, request)
        return self._answer(name, "two-stage", services.two_stage, params)

    @extend_schema(
        parameters=[NoiseFloorSerializer],
        responses={200: NoiseFloorReportSerializer},
    )
    @action(detail=True, methods=["get"], url_path="noise-floor")
    def noise_floor(self, request: Request, name: str | None = None) -> Response:
        params = _query(NoiseFloorSerializer, request)
        return self._answer(name, "noise-floor", noise_pool.pool_noise_floor, params)


def _refused(exc: Exception, params: dict[str, Any]) -> dict[str, list[str]]:
    """A refused parameter's errors by the parameter: a run name no run has on the parameters that give it
    (`candidate`, `reranked`), a refusal on the field it names (`judge`, `policy`), anything else (a
    policy that does not parse) on `policy`."""
    if isinstance(exc, UnknownRuns):
        message = dict(zip(exc.missing, exc.fields["runs"], strict=True))
        named = {f: [message[params[f]]] for f in ("candidate", "reranked") if params.get(f) in message}
        return named or exc.fields
    if isinstance(exc, Refused) and exc.field:
        return exc.as_data()
    return {"policy": [str(exc)]}


def _query(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    """The query parameters, validated by `serializer_class` (a 400 on the fields it refuses)."""
    params = serializer_class(data=request.query_params)
    params.is_valid(raise_exception=True)
    return dict(params.validated_data)


def register(router: Any) -> None:
    router.register("evaluation", EvaluationViewSet, basename="evaluation")

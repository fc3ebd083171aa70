"""Model judges of a pool through the API (managers): list, create, read (with the gate), run, threshold."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from judgements.api import JudgingAPIMixin
from judgements.judges import create_judge, start_judge_run
from judgements.models import Judge, Judging
from labeling.pagination import PagedViewSetMixin
from pooling.models import Pool
from pooling.permissions import IsManager, managed_pool


class JudgeSerializer(serializers.ModelSerializer):
    program = serializers.CharField(
        write_only=True, required=False, help_text="An external judge: a program the server offers."
    )

    class Meta:
        model = Judge
        fields = [
            "name", "kind", "method", "program", "seed", "folds", "timeout_seconds", "retries",
            "run_counts", "admitted", "gate", "created_at",
        ]  # fmt: skip
        read_only_fields = ["kind", "run_counts", "admitted", "gate", "created_at"]
        # Their ranges are the service's (`judges.create_judge`): a 400 on the field through `refusal`.
        # The pool's unique-name rule is checked by the service, with the pool.
        validators: list[Any] = []


class ThresholdSerializer(serializers.Serializer):
    gate_kappa = serializers.FloatField(min_value=-1.0, max_value=1.0, allow_null=True)


class JudgeRunSerializer(serializers.Serializer):
    """The job a judge's run started (poll `/api/jobs/<job>/`)."""

    job = serializers.IntegerField()
    status = serializers.CharField()


POOL = OpenApiParameter("pool", str, OpenApiParameter.PATH, description="pool name")
JUDGE = OpenApiParameter("name", str, OpenApiParameter.PATH, description="judge name")


@extend_schema(parameters=[POOL])
class JudgeViewSet(JudgingAPIMixin, PagedViewSetMixin, viewsets.ViewSet):
    """A pool's model judges; running one is a job that ends with its gate measured."""

    permission_classes = [IsManager]
    lookup_field = "name"
    lookup_value_regex = "[-a-zA-Z0-9_]+"

    def _pool(self, pool: str) -> Pool:
        return managed_pool(self.request, pool, queryset=Pool.objects.all())

    def _judge(self, pool: str, name: str | None) -> Judge:
        return get_object_or_404(Judge, pool=self._pool(pool), name=name or "")

    @extend_schema(responses={200: JudgeSerializer(many=True)})
    def list(self, request: Request, pool: str) -> Response:
        judges = Judge.objects.filter(pool=self._pool(pool)).order_by("name")
        return self.page(judges, lambda page: JudgeSerializer(page, many=True).data)

    @extend_schema(request=JudgeSerializer, responses={201: JudgeSerializer})
    def create(self, request: Request, pool: str) -> Response:
        found = self._pool(pool)
        serializer = JudgeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        judge = create_judge(pool=found, by=request.user, **serializer.validated_data)  # refused: a 400
        return Response(JudgeSerializer(judge).data, status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[JUDGE], responses={200: JudgeSerializer})
    def retrieve(self, request: Request, pool: str, name: str | None = None) -> Response:
        return Response(JudgeSerializer(self._judge(pool, name)).data)

    @extend_schema(
        parameters=[JUDGE],
        request=None,
        responses={202: JudgeRunSerializer, 503: OpenApiResponse(description="the broker refused the job")},
    )
    @action(detail=True, methods=["post"])
    def run(self, request: Request, pool: str, name: str | None = None) -> Response:
        judge = self._judge(pool, name)
        job = start_judge_run(judge=judge, user=request.user)  # a refused broker: the API's 503
        return Response({"job": job.pk, "status": job.status}, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=ThresholdSerializer, responses={200: ThresholdSerializer})
    @action(detail=False, methods=["put"])
    def threshold(self, request: Request, pool: str) -> Response:
        """The κ a judge must reach in this pool (null: the raters' own agreement)."""
        found = self._pool(pool)
        serializer = ThresholdSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        judging = get_object_or_404(Judging, pool=found)
        judging.gate_kappa = serializer.validated_data["gate_kappa"]
        judging.save(update_fields=["gate_kappa"])
        return Response({"gate_kappa": judging.gate_kappa})


def register(router: Any) -> None:
    router.register(r"pools/(?P<pool>[-a-zA-Z0-9_]+)/judges", JudgeViewSet, basename="pool-judges")

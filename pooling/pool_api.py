"""REST API of pools: configure, edit the texts, build, add and remove runs, statistics, the export, and
deleting a pool nobody has judged.

For pool managers and admins (a pool is seen by its managers only); raters never see runs, ranks or
scores. Collections, runs, imports and jobs are `pooling.api`.
"""

from __future__ import annotations

import io
from dataclasses import asdict
from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from labeling.bodies import BodySerializer, body_serializer
from pooling import deletion, pool_build, pool_reads, pool_text, stats
from pooling import errors as pooling_errors
from pooling.api import JobSerializer, ManagersMixin
from pooling.jobs import active_build, latest_build, latest_builds, start_build
from pooling.models import Collection, Pool, PoolRun, Run
from pooling.permissions import IsManager, ManagedNameField


def pool_bias_url(pool: Pool) -> str | None:
    """The evaluation app's leave-one-run-out report of `pool`, when that page exists (it may not yet)."""
    try:
        return reverse("evaluation:pool-bias", kwargs={"name": pool.name})
    except NoReverseMatch:
        return None


def pool_run_names(pool: Pool) -> list[str]:
    """The names of the pool's contributing runs, sorted."""
    return sorted(PoolRun.objects.filter(pool=pool).values_list("run__name", flat=True))


class PoolSerializer(serializers.ModelSerializer):
    """A pool's configuration, status and judging progress (selected and judged items)."""

    collection = serializers.SlugRelatedField(slug_field="name", read_only=True)
    runs = serializers.SerializerMethodField()
    price_per_judgement = serializers.DecimalField(max_digits=8, decimal_places=2, coerce_to_string=False)
    progress = serializers.SerializerMethodField()
    build_job = serializers.SerializerMethodField()

    class Meta:
        model = Pool
        fields = [
            "id", "name", "description", "instructions", "collection", "segment", "runs", "strategy", "depth",
            "budget", "seed", "judgements_per_item", "double_judge_fraction", "relevance_level",
            "price_per_judgement", "status", "created_at", "built_at", "progress", "build_job",
        ]  # fmt: skip

    def get_runs(self, pool: Pool) -> list[str]:
        return sorted(run.name for run in pool.runs.all())

    def get_progress(self, pool: Pool) -> dict[str, int]:
        progress = self.context.get("progress") or stats.pool_progress([pool])
        return progress.get(pool.pk, {})

    def get_build_job(self, pool: Pool) -> int | None:
        jobs = self.context.get("jobs")
        job = jobs.get(pool.pk) if jobs is not None else latest_build(pool)
        return job.pk if job is not None else None


class PoolDetailSerializer(PoolSerializer):
    """A pool with its size and cost estimate (`stats.pool_estimate`: before the build, from the runs; once
    built, what its items require, as the pool page and the dashboard show it)."""

    estimate = serializers.SerializerMethodField()

    class Meta(PoolSerializer.Meta):
        fields = [*PoolSerializer.Meta.fields, "estimate"]

    @extend_schema_field(body_serializer(stats.PoolEstimate))
    def get_estimate(self, pool: Pool) -> dict[str, Any]:
        return asdict(stats.pool_estimate(pool))


def pool_text_field(**kwargs: Any) -> serializers.CharField:
    """A pool's description or instructions, as a new pool and an edit both take them (`pool_text`)."""
    return serializers.CharField(required=False, allow_blank=True, **kwargs)


class PoolCreateSerializer(serializers.Serializer):
    """What `pool_build.create_pool` takes; run names are looked up in the collection."""

    name = serializers.SlugField(max_length=100)
    description = pool_text_field(default="")
    instructions = pool_text_field(default="")
    collection = ManagedNameField(queryset=Collection.objects.all())  # one makes a pool over one's own
    runs = serializers.ListField(child=serializers.CharField(max_length=200), allow_empty=False)
    segment = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
    strategy = serializers.ChoiceField(choices=Pool.Strategy.values, default=Pool.Strategy.DEPTH)
    depth = serializers.IntegerField(min_value=1, max_value=2_147_483_647, default=10)
    budget = serializers.IntegerField(
        min_value=1, max_value=2_147_483_647, required=False, allow_null=True, default=None
    )
    seed = serializers.IntegerField(min_value=-(2**31), max_value=2**31 - 1, default=0)
    judgements_per_item = serializers.IntegerField(min_value=1, max_value=32_767, default=1)
    double_judge_fraction = serializers.FloatField(
        min_value=0.0, max_value=1.0, required=False, allow_null=True, default=None
    )
    relevance_level = serializers.IntegerField(min_value=1, max_value=32_767, default=1)
    price_per_judgement = serializers.DecimalField(
        max_digits=8, decimal_places=2, min_value=0, default=1, coerce_to_string=False
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Run names looked up in the collection, then the service's rules (`pool_build.pool_problems`),
        each under its field."""
        collection: Collection = attrs["collection"]
        try:
            attrs["runs"] = Run.objects.named(collection, attrs["runs"])
        except pooling_errors.PoolError as exc:
            raise ValidationError(exc.fields) from None
        problems = pool_build.pool_problems(
            collection=collection,
            name=attrs["name"],
            runs=attrs["runs"],
            **pool_build.PoolOptions.given(attrs),
        )
        if problems:
            raise ValidationError(problems)
        return attrs


class PoolEditSerializer(serializers.Serializer):
    """A pool's description and instructions (`pool_text.edit_pool_text`), the fields a new pool takes
    them in; any other field is a 400 naming it (`pool_text.not_editable`): a pool's selection stays as
    made."""

    description = pool_text_field()  # one not given stays as it is
    instructions = pool_text_field()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if problems := pool_text.not_editable(self.initial_data):
            raise ValidationError(problems)
        return attrs


class RunNamesSerializer(serializers.Serializer):
    runs = serializers.ListField(child=serializers.CharField(max_length=200), allow_empty=False)


class RunsChangedSerializer(BodySerializer):
    """What adding or taking out runs did (`pool_build.BuildSummary`'s counts), and the pool's runs now."""

    class Meta:
        dataclass = pool_build.BuildSummary
        fields = [*pool_build.BuildSummary.count_names(), "runs"]

    runs = serializers.ListField(child=serializers.CharField())


class PoolStatisticsSerializer(BodySerializer):
    class Meta:
        dataclass = stats.PoolStatistics
        extra_kwargs = {
            "overlap": {"help_text": "the Jaccard overlap of each pair of runs: {run: {run: jaccard}}"}
        }


class BuildUnderWaySerializer(serializers.Serializer):
    """A build refused because one is under way: why, and the job building the pool (poll it)."""

    detail = serializers.CharField()
    job = JobSerializer()


class PlainTextRenderer(BaseRenderer):
    """`text/plain` for the pool export (errors, which are dicts, come out as their JSON)."""

    media_type = "text/plain"
    format = "txt"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        if isinstance(data, str | bytes):
            return data.encode() if isinstance(data, str) else data
        return JSONRenderer().render(data)


class PoolViewSet(ManagersMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Pools: configure (with the size and cost estimate), edit the description and instructions, build (a
    job), add and remove runs, statistics, the export, the managers, and delete one nobody has judged. A
    pool's managers and admins only; a new pool is its creator's."""

    permission_classes = [IsManager]
    lookup_field = "name"

    def get_queryset(self) -> Any:
        pools = Pool.objects.managed_by(self.request.user).select_related("collection")
        return pools.prefetch_related("runs").order_by("name")

    def get_serializer_class(self) -> Any:
        if self.action == "create":
            return PoolCreateSerializer
        if self.action == "retrieve":
            return PoolDetailSerializer
        if self.action == "partial_update":
            return PoolEditSerializer
        return PoolSerializer

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        pools = list(page if page is not None else self.get_queryset())
        jobs = latest_builds(pools)
        context = {**self.get_serializer_context(), "progress": stats.pool_progress(pools), "jobs": jobs}
        data = PoolSerializer(pools, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    @extend_schema(request=PoolCreateSerializer, responses={201: PoolDetailSerializer})
    def create(self, request: Request) -> Response:
        """Configure a pool (not built): 400 naming the field on bad input."""
        form = PoolCreateSerializer(data=request.data, context={"request": request})
        form.is_valid(raise_exception=True)
        try:
            pool = pool_build.create_pool(**form.validated_data, created_by=request.user)
        except pooling_errors.PoolError as exc:  # the name taken since the serializer's checks, say
            raise ValidationError(exc.as_data(otherwise="non_field_errors")) from None
        pool = self.get_queryset().get(pk=pool.pk)
        return Response(
            PoolDetailSerializer(pool, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=PoolEditSerializer, responses={200: PoolDetailSerializer})
    def partial_update(self, request: Request, name: str | None = None) -> Response:
        """Edit the pool's description and instructions (`pool_text.edit_pool_text`, what the pool page's
        Edit calls), at any time: 200 with the pool; 400 naming any other field given (a pool's selection
        stays as made: delete it if nobody has judged it and make it again, or add or remove runs)."""
        pool = self.get_object()
        form = PoolEditSerializer(data=request.data, partial=True)
        form.is_valid(raise_exception=True)
        try:
            pool_text.edit_pool_text(pool=pool, **form.validated_data)
        except pooling_errors.PoolError as exc:
            raise ValidationError(exc.as_data(otherwise="non_field_errors")) from None
        pool = self.get_queryset().get(pk=pool.pk)
        return Response(PoolDetailSerializer(pool, context=self.get_serializer_context()).data)

    @extend_schema(request=None, responses={204: None, 409: None})
    def destroy(self, request: Request, name: str | None = None) -> Response:
        """Delete a pool nobody has judged, with its items (`deletion.delete_pool`; its runs stay in the
        collection): 204; 409 saying why while it is being built or once it holds judgements, gold
        labels, adjudications or releases."""
        pool = self.get_object()
        try:
            deletion.delete_pool(pool=pool)
        except pooling_errors.PoolError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={202: JobSerializer, 409: BuildUnderWaySerializer})
    @action(detail=True, methods=["post"])
    def build(self, request: Request, name: str | None = None) -> Response:
        """Enqueue a build (a Celery task); answers 202 with the job to poll, 409 if one is under way."""
        pool = self.get_object()
        running = active_build(pool)
        if running is not None:
            return Response(
                {"detail": f"pool {pool.name!r} is being built already", "job": JobSerializer(running).data},
                status=status.HTTP_409_CONFLICT,
            )
        job = start_build(pool=pool, user=request.user)
        job.refresh_from_db()
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=RunNamesSerializer, responses={200: RunsChangedSerializer})
    @action(detail=True, methods=["post"], url_path="runs")
    def add_runs(self, request: Request, name: str | None = None) -> Response:
        """Add runs: a built pool gains only documents not already pooled; nothing judged changes."""
        pool = self.get_object()
        form = RunNamesSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            runs = Run.objects.named(pool.collection, form.validated_data["runs"])
            summary = pool_build.add_runs(pool=pool, runs=runs)
        except pooling_errors.PoolError as exc:
            raise ValidationError(exc.as_data(otherwise="runs")) from None
        return Response({**summary.as_dict(), "runs": pool_run_names(pool)})

    @extend_schema(request=None, responses={200: RunsChangedSerializer})
    @action(detail=True, methods=["delete"], url_path=r"runs/(?P<run_name>[^/]+)")
    def remove_run(self, request: Request, name: str | None = None, run_name: str = "") -> Response:
        """Take a run out: items only it contributed go, unless they have a judgement."""
        pool = self.get_object()
        link = get_object_or_404(PoolRun.objects.select_related("run"), pool=pool, run__name=run_name)
        summary = pool_build.remove_run(pool=pool, run=link.run)
        return Response({**summary.as_dict(), "runs": pool_run_names(pool)})

    @extend_schema(responses={200: PoolStatisticsSerializer})
    @action(detail=True, methods=["get"])
    def statistics(self, request: Request, name: str | None = None) -> Response:
        """Items per topic, per-run contributed and unique items, the overlap matrix, judgements and cost."""
        pool = self.get_object()
        statistics = stats.pool_statistics(pool)
        statistics.pool_bias_url = pool_bias_url(pool) if statistics.judgements_done else None
        return Response(statistics.as_dict())

    @extend_schema(responses={(200, "text/plain"): str})
    @action(
        detail=True, methods=["get"], renderer_classes=[JSONRenderer, BrowsableAPIRenderer, PlainTextRenderer]
    )
    def export(self, request: Request, name: str | None = None) -> HttpResponse:
        """The pool as `qid<TAB>docid<TAB>run,run` lines (pool_reads.export_pool)."""
        pool = self.get_object()
        out = io.StringIO()
        pool_reads.export_pool(pool=pool, out=out)
        response = HttpResponse(out.getvalue(), content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{pool.name}.pool.tsv"'
        return response


def register(router: Any) -> None:
    """Pool endpoints (configuration, build, runs, statistics, export)."""
    router.register("pools", PoolViewSet, basename="pool")

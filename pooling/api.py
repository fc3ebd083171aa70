"""REST API of the pooling app: collections, topics, documents, runs, file imports, job status and pools.

Everything here is for pool managers and admins: raters never see runs, ranks or scores.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from pooling import deletion, imports, ownership, pool_build, pool_reads, stats
from pooling import errors as pooling_errors
from pooling.jobs import active_build, latest_build, retry_job, start_build, start_import
from pooling.models import Collection, Document, Job, Pool, PoolRun, Run, Topic
from pooling.permissions import IsManager


class CollectionSerializer(serializers.ModelSerializer):
    documents = serializers.IntegerField(source="num_documents", read_only=True)
    topics = serializers.IntegerField(source="num_topics", read_only=True)
    runs = serializers.IntegerField(source="num_runs", read_only=True)

    class Meta:
        model = Collection
        fields = ["id", "name", "description", "created_at", "documents", "topics", "runs"]
        read_only_fields = ["id", "created_at"]


class TopicSerializer(serializers.ModelSerializer):
    class Meta:
        model = Topic
        fields = ["id", "qid", "query", "description", "narrative", "segments"]


class DocumentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Document
        fields = ["id", "docid", "title", "text", "url", "metadata"]


class RunSerializer(serializers.ModelSerializer):
    collection = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "collection",
            "name",
            "description",
            "source_file",
            "num_rows",
            "num_topics",
            "created_at",
        ]


class JobSerializer(serializers.ModelSerializer):
    collection = serializers.SlugRelatedField(slug_field="name", read_only=True)
    progress = serializers.SerializerMethodField()
    message = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id", "kind", "status", "collection", "params", "upload_name", "progress", "message",
            "counts", "errors", "warnings", "result", "created_at", "started_at", "finished_at",
            "heartbeat_at", "attempts", "retry_of", "page",
        ]  # fmt: skip

    page = serializers.SerializerMethodField()

    def get_progress(self, job: Job) -> float:
        return float(job.live()["progress"])

    def get_page(self, job: Job) -> str:
        """The job's page (live progress, errors, retry), for a manager's browser."""
        return reverse("jobs:job-detail", kwargs={"job_id": job.pk})

    def get_message(self, job: Job) -> str:
        return str(job.live()["message"])


class ImportSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["documents", "topics", "run"])
    file = serializers.FileField()
    format = serializers.ChoiceField(choices=["jsonl", "tsv", "trec"], required=False)
    name = serializers.CharField(required=False, max_length=200)
    description = serializers.CharField(required=False, allow_blank=True)
    replace = serializers.BooleanField(required=False, default=False)
    skip_unknown_topics = serializers.BooleanField(required=False, default=False)


class UsernamesSerializer(serializers.Serializer):
    usernames = serializers.ListField(
        child=serializers.CharField(max_length=150), min_length=1, max_length=100
    )


class ManagersMixin:
    """`GET/POST <object>/managers/` (list, add) and `DELETE <object>/managers/<username>/` for a
    collection or a pool its managers reach (`get_queryset` is scoped to those for these actions)."""

    MANAGE_ACTIONS = {"managers", "remove_manager"}

    @extend_schema(methods=["POST"], request=UsernamesSerializer)
    @action(detail=True, methods=["get", "post"])
    def managers(self, request: Request, name: str | None = None) -> Response:
        """The managers (usernames); POST `{"usernames": [...]}` adds users who hold the manager role."""
        owned = self.get_object()  # type: ignore[attr-defined]  # a mixin of GenericViewSet
        if request.method == "GET":
            return Response({"managers": ownership.manager_names(owned=owned)})
        form = UsernamesSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        from django.contrib.auth import get_user_model

        wanted = list(dict.fromkeys(form.validated_data["usernames"]))
        users = {u.get_username(): u for u in get_user_model().objects.filter(username__in=wanted)}
        missing = [username for username in wanted if username not in users]
        if missing:
            raise ValidationError({"usernames": [f"no user named {', '.join(map(repr, missing))}"]})
        try:
            names = ownership.add_managers(owned=owned, users=[users[username] for username in wanted])
        except ownership.OwnershipError as exc:
            raise ValidationError({"usernames": [str(exc)]}) from None
        return Response({"managers": names})

    @extend_schema(request=None)
    @action(
        detail=True, methods=["delete"], url_path=r"managers/(?P<username>[^/]+)", url_name="remove-manager"
    )
    def remove_manager(self, request: Request, name: str | None = None, username: str = "") -> Response:
        """Take a manager off (the last one stays)."""
        owned = self.get_object()  # type: ignore[attr-defined]  # a mixin of GenericViewSet
        user = get_object_or_404(owned.managers.all(), username=username)
        try:
            names = ownership.remove_manager(owned=owned, user=user)
        except ownership.OwnershipError as exc:
            raise ValidationError({"username": [str(exc)]}) from None
        return Response({"managers": names})


class CollectionViewSet(
    ManagersMixin,
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Collections, with nested topics, documents and runs, and file imports (a Celery task each).

    A manager reads the collections they manage and those of their pools; imports and managers are for
    the collection's own managers."""

    permission_classes = [IsManager]
    serializer_class = CollectionSerializer
    lookup_field = "name"

    def get_queryset(self) -> Any:
        from django.db.models import Count

        collections = Collection.objects.all()
        if self.action in {"imports", *self.MANAGE_ACTIONS}:
            collections = collections.managed_by(self.request.user)
        else:
            collections = collections.visible_to(self.request.user)
        return collections.annotate(
            num_documents=Count("documents", distinct=True),
            num_topics=Count("topics", distinct=True),
            num_runs=Count("runs", distinct=True),
        )

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        collection = imports.create_collection(
            name=data["name"], description=data.get("description", ""), created_by=self.request.user
        )
        collection.num_documents = collection.num_topics = collection.num_runs = 0  # type: ignore[attr-defined]  # the counts the listing's .annotate() gives
        serializer.instance = collection

    @extend_schema(request=ImportSerializer, responses={202: JobSerializer, 400: None})
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def imports(self, request: Request, name: str | None = None) -> Response:
        """Upload a file (documents, topics or a run); answers 202 with the job to poll.

        A file up to IMPORT_CHECK_MAX_BYTES (20 MB) is first imported in a transaction that is rolled
        back: if it would fail, the answer is 400 with `file` listing the errors by line, and nothing is
        stored (no job either). A larger file is checked by its job: 202, then the job fails with the
        errors."""
        collection = self.get_object()
        form = ImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        upload = data.pop("file")
        kind = data.pop("kind")
        try:
            job = start_import(
                collection=collection, kind=kind, upload=upload, params=data, user=request.user
            )
        except pooling_errors.ImportFailed as exc:
            raise ValidationError({"file": exc.errors}) from None
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @action(detail=True, methods=["get"])
    def topics(self, request: Request, name: str | None = None) -> Response:
        collection = self.get_object()
        return self._page(Topic.objects.filter(collection=collection).order_by("qid"), TopicSerializer)

    @action(detail=True, methods=["get"])
    def runs(self, request: Request, name: str | None = None) -> Response:
        collection = self.get_object()
        return self._page(Run.objects.filter(collection=collection).order_by("name"), RunSerializer)

    @action(detail=True, methods=["get"])
    def documents(self, request: Request, name: str | None = None) -> Response:
        collection = self.get_object()
        return self._page(
            Document.objects.filter(collection=collection).order_by("docid"), DocumentSerializer
        )

    def _page(self, queryset: Any, serializer_class: Any) -> Response:
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(serializer_class(page, many=True).data)


class TopicViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsManager]
    serializer_class = TopicSerializer

    def get_queryset(self) -> Any:
        collections = Collection.objects.visible_to(self.request.user)
        return Topic.objects.filter(collection__in=collections).order_by("collection_id", "qid")


class DocumentViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsManager]
    serializer_class = DocumentSerializer

    def get_queryset(self) -> Any:
        collections = Collection.objects.visible_to(self.request.user)
        return Document.objects.filter(collection__in=collections).order_by("collection_id", "docid")


class RunViewSet(mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet):
    """Runs of the collections a manager reads; deleting one is for the collection's managers."""

    permission_classes = [IsManager]
    serializer_class = RunSerializer

    def get_queryset(self) -> Any:
        collections = Collection.objects.all()
        if self.action == "destroy":
            collections = collections.managed_by(self.request.user)
        else:
            collections = collections.visible_to(self.request.user)
        runs = Run.objects.filter(collection__in=collections).select_related("collection")
        return runs.order_by("collection_id", "name")

    def perform_destroy(self, instance: Run) -> None:
        deletion.delete_run(run=instance)

    @action(detail=True, methods=["get"], url_path=r"topics/(?P<qid>[^/]+)")
    def ranked_list(self, request: Request, pk: str | None = None, qid: str = "") -> Response:
        """One topic's ranked list in trec_eval order."""
        run = self.get_object()
        topic = get_object_or_404(Topic, collection=run.collection_id, qid=qid)
        rows = run.ranked_list(topic)
        return Response(
            {"run": run.name, "qid": qid, "results": [
                {"rank": rank, "docid": docid, "score": score} for rank, (docid, score) in enumerate(rows, 1)
            ]}
        )  # fmt: skip


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    """Status of long jobs: progress, counts and errors by line; a failed job can be retried."""

    permission_classes = [IsManager]
    serializer_class = JobSerializer

    def get_queryset(self) -> Any:
        return Job.objects.visible_to(self.request.user).select_related("collection")

    @extend_schema(request=None, responses={202: JobSerializer, 409: None, 503: None})
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str | None = None) -> Response:
        """Start a failed job again (a new job, `retry_of` this one): 202 with it, 409 unless it failed."""
        job = retry_job(job=self.get_object(), user=request.user)
        job.refresh_from_db()
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


# --------------------------------------------------------------------------------------------- pools


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
    """A pool with its size and cost estimate (computed from the runs, so available before building)."""

    estimate = serializers.SerializerMethodField()

    class Meta(PoolSerializer.Meta):
        fields = [*PoolSerializer.Meta.fields, "estimate"]

    def get_estimate(self, pool: Pool) -> dict[str, Any]:
        return pool_reads.estimate_pool(pool=pool)


class PoolCreateSerializer(serializers.Serializer):
    """What `pool_build.create_pool` takes; run names are looked up in the collection."""

    name = serializers.SlugField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    instructions = serializers.CharField(required=False, allow_blank=True, default="")
    collection = serializers.SlugRelatedField(slug_field="name", queryset=Collection.objects.all())
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

    def validate_name(self, value: str) -> str:
        if Pool.objects.filter(name=value).exists():
            raise ValidationError(f"a pool named {value!r} already exists")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        collection: Collection = attrs["collection"]
        wanted = list(dict.fromkeys(attrs["runs"]))
        runs = {run.name: run for run in Run.objects.filter(collection=collection, name__in=wanted)}
        missing = [name for name in wanted if name not in runs]
        if missing:
            raise ValidationError(
                {"runs": [f"no run named {name!r} in collection {collection.name!r}" for name in missing]}
            )
        attrs["runs"] = [runs[name] for name in wanted]
        if attrs["strategy"] != Pool.Strategy.DEPTH and not attrs.get("budget"):
            raise ValidationError({"budget": [f"strategy {attrs['strategy']!r} needs a judgement budget"]})
        segment = attrs.get("segment", "")
        if segment and not Topic.objects.filter(collection=collection).in_segment(segment):
            raise ValidationError(
                {"segment": [f"no topic of collection {collection.name!r} has segment {segment!r}"]}
            )
        return attrs


class RunNamesSerializer(serializers.Serializer):
    runs = serializers.ListField(child=serializers.CharField(max_length=200), allow_empty=False)


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
    """Pools: configure (with the size and cost estimate), build (a job), add and remove runs, statistics,
    the export and the managers. A pool's managers and admins only; a new pool is its creator's."""

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
        return PoolSerializer

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        pools = list(page if page is not None else self.get_queryset())
        jobs: dict[int, Job] = {}
        for job in Job.objects.filter(kind=Job.Kind.BUILD_POOL).order_by("created_at", "pk"):
            jobs[job.params.get("pool")] = job
        context = {**self.get_serializer_context(), "progress": stats.pool_progress(pools), "jobs": jobs}
        data = PoolSerializer(pools, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)

    @extend_schema(request=PoolCreateSerializer, responses={201: PoolDetailSerializer})
    def create(self, request: Request) -> Response:
        """Configure a pool (not built): 400 naming the field on bad input."""
        form = PoolCreateSerializer(data=request.data)
        # A pool is made over a collection one manages (another's is "does not exist", as to anyone).
        form.fields["collection"].queryset = Collection.objects.managed_by(request.user)
        form.is_valid(raise_exception=True)
        try:
            pool = pool_build.create_pool(**form.validated_data, created_by=request.user)
        except pooling_errors.PoolError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from None
        pool = self.get_queryset().get(pk=pool.pk)
        return Response(
            PoolDetailSerializer(pool, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=None, responses={202: JobSerializer, 409: JobSerializer})
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

    @extend_schema(request=RunNamesSerializer)
    @action(detail=True, methods=["post"], url_path="runs")
    def add_runs(self, request: Request, name: str | None = None) -> Response:
        """Add runs: a built pool gains only documents not already pooled; nothing judged changes."""
        pool = self.get_object()
        form = RunNamesSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        wanted = list(dict.fromkeys(form.validated_data["runs"]))
        runs = {run.name: run for run in Run.objects.filter(collection=pool.collection_id, name__in=wanted)}
        missing = [run_name for run_name in wanted if run_name not in runs]
        if missing:
            raise ValidationError(
                {"runs": [f"no run named {n!r} in collection {pool.collection.name!r}" for n in missing]}
            )
        try:
            summary = pool_build.add_runs(pool=pool, runs=[runs[run_name] for run_name in wanted])
        except pooling_errors.PoolError as exc:
            raise ValidationError({"runs": [str(exc)]}) from None
        return Response({**summary.as_dict(), "runs": pool_run_names(pool)})

    @extend_schema(request=None)
    @action(detail=True, methods=["delete"], url_path=r"runs/(?P<run_name>[^/]+)")
    def remove_run(self, request: Request, name: str | None = None, run_name: str = "") -> Response:
        """Take a run out: items only it contributed go, unless they have a judgement."""
        pool = self.get_object()
        link = get_object_or_404(PoolRun.objects.select_related("run"), pool=pool, run__name=run_name)
        summary = pool_build.remove_run(pool=pool, run=link.run)
        return Response({**summary.as_dict(), "runs": pool_run_names(pool)})

    @action(detail=True, methods=["get"])
    def statistics(self, request: Request, name: str | None = None) -> Response:
        """Items per topic, per-run contributed and unique items, the overlap matrix, judgements and cost."""
        pool = self.get_object()
        data = stats.pool_statistics(pool).as_dict()
        data["pool_bias_url"] = pool_bias_url(pool) if data["judgements_done"] else None
        return Response(data)

    @extend_schema(responses={(200, "text/plain"): str})
    @action(
        detail=True, methods=["get"], renderer_classes=[JSONRenderer, BrowsableAPIRenderer, PlainTextRenderer]
    )
    def export(self, request: Request, name: str | None = None) -> HttpResponse:
        """The pool as `qid<TAB>docid<TAB>run,run` lines (pool_reads.export_pool)."""
        import io

        pool = self.get_object()
        out = io.StringIO()
        pool_reads.export_pool(pool=pool, out=out)
        response = HttpResponse(out.getvalue(), content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{pool.name}.pool.tsv"'
        return response


def register(router: Any) -> None:
    """Pool endpoints (configuration, build, runs, statistics, export)."""
    router.register("pools", PoolViewSet, basename="pool")

"""REST API of the pooling app: collections, topics, documents, runs, file imports and job status (pools:
`pooling.pool_api`).

Everything here is for pool managers and admins: raters never see runs, ranks or scores.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from labeling.bodies import body_serializer
from pooling import deletion, formats, imports, ownership
from pooling import errors as pooling_errors
from pooling.jobs import retry_job, start_import
from pooling.models import Collection, Document, Job, RankedList, Run, Topic
from pooling.permissions import IsManager


class CollectionSerializer(serializers.ModelSerializer):
    # no rule of its own: `imports.collection_name_problems`, the page's and the command's
    name = serializers.CharField(allow_blank=True)
    documents = serializers.IntegerField(source="num_documents", read_only=True)
    topics = serializers.IntegerField(source="num_topics", read_only=True)
    runs = serializers.IntegerField(source="num_runs", read_only=True)

    class Meta:
        model = Collection
        fields = ["id", "name", "description", "created_at", "documents", "topics", "runs"]
        read_only_fields = ["id", "created_at"]

    def validate_name(self, name: str) -> str:
        if problems := imports.collection_name_problems(name):
            raise serializers.ValidationError(problems)
        return name


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
    collection = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)  # a pool's
    progress = serializers.SerializerMethodField()
    message = serializers.SerializerMethodField()
    counts = serializers.SerializerMethodField()

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

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_counts(self, job: Job) -> dict[str, Any]:
        """The job's counts, in the order its summary gave them (as its page shows them)."""
        return dict(job.ordered_counts())


class UploadField(serializers.FileField):
    """A file field whose refusal of an empty file names the file (`imports.empty_upload`)."""

    def to_internal_value(self, data: Any) -> Any:
        name = getattr(data, "name", None)
        if name and getattr(data, "size", None) == 0:
            raise serializers.ValidationError(imports.empty_upload(file_name=name, field=self.field_name))
        return super().to_internal_value(data)


class ImportSerializer(serializers.Serializer):
    """An upload into the collection `context["collection"]`."""

    kind = serializers.ChoiceField(choices=["documents", "topics", "run"])
    file = UploadField()
    format = serializers.ChoiceField(choices=formats.FILE_FORMATS, required=False)
    # blank: the file's name; no rule of its own (`imports.check_run_name`'s, in `validate`), as the form
    name = serializers.CharField(required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)
    replace = serializers.BooleanField(
        required=False,
        default=False,
        help_text=imports.REPLACE_HELP,
    )
    skip_unknown_topics = serializers.BooleanField(required=False, default=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A run's name (given, or its file's) by the import's rules (`imports.check_run_name_free`: the rule
        of a name, and not taken in the collection unless `replace`): a 400 naming `name`, before any job
        starts, however large the file."""
        if attrs["kind"] == "run":
            try:
                imports.check_run_name_free(
                    collection=self.context["collection"],
                    name=attrs.get("name"),
                    file_name=attrs["file"].name,
                    replace=attrs.get("replace", False),
                )
            except pooling_errors.PoolError as exc:
                raise serializers.ValidationError(exc.fields) from None
        return attrs


class UsernamesSerializer(serializers.Serializer):
    usernames = serializers.ListField(
        child=serializers.CharField(max_length=150), min_length=1, max_length=100
    )


class ManagersMixin:
    """`GET/POST <object>/managers/` (list, add) and `DELETE <object>/managers/<username>/` for a
    collection or a pool its managers reach (`get_queryset` is scoped to those for these actions)."""

    MANAGE_ACTIONS = {"managers", "remove_manager"}

    @extend_schema(methods=["GET"], responses={200: body_serializer(ownership.Managers)})
    @extend_schema(
        methods=["POST"], request=UsernamesSerializer, responses={200: body_serializer(ownership.Managers)}
    )
    @action(detail=True, methods=["get", "post"])
    def managers(self, request: Request, name: str | None = None) -> Response:
        """The managers (usernames); POST `{"usernames": [...]}` adds users who hold the manager role."""
        owned = self.get_object()  # type: ignore[attr-defined]  # a mixin of GenericViewSet
        if request.method == "GET":
            return Response(asdict(ownership.Managers(managers=ownership.manager_names(owned=owned))))
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
        return Response(asdict(ownership.Managers(managers=names)))

    @extend_schema(request=None, responses={200: body_serializer(ownership.Managers)})
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
        return Response(asdict(ownership.Managers(managers=names)))


class CollectionViewSet(
    ManagersMixin,
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Collections, with nested topics, documents and runs, and file imports (a Celery task each).

    A manager reads the collections they manage and those of their pools; imports, managers and deleting
    one nothing uses are for the collection's own managers."""

    permission_classes = [IsManager]
    serializer_class = CollectionSerializer
    lookup_field = "name"

    def get_queryset(self) -> Any:
        from django.db.models import Count

        collections = Collection.objects.all()
        if self.action in {"imports", "destroy", *self.MANAGE_ACTIONS}:
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
        try:
            collection = imports.create_collection(
                name=data["name"], description=data.get("description", ""), created_by=self.request.user
            )
        except pooling_errors.ImportFailed as exc:  # the name taken since the serializer's checks
            raise ValidationError(exc.as_data()) from None
        collection.num_documents = collection.num_topics = collection.num_runs = 0  # type: ignore[attr-defined]  # the counts the listing's .annotate() gives
        serializer.instance = collection

    @extend_schema(request=None, responses={204: None, 409: None})
    def destroy(self, request: Request, name: str | None = None) -> Response:
        """Delete a collection nothing uses, with its documents, topics and runs
        (`deletion.delete_unused_collection`, what its page calls; its managers only): 204; 409 saying why
        while a pool is built on it (delete those first), a job of it is at work, or click logs or
        experiments depend on it."""
        collection = self.get_object()
        try:
            deletion.delete_unused_collection(collection=collection, user=request.user)
        except pooling_errors.PoolError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=ImportSerializer, responses={202: JobSerializer, 400: None})
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def imports(self, request: Request, name: str | None = None) -> Response:
        """Upload a file (documents, topics or a run); answers 202 with the job to poll.

        A file up to IMPORT_CHECK_MAX_BYTES (20 MB) is first imported in a transaction that is rolled
        back: if it would fail, the answer is 400 with `file` listing the errors by line, and nothing is
        stored (no job either). A larger file is checked by its job: 202, then the job fails with the
        errors."""
        collection = self.get_object()
        form = ImportSerializer(data=request.data, context={"collection": collection})
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

    @extend_schema(responses={200: TopicSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def topics(self, request: Request, name: str | None = None) -> Response:
        collection = self.get_object()
        return self._page(Topic.objects.filter(collection=collection).order_by("qid"), TopicSerializer)

    @extend_schema(responses={200: RunSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def runs(self, request: Request, name: str | None = None) -> Response:
        collection = self.get_object()
        return self._page(Run.objects.filter(collection=collection).order_by("name"), RunSerializer)

    @extend_schema(responses={200: DocumentSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def documents(self, request: Request, name: str | None = None) -> Response:
        collection = self.get_object()
        return self._page(
            Document.objects.filter(collection=collection).order_by("docid"), DocumentSerializer
        )

    def _page(self, queryset: Any, serializer_class: Any) -> Response:
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(serializer_class(page, many=True).data)


class _CollectionRowsViewSet(viewsets.ReadOnlyModelViewSet):
    """The `model` rows of the collections the manager reads, by collection, then by `key`."""

    permission_classes = [IsManager]
    model: type[Topic | Document]
    key: str

    def get_queryset(self) -> Any:
        collections = Collection.objects.visible_to(self.request.user)
        return self.model.objects.filter(collection__in=collections).order_by("collection_id", self.key)


class TopicViewSet(_CollectionRowsViewSet):
    serializer_class = TopicSerializer
    model = Topic
    key = "qid"


class DocumentViewSet(_CollectionRowsViewSet):
    serializer_class = DocumentSerializer
    model = Document
    key = "docid"


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

    @extend_schema(responses={200: body_serializer(RankedList)})
    @action(detail=True, methods=["get"], url_path=r"topics/(?P<qid>[^/]+)")
    def ranked_list(self, request: Request, pk: str | None = None, qid: str = "") -> Response:
        """One topic's ranked list in trec_eval order."""
        run = self.get_object()
        topic = get_object_or_404(Topic, collection=run.collection_id, qid=qid)
        return Response(asdict(run.ranked_list_body(topic)))


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

"""REST API of the pooling app: collections, topics, documents, runs, file imports and job status.

Everything here is for pool managers and admins: raters never see runs, ranks or scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from pooling import services, tasks
from pooling.models import Collection, Document, Job, Run, Topic
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
        ]  # fmt: skip

    def get_progress(self, job: Job) -> float:
        return float(job.live()["progress"])

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


class CollectionViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Collections, with nested topics, documents and runs, and file imports (a Celery task each)."""

    permission_classes = [IsManager]
    serializer_class = CollectionSerializer
    lookup_field = "name"

    def get_queryset(self) -> Any:
        from django.db.models import Count

        return Collection.objects.annotate(
            num_documents=Count("documents", distinct=True),
            num_topics=Count("topics", distinct=True),
            num_runs=Count("runs", distinct=True),
        )

    def perform_create(self, serializer: Any) -> None:
        collection = serializer.save()
        collection.num_documents = collection.num_topics = collection.num_runs = 0

    @extend_schema(request=ImportSerializer, responses={202: JobSerializer})
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser, FormParser])
    def imports(self, request: Request, name: str | None = None) -> Response:
        """Upload a file (documents, topics or a run); answers 202 with the job to poll."""
        collection = self.get_object()
        form = ImportSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = dict(form.validated_data)
        upload = data.pop("file")
        kind = data.pop("kind")
        job = Job(
            kind=kind,
            collection=collection,
            params=data,
            created_by=request.user,
            upload_name=Path(upload.name).name,
        )
        job.upload.save(Path(upload.name).name, upload, save=False)
        job.save()
        transaction.on_commit(lambda: tasks.import_file.delay(job.pk))
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
    queryset = Topic.objects.order_by("collection_id", "qid")


class DocumentViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsManager]
    serializer_class = DocumentSerializer
    queryset = Document.objects.order_by("collection_id", "docid")


class RunViewSet(mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet):
    permission_classes = [IsManager]
    serializer_class = RunSerializer
    queryset = Run.objects.select_related("collection").order_by("collection_id", "name")

    def perform_destroy(self, instance: Run) -> None:
        services.delete_run(run=instance)

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
    """Status of long jobs: progress, counts and errors by line."""

    permission_classes = [IsManager]
    serializer_class = JobSerializer
    queryset = Job.objects.select_related("collection")


def register(router: Any) -> None:
    """Pool endpoints (configuration, build, statistics) are registered here."""

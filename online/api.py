"""REST API of the online app: click logs (upload as a job), their query mapping, propensity estimates
and click-label sets with the agreement gate and releases. Managers and admins only (`IsManager`);
every object is scoped by `ClickLog.objects.visible_to(user)`: a manager reaches the logs of the
collections and pools they manage, and no other (404)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from labeling.api import validated
from labeling.bodies import BodySerializer
from labeling.parsers import JSONParser
from online import jobs, propensity, relevance, services
from online.logformats import MAX_POSITION
from online.models import ClickLabel, ClickLabelSet, ClickLog, PropensityEstimate, QueryMapping
from pooling.api import JobSerializer
from pooling.errors import ImportFailed, Refused
from pooling.models import Collection, Job, Pool
from pooling.permissions import IsManager


class ClickLogSerializer(serializers.ModelSerializer):
    collection = serializers.SlugRelatedField(slug_field="name", read_only=True)
    pool = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)

    class Meta:
        model = ClickLog
        fields = ["id", "collection", "pool", "name", "format", "source_file", "counts", "warnings",
                  "max_position", "created_at"]  # fmt: skip
        extra_kwargs = {
            "counts": {
                "help_text": "What the import counted: pages (result pages whose query maps to a topic; null "
                "for the counts format, which has no pages: its rows read are `rows`), impressions, clicks, "
                "cells, queries, unmapped_queries, unmapped_impressions, unknown_objects (distinct shown "
                "objects that are no document of the collection), unknown_impressions, unknown_clicks "
                "(theirs), loggers."
            }
        }


class ClickLogUploadSerializer(serializers.Serializer):
    collection = serializers.CharField(max_length=100)
    name = serializers.SlugField(max_length=100)
    format = serializers.ChoiceField(choices=list(jobs.UPLOAD_FORMATS))
    file = serializers.FileField(help_text="The impressions JSONL, the counts file, or UBI ubi_queries.")
    events = serializers.FileField(required=False, help_text="UBI only: the ubi_events export.")
    pool = serializers.CharField(required=False, allow_blank=True, max_length=100)
    object_field = serializers.CharField(required=False, allow_blank=True, max_length=100)
    ordinal_base = serializers.ChoiceField(choices=[0, 1], required=False, default=1)


class QueryMappingSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="topic.qid", default=None, read_only=True, allow_null=True)  # unmapped

    class Meta:
        model = QueryMapping
        fields = ["query", "qid", "mapped_by", "impressions", "clicks"]


class PropensitySerializer(serializers.ModelSerializer):
    class Meta:
        model = PropensityEstimate
        fields = ["id", "log", "name", "method", "theta", "params", "diagnostics", "warnings", "created_at"]


@extend_schema_field(serializers.IntegerField(min_value=1, max_value=propensity.MAX_DEPTH))
class DepthField(serializers.IntegerField):
    """RandTop's `n`: any whole number here; what depth can be shuffled is `propensity.depth_problem`'s to say
    (`jobs.start_propensity` asks it: a 400 on `n` with its message), its bounds the schema's."""


class PropensityRequestSerializer(serializers.Serializer):
    method = serializers.ChoiceField(choices=list(jobs.METHODS))
    theta = serializers.ListField(child=serializers.FloatField(), required=False, max_length=MAX_POSITION)
    n = DepthField(required=False)
    name = serializers.CharField(required=False, allow_blank=True, max_length=100)


class LabelRequestSerializer(serializers.Serializer):
    estimator = serializers.ChoiceField(choices=list(relevance.ESTIMATORS))
    propensity = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2**63 - 1)
    tau = serializers.FloatField(required=False, allow_null=True, min_value=1.0)
    thresholds = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text='score:grade pairs, ascending, e.g. "0.1:1,0.3:2,0.6:3"',
    )
    replicates = serializers.IntegerField(
        required=False, min_value=0, max_value=services.MAX_REPLICATES, default=0
    )
    min_impressions = serializers.IntegerField(
        required=False, min_value=1, max_value=services.MAX_MIN_IMPRESSIONS, default=1
    )
    name = serializers.CharField(required=False, allow_blank=True, max_length=100)


class ClickLabelSetSerializer(serializers.ModelSerializer):
    class Meta:
        model = ClickLabelSet
        fields = ["id", "log", "propensity", "name", "estimator", "tau", "clipped_share", "min_impressions",
                  "thresholds", "bootstrap", "agreement", "warnings", "created_at"]  # fmt: skip


class ClickReleaseSerializer(BodySerializer):
    class Meta:
        dataclass = services.ClickReleaseBody


class ClickLabelSerializer(serializers.ModelSerializer):
    qid = serializers.CharField(source="topic.qid")
    docid = serializers.CharField(source="document.docid")

    class Meta:
        model = ClickLabel
        fields = ["qid", "docid", "impressions", "clicks", "score", "low", "high", "grade"]


def _refused(field: str, exc: Exception) -> ValidationError:
    """A 400 with a refusal that names its field(s) as it says (`Refused.as_data`: click-label options each
    on their own), else with the errors on `field`."""
    if isinstance(exc, Refused) and exc.field:
        return ValidationError(exc.as_data())
    errors = exc.errors if isinstance(exc, ImportFailed | Refused) else [str(exc)]
    return ValidationError({field: errors})


def _starts_job(form: type[serializers.Serializer]) -> Callable[[Callable[..., Job]], Any]:
    """A POST action on one log that starts a job: the method is given the log, the fields `form`
    checked (a 400 naming the bad ones) and the user, and returns the job; the answer is 202 with it."""

    def wrap(start: Callable[..., Job]) -> Any:
        @extend_schema(request=form, responses={202: JobSerializer, 400: None})
        @action(detail=True, methods=["post"])
        @functools.wraps(start)
        def view(self: Any, request: Request, pk: str | None = None) -> Response:
            job = start(self, self.get_object(), validated(form, request.data), request.user)
            return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

        return view

    return wrap


class ClickLogViewSet(viewsets.ReadOnlyModelViewSet):
    """Click logs. POST (multipart) uploads one and answers 202 with its import job."""

    permission_classes = [IsManager]
    serializer_class = ClickLogSerializer

    def get_queryset(self) -> Any:
        return ClickLog.objects.visible_to(self.request.user).select_related("collection", "pool")

    @extend_schema(request=ClickLogUploadSerializer, responses={202: JobSerializer, 400: None})
    def create(self, request: Request) -> Response:
        data = validated(ClickLogUploadSerializer, request.data)
        collection = Collection.objects.managed_by(request.user).filter(name=data["collection"]).first()
        if collection is None:
            raise ValidationError({"collection": [f"no collection {data['collection']!r} that you manage"]})
        pool = None
        if data.get("pool"):
            pool = (
                Pool.objects.managed_by(request.user).filter(name=data["pool"], collection=collection).first()
            )
            if pool is None:
                raise ValidationError(
                    {"pool": [f"no pool {data['pool']!r} of this collection that you manage"]}
                )
        try:
            uploads = jobs.click_uploads(format=data["format"], file=data["file"], events=data.get("events"))
        except Refused as exc:
            raise _refused("events", exc) from None
        try:
            job = jobs.start_click_import(
                collection=collection,
                name=data["name"],
                format=data["format"],
                uploads=uploads,
                pool=pool,
                object_field=data.get("object_field", ""),
                ordinal_base=int(data.get("ordinal_base", 1)),
                user=request.user,
            )
        except ImportFailed as exc:
            raise _refused("file", exc) from None
        except Refused as exc:
            raise _refused("name", exc) from None
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    def get_parsers(self) -> Any:
        return [MultiPartParser(), FormParser(), JSONParser()]

    @extend_schema(responses={200: QueryMappingSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def queries(self, request: Request, pk: str | None = None) -> Response:
        """The log's distinct queries and the topic each mapped to (unmapped ones with qid null)."""
        log = self.get_object()
        rows = QueryMapping.objects.filter(log=log).select_related("topic")
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(QueryMappingSerializer(page, many=True).data)

    @_starts_job(PropensityRequestSerializer)
    def propensities(self, log: ClickLog, data: dict[str, Any], user: Any) -> Job:
        """Estimate θ (a job): `method` given (with `theta`), randtop (optional `n`), swap, em, harvest."""
        params: dict[str, Any] = {}
        if data["method"] == "given":
            params["theta"] = data.get("theta") or []
        if data.get("n") is not None:
            params["n"] = data["n"]
        try:
            return jobs.start_propensity(
                log=log, method=data["method"], params=params, name=data.get("name", ""), user=user
            )
        except Refused as exc:
            raise _refused("theta", exc) from None

    @_starts_job(LabelRequestSerializer)
    def labels(self, log: ClickLog, data: dict[str, Any], user: Any) -> Job:
        """Derive click labels (a job); with thresholds, the agreement with the pool's humans is computed."""
        estimate = None
        if data.get("propensity") is not None:
            estimate = PropensityEstimate.objects.filter(pk=data["propensity"], log=log).first()
            if estimate is None:
                raise ValidationError({"propensity": ["no such propensity estimate of this log"]})
        options = {k: data.get(k) for k in ("tau", "thresholds", "replicates", "min_impressions", "name")}
        try:
            return jobs.start_click_labels(
                log=log,
                estimator=data["estimator"],
                propensity_estimate=estimate,
                options=options,
                user=user,
            )
        except Refused as exc:
            raise _refused("thresholds", exc) from None


class PropensityViewSet(viewsets.ReadOnlyModelViewSet):
    """Propensity estimates of the logs the user reaches."""

    permission_classes = [IsManager]
    serializer_class = PropensitySerializer

    def get_queryset(self) -> Any:
        return PropensityEstimate.objects.visible_to(self.request.user)


class ClickLabelSetViewSet(viewsets.ReadOnlyModelViewSet):
    """Click-label sets with their agreement against the human judgements; their labels; a release."""

    permission_classes = [IsManager]
    serializer_class = ClickLabelSetSerializer

    def get_queryset(self) -> Any:
        return ClickLabelSet.objects.visible_to(self.request.user)

    @extend_schema(responses={200: ClickLabelSerializer(many=True)})
    @action(detail=True, methods=["get"], url_path="labels")
    def label_rows(self, request: Request, pk: str | None = None) -> Response:
        rows = ClickLabel.objects.filter(label_set=self.get_object()).select_related("topic", "document")
        page = self.paginate_queryset(rows.order_by("topic__qid", "document__docid"))
        return self.get_paginated_response(ClickLabelSerializer(page, many=True).data)

    @extend_schema(request=None, responses={201: ClickReleaseSerializer, 400: None})
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str | None = None) -> Response:
        """Release the set's click grades (refused until the agreement with humans is computed)."""
        try:
            release = services.release_click_labels(label_set=self.get_object(), user=request.user)
        except Refused as exc:
            raise _refused("agreement", exc) from None
        return Response(services.click_release_dict(release), status=status.HTTP_201_CREATED)


def register(router: Any) -> None:
    router.register("click-logs", ClickLogViewSet, basename="click-log")
    router.register("propensities", PropensityViewSet, basename="propensity")
    router.register("click-labels", ClickLabelSetViewSet, basename="click-label-set")

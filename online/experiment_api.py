"""API of interleaving experiments and of the offline–online tracker.

`GET /api/interleaving/<name>/ranking/?qid=&user=` is the search path (`online.search_api`, a plain view
routed before these): the front end's API account (a client of the experiment, or a manager of its
collection) gets the interleaved list with the team of each position, and logs back what was shown and
clicked with `POST …/impressions/`. Everything else is for
managers: reads are scoped to the collections they may read (a tracked experiment also to the releases
they may open), writes to the collections they manage (`managed_by` of the experiment models). Anyone
else is told the experiment does not exist (404): a reader who may not change it too, as for every write
the API scopes to what the user manages.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from labeling.bodies import body_serializer
from labeling.pagination import PagedViewSetMixin
from labeling.throttling import UserThrottle
from online import experiment_input, experiments, impressions, interleaving, preference, serving, tracking
from online.experiment_models import (
    QUERY_ID_LENGTH,
    InterleavingExperiment,
    InterleavingResult,
    TrackedExperiment,
)
from online.experiment_serializers import (
    CorrelationGroupSerializer,
    ImpressionConflictSerializer,
    InterleavingExperimentSerializer,
    InterleavingResultSerializer,
    TrackedExperimentSerializer,
)
from pooling.models import Collection
from pooling.permissions import IsManager

NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="experiment name")


class InterleavingThrottle(UserThrottle):
    """The search path's own rate per account (`interleaving`, API_THROTTLE_INTERLEAVING): a front end
    calls it once per search, far above the `user` rate of people."""

    scope = "interleaving"


class ExperimentUpdateSerializer(serializers.Serializer):
    active = serializers.BooleanField(required=False)
    clients = serializers.ListField(
        child=serializers.CharField(max_length=150), required=False, max_length=100
    )
    description = serializers.CharField(allow_blank=True, required=False, max_length=2000)


class ImpressionSerializer(serializers.Serializer):
    query_id = serializers.CharField(
        max_length=QUERY_ID_LENGTH,
        required=False,
        allow_null=True,
        default=None,
        help_text="the id the front end made for this search (UBI's query_id; a UUID is fine), unique in "
        "the experiment: a retry that sends it again is counted once. Without it every post is a new "
        "impression, so a front end that retries must send one.",
    )
    qid = serializers.CharField(max_length=100)
    user = serializers.CharField(max_length=200)
    session = serializers.CharField(max_length=200, allow_blank=True, default="")
    docids = serializers.ListField(
        child=serializers.CharField(max_length=255), max_length=experiments.MAX_LENGTH
    )
    teams = serializers.ListField(
        child=serializers.ChoiceField(choices=["A", "B", interleaving.NO_TEAM]),
        max_length=experiments.MAX_LENGTH,
    )
    clicks = serializers.ListField(child=serializers.IntegerField(min_value=1), default=list, max_length=100)


class PowerSerializer(serializers.Serializer):
    """Numbers only: what can be planned is `preference.plan_power`'s to say (its `PlanError` names the
    field), as for the page and the command."""

    delta = serializers.FloatField(help_text="the Δ_AB to detect: above -0.5, below 0.5, not 0")
    tie_share = serializers.FloatField(default=0.0, help_text="at least 0, below 1")
    click_rate = serializers.FloatField(default=1.0, help_text="above 0, at most 1")
    alpha = serializers.FloatField(default=preference.ALPHA, help_text="above 0, below 1")
    power = serializers.FloatField(default=preference.POWER, help_text="above 0, below 1")


class InterleavingViewSet(PagedViewSetMixin, viewsets.ViewSet):
    """Interleaving experiments: two runs interleaved for searchers, and the preference their clicks show."""

    lookup_field = "name"
    lookup_value_regex = r"[-\w]+"
    permission_classes = [IsManager]

    def get_permissions(self) -> list[Any]:
        if self.action == "impressions":
            return [IsAuthenticated()]
        return super().get_permissions()

    def get_throttles(self) -> list[Any]:
        if self.action == "impressions":
            return [InterleavingThrottle()]
        return super().get_throttles()

    def _visible(self) -> QuerySet[InterleavingExperiment]:
        return InterleavingExperiment.objects.visible_to(self.request.user).select_related(
            "collection", "run_a", "run_b"
        )

    def _experiment(self, name: str | None, *, change: bool = False) -> InterleavingExperiment:
        """The experiment named `name` that the user may read, or (`change`) may change: a 404 else."""
        queryset, user = InterleavingExperiment.objects.all(), self.request.user
        scoped = queryset.managed_by(user) if change else queryset.visible_to(user)
        return get_object_or_404(scoped.select_related("collection", "run_a", "run_b"), name=name or "")

    @extend_schema(responses={200: InterleavingExperimentSerializer(many=True)})
    def list(self, request: Request) -> Response:
        visible = self._visible().order_by("name")
        return self.page(visible, lambda page: [experiments.experiment_dict(e) for e in page])

    @extend_schema(
        request=experiment_input.ExperimentCreateSerializer,
        responses={201: InterleavingExperimentSerializer},
    )
    def create(self, request: Request) -> Response:
        experiment = experiment_input.create_interleaving(user=request.user, data=request.data)
        return Response(experiments.experiment_dict(experiment), status=status.HTTP_201_CREATED)

    @extend_schema(parameters=[NAME], responses={200: InterleavingExperimentSerializer})
    def retrieve(self, request: Request, name: str | None = None) -> Response:
        return Response(experiments.experiment_dict(self._experiment(name)))

    @extend_schema(
        parameters=[NAME],
        request=ExperimentUpdateSerializer,
        responses={200: InterleavingExperimentSerializer},
    )
    def partial_update(self, request: Request, name: str | None = None) -> Response:
        """Switch the experiment on or off (`active`), replace its `clients`, or its description."""
        experiment = self._experiment(name, change=True)
        params = ExperimentUpdateSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        # clients as usernames: the service refuses one that is no account's (`experiments._accounts`)
        experiments.update_experiment(experiment=experiment, **params.validated_data)
        return Response(experiments.experiment_dict(experiment))

    @extend_schema(
        parameters=[NAME],
        request=ImpressionSerializer,
        responses={
            201: OpenApiResponse(
                body_serializer(impressions.ImpressionLogged), description="the impression stored"
            ),
            200: OpenApiResponse(
                body_serializer(impressions.ImpressionLogged),
                description="a repeat of a query_id logged before with the same content: that impression, "
                "counted once",
            ),
            409: OpenApiResponse(
                ImpressionConflictSerializer,
                description="a query_id logged before with other content: the fields that differ",
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def impressions(self, request: Request, name: str | None = None) -> Response:
        """Log what a searcher was shown (the list and teams `ranking` gave) and the positions clicked:
        201 with the impression stored. Give each search a `query_id` (UBI's: the front end's id of the
        search) and a retry is safe: the same `query_id` with the same content answers 200 with the
        impression stored the first time and is counted once; with other content, 409 naming the fields
        that differ. Without a `query_id` each post is stored and counted, a retried one twice."""
        experiment = serving.usable_experiment(user=request.user, name=name or "")
        if experiment is None:
            raise Http404
        params = ImpressionSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        shown = impressions.Shown(**params.validated_data)
        try:
            (logged,) = impressions.log_impressions(experiment=experiment, shown=[shown])
        except impressions.ImpressionConflict as exc:
            return Response(exc.message_dict, status=status.HTTP_409_CONFLICT)
        answer = status.HTTP_201_CREATED if logged.created else status.HTTP_200_OK
        return Response(impressions.impression_logged(logged.impression), status=answer)

    @extend_schema(
        parameters=[NAME],
        request=experiment_input.ResultSerializer,
        responses={200: InterleavingResultSerializer},
    )
    @action(detail=True, methods=["get", "post"])
    def result(self, request: Request, name: str | None = None) -> Response:
        """GET: the latest result, or a 404 saying none is computed yet (a GET writes nothing, and a
        reader of the collection may not compute one); POST (the collection's managers): compute one now,
        from the impressions logged back, or from an imported click log's interleaved pages (`click_log`,
        with the team names that stand for runs A and B)."""
        experiment = self._experiment(name, change=request.method == "POST")
        latest: InterleavingResult | None = experiment.results.first()
        if request.method == "POST":
            latest = experiment_input.compute_result(
                user=request.user, experiment=experiment, data=request.data
            )
        elif latest is None:
            raise NotFound(
                f"interleaving experiment {experiment.name!r} has no result yet: POST here computes one"
            )
        return Response(experiments.result_dict(latest))

    @extend_schema(parameters=[PowerSerializer], responses={200: body_serializer(preference.PowerPlan)})
    @action(detail=False, methods=["get"])
    def power(self, request: Request) -> Response:
        """Impressions needed to detect a given Δ_AB with the exact sign test."""
        params = PowerSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        try:
            plan = preference.plan_power(**params.validated_data)
        except preference.PlanError as exc:  # a Refused: its message on the field it names
            raise ValidationError(exc.as_data()) from None
        return Response(dataclasses.asdict(plan))


class OnlineDeltasImportSerializer(serializers.Serializer):
    collection = serializers.CharField(max_length=100)
    file = serializers.FileField()


class TrackerViewSet(PagedViewSetMixin, viewsets.ViewSet):
    """The offline–online tracker: ranking changes with both deltas, and how well one predicts the other."""

    permission_classes = [IsManager]
    lookup_value_regex = r"[0-9]+"

    def _visible(self) -> QuerySet[TrackedExperiment]:
        queryset = TrackedExperiment.objects.visible_to(self.request.user).for_answers()
        collection = self.request.query_params.get("collection")
        return queryset.filter(collection__name=collection) if collection else queryset

    def _managed(self, pk: str | None) -> TrackedExperiment:
        """The experiment of id `pk` that the user may change or delete: a 404 else."""
        managed = TrackedExperiment.objects.managed_by(self.request.user).for_answers()
        return get_object_or_404(managed, pk=_id(pk))

    def _collection(self, name: str) -> Collection:
        return experiment_input.managed_collection(user=self.request.user, name=name)

    @extend_schema(
        parameters=[OpenApiParameter("collection", str)],
        responses={200: TrackedExperimentSerializer(many=True)},
    )
    def list(self, request: Request) -> Response:
        return self.page(self._visible(), lambda page: [tracking.experiment_dict(e) for e in page])

    @extend_schema(
        request=experiment_input.TrackedCreateSerializer,
        responses={201: TrackedExperimentSerializer},
    )
    def create(self, request: Request) -> Response:
        experiment = experiment_input.create_tracked(user=request.user, data=request.data)
        return Response(tracking.experiment_dict(experiment), status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH)],
        responses={200: TrackedExperimentSerializer},
    )
    def retrieve(self, request: Request, pk: str | None = None) -> Response:
        return Response(tracking.experiment_dict(get_object_or_404(self._visible(), pk=_id(pk))))

    @extend_schema(
        parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH)],
        request=experiment_input.OnlineDeltaSerializer,
        responses={200: TrackedExperimentSerializer},
    )
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        """Enter the online delta: a value of an online metric, or an interleaving experiment's result."""
        experiment = self._managed(pk)
        experiment_input.enter_online_delta(user=request.user, experiment=experiment, data=request.data)
        return Response(tracking.experiment_dict(experiment))

    @extend_schema(parameters=[OpenApiParameter("id", int, OpenApiParameter.PATH)], responses={204: None})
    def destroy(self, request: Request, pk: str | None = None) -> Response:
        self._managed(pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[OpenApiParameter("collection", str)],
        responses={200: CorrelationGroupSerializer(many=True)},
    )
    # A plain array, not a page: one group per (offline metric, online metric) pair, a handful by design
    # (each group's correlation needs all its experiments at once).
    @action(detail=False, methods=["get"], pagination_class=None)
    def correlation(self, request: Request) -> Response:
        """Pearson (Fisher interval), Spearman, Kendall τb, sign agreement (Wilson) and the verdict."""
        return Response(tracking.correlation_groups(self._visible()))

    @extend_schema(
        request=OnlineDeltasImportSerializer, responses={200: body_serializer(tracking.DeltasImported)}
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_deltas(self, request: Request) -> Response:
        """Online deltas from a TSV file (`name<TAB>online_metric<TAB>online_delta`), errors by line."""
        import tempfile

        params = OnlineDeltasImportSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        collection = self._collection(params.validated_data["collection"])
        upload = params.validated_data["file"]
        with tempfile.NamedTemporaryFile(suffix=".tsv") as handle:
            for chunk in upload.chunks():
                handle.write(chunk)
            handle.flush()
            updated = tracking.import_online_deltas(
                collection=collection, path=handle.name, display=upload.name, user=request.user
            )
        return Response(dataclasses.asdict(tracking.DeltasImported(updated=updated)))


def _id(pk: str | None) -> int:
    return int(pk or "0")  # the route takes digits only


def register(router: Any) -> None:
    router.register("interleaving", InterleavingViewSet, basename="interleaving")
    router.register("tracker", TrackerViewSet, basename="tracker")

"""What a manager gives to create an interleaving experiment or a tracked experiment, or to compute an
interleaving result, checked once for every caller: the API's `POST /api/interleaving/` and
`POST /api/tracker/` and the pages' forms send the same fields through `create_interleaving` /
`create_tracked` (and `PATCH /api/tracker/<id>/` and the tracker's online-delta page through
`enter_online_delta`, `POST /api/interleaving/<name>/result/`'s fields and the interleaving page's compute
form through `compute_result`), which validate them with the serializers (below, and the API's
`ResultSerializer`), scope the collection to the ones the user manages (a tracked experiment's release to
the ones the user may open: `releases_for`; a click log to credit to the ones the user may read), and call
the services (`online.experiments`, `online.tracking`).

Refusals are DRF ``ValidationError``s (from here) or Django ``ValidationError``s (from the services), both
keyed by the field at fault; `field_errors` turns either into ``{field: [message, ...]}`` for a page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from judgements.models import Release
from online import experiments, interleaving, tracking
from online.experiment_models import InterleavingExperiment, InterleavingResult, TrackedExperiment
from online.models import ClickLog
from pooling.models import Collection


class ExperimentCreateSerializer(serializers.Serializer):
    name = serializers.SlugField(max_length=100)
    collection = serializers.CharField(max_length=100)
    run_a = serializers.CharField(max_length=200)
    run_b = serializers.CharField(max_length=200)
    method = serializers.ChoiceField(choices=list(interleaving.METHODS), default="team_draft")
    length = serializers.IntegerField(
        min_value=1, max_value=experiments.MAX_LENGTH, default=interleaving.DEFAULT_LENGTH
    )
    identical_prefix = serializers.BooleanField(default=True)
    clients = serializers.ListField(child=serializers.CharField(max_length=150), default=list, max_length=100)
    description = serializers.CharField(allow_blank=True, default="", max_length=2000)


class ResultSerializer(serializers.Serializer):
    """What computing a result takes (`compute_result`): nothing (the impressions logged back), or a click
    log's id and the logged team names that stand for runs A and B."""

    click_log = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    team_a = serializers.CharField(max_length=100, default="A")
    team_b = serializers.CharField(max_length=100, default="B")


class OnlineDeltaSerializer(serializers.Serializer):
    online_metric = serializers.CharField(max_length=100, allow_blank=True, default="")
    online_delta = serializers.FloatField(required=False, allow_null=True, default=None)
    interleaving = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)


class TrackedCreateSerializer(serializers.Serializer):
    collection = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(allow_blank=True, default="", max_length=2000)
    release = serializers.IntegerField(min_value=1)
    metric = serializers.CharField(max_length=100, default="ndcg_cut_10")
    baseline = serializers.CharField(max_length=200)
    treatment = serializers.CharField(max_length=200)
    online_metric = serializers.CharField(max_length=100, allow_blank=True, default="")
    online_delta = serializers.FloatField(required=False, allow_null=True, default=None)
    interleaving = serializers.CharField(max_length=100, required=False, allow_null=True, default=None)


def managed_collection(*, user: Any, name: str) -> Collection:
    """The collection named `name` if `user` manages it (only its managers create experiments of it)."""
    collection = Collection.objects.managed_by(user).filter(name=name).first()
    if collection is None:
        raise ValidationError({"collection": ["no collection of that name that you manage"]})
    return collection


def releases_for(*, user: Any, collection: Collection) -> QuerySet[Release]:
    """The releases of `collection` that `user` may open and score runs on: those of the pools they manage
    (as `GET /api/releases/` lists them); another's release is "no release of that id"."""
    return Release.objects.managed_by(user).filter(pool__collection=collection)


def latest_result(*, user: Any, name: str | None) -> InterleavingResult | None:
    """The latest result of the interleaving experiment `name` that `user` may see (None for no name)."""
    if not name:
        return None
    experiment = InterleavingExperiment.objects.visible_to(user).filter(name=name).first()
    latest = experiment.results.first() if experiment else None
    if latest is None:
        raise ValidationError({"interleaving": [f"no interleaving experiment {name!r} with a result"]})
    return latest


def create_interleaving(*, user: Any, data: Mapping[str, Any]) -> InterleavingExperiment:
    """A new interleaving experiment from the fields the API or the page got."""
    params = ExperimentCreateSerializer(data=data)
    params.is_valid(raise_exception=True)
    values = dict(params.validated_data)
    collection = managed_collection(user=user, name=values.pop("collection"))
    # clients go as usernames: the service says which are no account's (`experiments.create_experiment`)
    return experiments.create_experiment(collection=collection, created_by=user, **values)


def create_tracked(*, user: Any, data: Mapping[str, Any]) -> TrackedExperiment:
    """A new tracked experiment (its offline delta computed now) from the fields the API or the page got."""
    params = TrackedCreateSerializer(data=data)
    params.is_valid(raise_exception=True)
    values = dict(params.validated_data)
    collection = managed_collection(user=user, name=values.pop("collection"))
    release = releases_for(user=user, collection=collection).filter(pk=values.pop("release")).first()
    if release is None:
        raise ValidationError({"release": ["no release of that id in this collection that you may open"]})
    result = latest_result(user=user, name=values.pop("interleaving"))
    return tracking.track_experiment(
        collection=collection, release=release, interleaving=result, created_by=user, **values
    )


def enter_online_delta(
    *, user: Any, experiment: TrackedExperiment, data: Mapping[str, Any]
) -> TrackedExperiment:
    """Enter (or replace) the online delta of `experiment` (one `user` may change: the caller scopes it) from
    the fields the API or the page got: a value of an online metric, or the latest result of an
    interleaving experiment the user may see."""
    params = OnlineDeltaSerializer(data=data)
    params.is_valid(raise_exception=True)
    values = dict(params.validated_data)
    result = latest_result(user=user, name=values.pop("interleaving"))
    return tracking.set_online_delta(experiment=experiment, interleaving=result, **values)


def result_defaults() -> dict[str, Any]:
    """The fields of a result to compute as `POST /api/interleaving/<name>/result/` defaults them (the
    page's compute form starts from them)."""
    return {name: field.default for name, field in ResultSerializer().fields.items()}


def creditable_logs(*, user: Any, experiment: InterleavingExperiment) -> QuerySet[ClickLog]:
    """The click logs `compute_result` may credit to `experiment` for `user`: those `user` may read of the
    experiment's collection with an impression archive (a counts import has no pages to credit). What is in
    the pages (their teams) is the crediting's own check (`experiments.compute_result_from_click_log`)."""
    readable = ClickLog.objects.visible_to(user).filter(collection=experiment.collection)
    return readable.exclude(archive_dir="").order_by("name")


def compute_result(
    *, user: Any, experiment: InterleavingExperiment, data: Mapping[str, Any]
) -> InterleavingResult:
    """A new result of `experiment` (one `user` may change: the caller scopes it) from the fields the API's
    `POST /api/interleaving/<name>/result/` or the page's compute form got: from the impressions logged
    back, or (`click_log`, the id of a log `user` may read) from an imported log's interleaved pages,
    `team_a` and `team_b` the logged team names that stand for runs A and B."""
    params = ResultSerializer(data=data)
    params.is_valid(raise_exception=True)
    values = dict(params.validated_data)
    log_id = values.pop("click_log")
    if log_id is None:
        return experiments.compute_result(experiment=experiment)
    log = ClickLog.objects.visible_to(user).filter(pk=log_id).first()
    if log is None:
        raise ValidationError({"click_log": ["no click log of that id that you may read"]})
    return experiments.compute_result_from_click_log(experiment=experiment, log=log, **values)


def field_errors(exc: ValidationError | DjangoValidationError) -> dict[str, list[str]]:
    """Either kind of refusal as ``{field: [message, ...]}`` (`detail` for one not tied to a field)."""
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            return {k: list(v) for k, v in exc.message_dict.items()}
        return {"detail": list(exc.messages)}
    detail = exc.detail
    if isinstance(detail, dict):
        return {k: [str(m) for m in (v if isinstance(v, list) else [v])] for k, v in detail.items()}
    return {"detail": [str(m) for m in (detail if isinstance(detail, list) else [detail])]}

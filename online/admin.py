"""Admin of the online app: click logs, propensity estimates and click-label sets, scoped like the rest
of the admin (`pooling.admin.ScopedAdmin`: staff see only the rows of the collections they manage), and
the interleaving and tracked experiments with their impressions and results. Rows are written by the
services only (imports, estimation, derivation, `create_experiment`, `track_experiment`: the pages' forms
and the API create them), so the admin adds none and edits none; its actions call the same services as
the pages and the API."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest

from online import experiments, jobs
from online.experiment_models import (
    InterleavedImpression,
    InterleavingExperiment,
    InterleavingResult,
    TrackedExperiment,
)
from online.models import ClickLabelSet, ClickLog, PropensityEstimate
from pooling.admin import ScopedAdmin
from pooling.errors import Refused


class _ReadOnly(ScopedAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _estimate(method: str) -> Any:
    def action(modeladmin: Any, request: HttpRequest, queryset: Any) -> None:
        for log in queryset:
            try:
                jobs.start_propensity(log=log, method=method, params={}, user=request.user)
            except Refused as exc:
                modeladmin.message_user(request, f"{log}: {exc}", messages.ERROR)
            else:
                modeladmin.message_user(request, f"{log}: estimating θ by {method}")

    action.__name__ = f"estimate_{method}"
    action.short_description = f"Estimate propensities ({method})"  # type: ignore[attr-defined]  # Django reads it
    return action


@admin.register(ClickLog)
class ClickLogAdmin(_ReadOnly):
    collection_path = "collection"
    list_display = ["name", "collection", "pool", "format", "created_at"]
    list_filter = ["format"]
    actions = [_estimate("em"), _estimate("harvest"), _estimate("randtop")]


@admin.register(PropensityEstimate)
class PropensityEstimateAdmin(_ReadOnly):
    collection_path = "collection"
    list_display = ["name", "method", "log", "created_at"]


@admin.register(ClickLabelSet)
class ClickLabelSetAdmin(_ReadOnly):
    collection_path = "log__collection"
    list_display = ["name", "estimator", "log", "created_at"]


def _switch(active: bool) -> Any:
    def action(modeladmin: Any, request: HttpRequest, queryset: Any) -> None:
        for experiment in queryset:  # the service: the search path's memo of who may use it is cleared
            experiments.update_experiment(experiment=experiment, active=active)
        modeladmin.message_user(request, f"{queryset.count()} experiment(s) {'on' if active else 'off'}")

    action.__name__ = "activate" if active else "deactivate"
    action.short_description = "Serve and log (activate)" if active else "Stop serving (deactivate)"  # type: ignore[attr-defined]  # Django reads it
    return action


@admin.register(InterleavingExperiment)
class InterleavingExperimentAdmin(_ReadOnly):
    collection_path = "collection"
    list_display = ["name", "collection", "run_a", "run_b", "method", "active", "created_at"]
    list_filter = ["active", "method"]
    search_fields = ["name"]
    actions = [_switch(True), _switch(False)]


@admin.register(InterleavedImpression)
class InterleavedImpressionAdmin(_ReadOnly):
    collection_path = "experiment__collection"
    list_display = ["experiment", "qid", "user", "teams", "outcome", "shown_at"]
    list_filter = ["outcome"]
    list_select_related = ["experiment"]


@admin.register(InterleavingResult)
class InterleavingResultAdmin(_ReadOnly):
    collection_path = "experiment__collection"
    list_display = ["experiment", "wins_a", "wins_b", "ties", "delta_ab", "p_value", "computed_at"]
    list_select_related = ["experiment"]


@admin.register(TrackedExperiment)
class TrackedExperimentAdmin(_ReadOnly):
    collection_path = "collection"
    list_display = ["name", "collection", "baseline_name", "treatment_name", "metric", "offline_delta",
                    "online_metric", "online_delta"]  # fmt: skip
    search_fields = ["name"]

"""Admin of the online app: click logs, propensity estimates and click-label sets, scoped like the rest
of the admin (`pooling.admin.ScopedAdmin`: staff see only the rows of the collections they manage).
Rows are written by the services only (imports, estimation, derivation), so the admin adds none; its
actions start the same jobs as the pages and the API."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest

from online import jobs
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

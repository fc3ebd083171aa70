"""Admin of the online app: click logs, propensity estimates and click-label sets, scoped like the rest
of the admin (`pooling.admin.ScopedAdmin`: staff see only the rows of the collections they manage), and
the interleaving and tracked experiments with their impressions and results. Rows are written by the
services only (imports, estimation, derivation, `create_experiment`, `track_experiment`: the pages' forms
and the API create them), so the admin adds none and edits none; its actions call the same services as
the pages and the API. A click log is uploaded from its list ("Upload a click log"): the form of the
manager's upload page (`online.forms.ClickLogUploadForm`: the API upload's formats and options), the same
job (`jobs.start_click_import`), a link to the job's page."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from online import experiments, jobs
from online.experiment_models import (
    InterleavedImpression,
    InterleavingExperiment,
    InterleavingResult,
    TrackedExperiment,
)
from online.forms import ClickLogUploadForm
from online.models import ClickLabelSet, ClickLog, PropensityEstimate
from pooling.admin import ReadOnlyAdmin
from pooling.errors import Refused
from pooling.permissions import is_manager


class _ReadOnly(ReadOnlyAdmin):
    """Listed, and deletable (a log, an estimate, a label set or an experiment goes with its rows)."""

    deletable = True


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
    change_list_template = "online/admin_clicklog_list.html"

    def get_urls(self) -> list[URLPattern]:
        upload = path("upload/", self.admin_site.admin_view(self.upload_view), name="online_clicklog_upload")
        return [upload, *super().get_urls()]

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """Upload a click log: the import job of the API upload (`jobs.start_click_import`), for staff
        who manage a collection (403 otherwise); a bad small file is refused on the form, by line."""
        if not (is_manager(request.user) and self.has_view_permission(request)):
            raise PermissionDenied
        form = ClickLogUploadForm(request.POST or None, request.FILES or None, user=request.user)
        if request.method == "POST" and form.is_valid() and (job := form.start(user=request.user)):
            data = form.cleaned_data
            link = reverse("jobs:job-detail", kwargs={"job_id": job.pk})
            message = format_html(
                'Importing click log {} of {}: <a href="{}">job {}</a>.',
                data["name"], data["collection"].name, link, job.pk,
            )  # fmt: skip
            self.message_user(request, message, messages.SUCCESS)
            return redirect("admin:online_clicklog_changelist")
        context = {
            **self.admin_site.each_context(request),
            "title": "Upload a click log",
            "opts": self.model._meta,
            "form": form,
        }
        return TemplateResponse(request, "online/admin_clicklog_upload.html", context)


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
        # only those of the collections the user manages: the list shows what they may read
        mine = queryset.filter(pk__in=InterleavingExperiment.objects.managed_by(request.user).values("pk"))
        for experiment in mine:  # the service: the search path's memo of who may use it is cleared
            experiments.update_experiment(experiment=experiment, active=active)
        skipped = queryset.count() - mine.count()
        note = f"; {skipped} of collections you do not manage left as they were" if skipped else ""
        modeladmin.message_user(request, f"{mine.count()} experiment(s) {'on' if active else 'off'}{note}")

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
    list_display = ["experiment", "qid", "user", "query_id", "teams", "outcome", "shown_at"]
    search_fields = ["query_id"]  # a front end's id of the search, to find what it logged
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

    def get_queryset(self, request: HttpRequest) -> Any:
        """As the tracker shows them: only experiments on a release the user may open (its figures)."""
        return (
            super()
            .get_queryset(request)
            .filter(pk__in=TrackedExperiment.objects.visible_to(request.user).values("pk"))
        )

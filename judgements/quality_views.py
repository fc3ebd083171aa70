"""The rater page's quality table (flags, confusion matrices) and the one-click exclusion of a rater's
labels from a pool's releases, and its undoing (pool managers only)."""

from __future__ import annotations

from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from judgements import crowd_quality, exclusions
from judgements.errors import JudgingError
from judgements.models import Judging
from judgements.queries import cached_for_pool
from pooling.models import Pool
from pooling.permissions import managed_pool, manager_required


def quality_rows(judging: Judging) -> dict[str, Any]:
    """The quality report of the pool's raters, each confusion matrix laid out with its labels."""
    data = cached_for_pool(judging.pool, "rater-quality", crowd_quality.pool_rater_quality)
    labels = data["labels"]
    for row in data["raters"]:
        for kind in ("gold", "consensus"):
            row[kind]["rows"] = list(zip(labels, row[kind]["confusion"], strict=True))
    return data


def _rater(request: HttpRequest, name: str, username: str) -> tuple[Pool, User]:
    pool = managed_pool(request, name, queryset=Pool.objects.all())
    return pool, get_object_or_404(User, username=username)


@require_POST
@manager_required
def exclude(request: HttpRequest, pool: str, username: str) -> HttpResponse:
    found, rater = _rater(request, pool, username)
    try:
        by = cast(User, request.user)  # manager_required: a signed-in manager
        exclusions.exclude_rater(pool=found, rater=rater, by=by, reason=request.POST.get("reason", ""))
        messages.success(request, f"{rater.username}'s labels are left out of {found.name}'s releases.")
    except JudgingError as exc:
        messages.error(request, str(exc))
    return redirect("judging-manage:stats", pool=found.name)


@require_POST
@manager_required
def restore(request: HttpRequest, pool: str, username: str) -> HttpResponse:
    found, rater = _rater(request, pool, username)
    try:
        exclusions.restore_rater(pool=found, rater=rater, by=cast(User, request.user))
        messages.success(request, f"{rater.username}'s labels count in {found.name}'s releases again.")
    except JudgingError as exc:
        messages.error(request, str(exc))
    return redirect("judging-manage:stats", pool=found.name)

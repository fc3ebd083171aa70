"""The rater page's quality table (flags, confusion matrices) and the one-click exclusion of a rater's
labels from a pool's releases, and its undoing (pool managers only).

The page's buttons post the rater's id (``rater``) and the page of raters they are on (``page``, where
the redirect returns) to ``…/raters/exclude/`` and ``…/raters/restore/``:
every account can be reached so, whatever its name (``..``, ``a/b``, a line break, stored before names
were checked), where a username in the path would be resolved away by the browser (``..``). The routes
with the username in the path (``…/raters/<username>/exclude/``) still work for the names a path holds.
Either way the rater is looked up among the pool's own (`exclusions.pool_raters`): anyone else is 404."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from django.contrib import messages
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgements import crowd_quality, exclusions, paging
from judgements.errors import JudgingError
from judgements.models import Judging
from judgements.queries import cached_for_pool
from pooling.models import Pool
from pooling.permissions import managed_pool, manager_required


def quality_rows(judging: Judging) -> dict[str, Any]:
    """The quality report of the pool's raters, each confusion matrix laid out with its labels, and each
    rater's id (`rater_id`), which the page's buttons post."""
    data = cached_for_pool(judging.pool, "rater-quality", crowd_quality.pool_rater_quality)
    labels = data["labels"]
    ids = dict(exclusions.pool_raters(pool=judging.pool).values_list("username", "pk"))
    for row in data["raters"]:
        row["rater_id"] = ids.get(row["rater"])
        for kind in ("gold", "consensus"):
            row[kind]["rows"] = list(zip(labels, row[kind]["confusion"], strict=True))
    return data


def of_raters(data: dict[str, Any], rater_ids: Sequence[int]) -> list[dict[str, Any]]:
    """The rows of `quality_rows`' report of the raters `rater_ids` (a page of the rater page), in that
    order; a rater with no judgement has no row."""
    rows = {row["rater_id"]: row for row in data["raters"]}
    return [rows[rater_id] for rater_id in rater_ids if rater_id in rows]


def flagged(data: dict[str, Any], page_of_rater: Mapping[int, int]) -> list[dict[str, Any]]:
    """The flagged rows of `quality_rows`' report (a flag or more), each with `page`: the page of the rater
    page that shows the rater (`page_of_rater`: rater id → page), None if none does."""
    return [{**row, "page": page_of_rater.get(row["rater_id"])} for row in data["raters"] if row["flags"]]


def _back(request: HttpRequest, pool: Pool) -> HttpResponse:
    """Back to the rater page, at the page the button was on (posted as `page`)."""
    url = reverse("judging-manage:stats", kwargs={"pool": pool.name})
    return redirect(paging.page_url(url, request.POST.get("page")))


def _rater(request: HttpRequest, name: str, username: str | None) -> tuple[Pool, User]:
    """The managed pool and the rater of it named by `username` (the path) or else by the posted id
    (`rater`); 404 for a rater outside the pool, or an id that is none."""
    pool = managed_pool(request, name, queryset=Pool.objects.all())
    raters = exclusions.pool_raters(pool=pool)
    if username is not None:
        return pool, get_object_or_404(raters, username=username)
    rater_id = request.POST.get("rater", "")
    if not rater_id.isascii() or not rater_id.isdigit():
        raise Http404("no such rater")
    return pool, get_object_or_404(raters, pk=int(rater_id))


@require_POST
@manager_required
def exclude(request: HttpRequest, pool: str, username: str | None = None) -> HttpResponse:
    found, rater = _rater(request, pool, username)
    try:
        by = cast(User, request.user)  # manager_required: a signed-in manager
        exclusions.exclude_rater(pool=found, rater=rater, by=by, reason=request.POST.get("reason", ""))
        messages.success(request, f"{rater.username}'s labels are left out of {found.name}'s releases.")
    except JudgingError as exc:
        messages.error(request, str(exc))
    return _back(request, found)


@require_POST
@manager_required
def restore(request: HttpRequest, pool: str, username: str | None = None) -> HttpResponse:
    found, rater = _rater(request, pool, username)
    try:
        exclusions.restore_rater(pool=found, rater=rater, by=cast(User, request.user))
        messages.success(request, f"{rater.username}'s labels count in {found.name}'s releases again.")
    except JudgingError as exc:
        messages.error(request, str(exc))
    return _back(request, found)

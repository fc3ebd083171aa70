"""Pool pages for managers: the list of pools with their progress, a pool's statistics, starting a build."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from pooling import charts, jobs, ownership, pool_reads, stats
from pooling.jobs import active_build, latest_builds, start_build
from pooling.models import Job, Pool
from pooling.permissions import managed_pool, manager_required

# A page showing a running build reloads itself this often (seconds): live progress without scripts.
REFRESH_SECONDS = 3


def _percent(done: int, total: int) -> int:
    return round(100 * done / total) if total else 0


@require_GET
@manager_required
def pool_list(request: HttpRequest) -> HttpResponse:
    pools = list(Pool.objects.managed_by(request.user).select_related("collection").order_by("name"))
    progress = stats.pool_progress(pools)
    jobs = latest_builds(pools)
    rows = []
    for pool in pools:
        counts = progress[pool.pk]
        job = jobs.get(pool.pk)
        building = job is not None and not job.finished
        rows.append(
            {
                "pool": pool,
                **counts,
                "percent": _percent(counts["judged"], counts["selected"]),
                "job": job if building else None,
                "job_percent": round(100 * float(job.live()["progress"])) if building and job else 0,
            }
        )
    refresh = REFRESH_SECONDS if any(row["job"] for row in rows) else None
    return render(request, "pooling/pool_list.html", {"rows": rows, "refresh": refresh})


@require_GET
@manager_required
def pool_detail(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    statistics = stats.pool_statistics(pool)
    job = active_build(pool)
    live = job.live() if job is not None else {}
    heatmap = None
    if statistics.overlap_runs:
        heatmap = charts.heatmap(
            statistics.overlap,
            statistics.overlap_runs,
            title=f"Overlap (Jaccard) of the runs' top-{pool.depth}",
            vmin=0.0,
            vmax=1.0,
            show_values=len(statistics.overlap_runs) <= 30,
            scale_label="Jaccard",
        )
    context = {
        "pool": pool,
        "stats": statistics,
        "runs_with_share": [
            {"run": r, "unique_percent": _percent(r.unique, r.contributed)} for r in statistics.runs
        ],
        "estimate": pool_reads.estimate_pool(pool=pool) if pool.status != Pool.Status.BUILT else None,
        "percent": _percent(statistics.judged, statistics.selected),
        "heatmap": heatmap,
        "job": job,
        "job_percent": round(100 * float(live.get("progress", 0.0))),
        "job_message": live.get("message", ""),
        "refresh": REFRESH_SECONDS if job is not None else None,
        "managers": ownership.manager_names(owned=pool),
    }
    return render(request, "pooling/pool_detail.html", context)


@require_POST
@manager_required
def pool_build(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name, queryset=Pool.objects.all())
    job = active_build(pool)
    if job is not None:
        messages.info(request, f"Pool {pool.name} is being built already.")
    else:
        job = start_build(pool=pool, user=request.user)
        messages.success(request, f"Build of pool {pool.name} started.")
    # the build's own page: its live progress, then the counts and a link back to the pool
    return redirect("jobs:job-detail", job_id=job.pk)


@require_POST
@manager_required
def pool_managers(request: HttpRequest, name: str) -> HttpResponse:
    """Add a manager (by username) to the pool, or take one off (`remove`)."""
    from django.contrib.auth import get_user_model

    pool = managed_pool(request, name, queryset=Pool.objects.all())
    username = request.POST.get("username", "").strip()[:150]
    user = get_user_model().objects.filter(username=username).first()
    try:
        if user is None:
            raise ownership.OwnershipError(f"no user named {username!r}")
        if "remove" in request.POST:
            ownership.remove_manager(owned=pool, user=user)
            messages.success(request, f"{username} no longer manages pool {pool.name}.")
        else:
            ownership.add_managers(owned=pool, users=[user])
            messages.success(request, f"{username} manages pool {pool.name} now.")
    except ownership.OwnershipError as exc:
        messages.error(request, str(exc))
    return redirect("pooling:pool-detail", name=pool.name)


# --------------------------------------------------------------------------------------------- jobs


def _job_link(job: Job) -> dict[str, str] | None:
    """Where the job's result lives: its pool's page (builds, releases) or its collection's runs."""
    from django.urls import NoReverseMatch, reverse

    pool = Pool.objects.filter(pk=job.params.get("pool")).first() if job.params.get("pool") else None
    if pool is None:
        if job.collection is None:
            return None
        # an import: back to its collection's page (the next upload, or a pool over its runs)
        return {
            "url": reverse("setup:collection", kwargs={"name": job.collection.name}),
            "label": f"collection {job.collection.name}",
            "collection": "yes",  # the page names the collection once, as this link
        }
    try:
        if job.kind == Job.Kind.RELEASE:
            made = (job.result or {}).get("release")
            if made:  # the release this job made
                return {
                    "url": reverse("campaigns:release", kwargs={"name": pool.name, "release_id": made}),
                    "label": f"release {made} of {pool.name}",
                }
            return {
                "url": reverse("campaigns:releases", kwargs={"name": pool.name}),
                "label": f"releases of {pool.name}",
            }
        if job.kind == Job.Kind.JUDGEMENTS:
            return {
                "url": reverse("judging-manage:crowd-import", kwargs={"pool": pool.name}),
                "label": f"crowd imports of {pool.name}",
            }
        return {
            "url": reverse("pooling:pool-detail", kwargs={"name": pool.name}),
            "label": f"pool {pool.name}",
        }
    except NoReverseMatch:
        return None


def _shown(value: object) -> object:
    """A count as the job page shows it: a breakdown (`{"unpooled": 3, ...}`, a crowd import's skipped rows
    by reason) as `3 unpooled, ...`, `none` when empty."""
    if isinstance(value, dict):
        return ", ".join(f"{n} {reason}" for reason, n in sorted(value.items())) or "none"
    return value


def render_job(request: HttpRequest, job: Job, *, status: int = 200) -> HttpResponse:
    """The page of one job: status, live progress (the page reloads itself while the job runs), counts,
    errors, warnings, and a retry button once it failed."""
    live = job.live()
    context = {
        "job": job,
        "percent": round(100 * float(live.get("progress", 0.0))),
        "message": live.get("message", ""),
        "link": _job_link(job),
        # a list, not `job.counts.items` in the template: a release's counts have a key named "items"
        "counts": [(key, _shown(value)) for key, value in (job.counts or {}).items()],
        "retries": job.retries.order_by("-created_at", "-pk"),
        "refresh": None if job.finished else REFRESH_SECONDS,
    }
    return render(request, "pooling/job_detail.html", context, status=status)


@require_GET
@manager_required
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    return render_job(request, get_object_or_404(Job.objects.visible_to(request.user), pk=job_id))


@require_POST
@manager_required
def job_retry(request: HttpRequest, job_id: int) -> HttpResponse:
    job = get_object_or_404(Job.objects.visible_to(request.user), pk=job_id)
    try:
        retry = jobs.retry_job(job=job, user=request.user)
    except jobs.JobRefused as exc:
        messages.error(request, str(exc))
        return redirect("jobs:job-detail", job_id=job.pk)
    messages.success(request, f"Job {job.pk} retried as job {retry.pk}.")
    return redirect("jobs:job-detail", job_id=retry.pk)


class QueueUnavailableMiddleware:
    """Every page that starts a job answers a broker that refused it the same way: 503 with the job's own
    page (failed, with the reason, and its retry button), never a 500. The API's answer is
    `labeling.api.exception_handler`'s; a page's view lets `jobs.QueueUnavailable` through to here."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, jobs.QueueUnavailable):
            return render_job(request, exception.job, status=503)
        return None

"""Pool pages for managers: the list of pools with their progress, a pool's statistics, starting a build."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from pooling import charts, ownership, services, stats
from pooling.models import Job, Pool
from pooling.permissions import managed_pool, manager_required
from pooling.tasks import active_build, start_build

# A page showing a running build reloads itself this often (seconds): live progress without scripts.
REFRESH_SECONDS = 3


def _percent(done: int, total: int) -> int:
    return round(100 * done / total) if total else 0


@require_GET
@manager_required
def pool_list(request: HttpRequest) -> HttpResponse:
    pools = list(Pool.objects.managed_by(request.user).select_related("collection").order_by("name"))
    progress = stats.pool_progress(pools)
    jobs: dict[int, Job] = {}
    for each in Job.objects.filter(kind=Job.Kind.BUILD_POOL).order_by("created_at", "pk"):
        jobs[each.params.get("pool")] = each
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
        "estimate": services.estimate_pool(pool=pool) if pool.status != Pool.Status.BUILT else None,
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
    if active_build(pool) is not None:
        messages.info(request, f"Pool {pool.name} is being built already.")
    else:
        job = start_build(pool=pool, user=request.user)
        messages.success(request, f"Build of pool {pool.name} started (job {job.pk}).")
    return redirect("pooling:pool-detail", name=pool.name)


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

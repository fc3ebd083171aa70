"""Pool pages for managers: the list of pools with their progress, a pool's statistics (and a link to
delete it while nobody has judged it), starting a build, its managers (and the managers form a
collection's page shares, `change_managers`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from pooling import charts, deletion, jobs, ownership, pool_reads, stats
from pooling.forms import ManagerForm
from pooling.jobs import active_build, latest_builds, start_build
from pooling.models import Collection, Job, Pool
from pooling.permissions import managed_pool, manager_required, may_open_collection

# A page showing a running build reloads itself this often (seconds): live progress without scripts.
REFRESH_SECONDS = 3
#: Jobs (builds, runs added, releases) listed on a pool's page.
RECENT_JOBS = 10


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
            statistics.overlap_rows(),
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
        # items no current run contributed, kept for their judgements: the runs table's last row
        "kept_items": stats.kept_items(pool) if statistics.items else 0,
        "estimate": pool_reads.estimate_pool(pool=pool) if pool.status != Pool.Status.BUILT else None,
        "percent": _percent(statistics.judged, statistics.selected),
        "heatmap": heatmap,
        "job": job,
        "job_percent": round(100 * float(live.get("progress", 0.0))),
        "job_message": live.get("message", ""),
        "refresh": REFRESH_SECONDS if job is not None else None,
        "managers": ownership.manager_names(owned=pool),
        # a manager the pool is shared with may not manage its collection: its name is then plain text
        "collection_page": may_open_collection(request.user, pool.collection_id),
        # the "Delete pool…" link only when deleting it is possible (nobody has judged it, no build runs)
        "may_delete": deletion.pool_deletion_refusal(pool) is None,
        # the pool's jobs (builds, runs added, releases, ...) whose page the user may open: a finished job's
        # page is found here, not only by its URL
        "jobs": Job.objects.visible_to(request.user)
        .filter(params__pool=pool.pk)
        .order_by("-created_at", "-pk")[:RECENT_JOBS],
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
    pool = managed_pool(request, name, queryset=Pool.objects.all())
    if change_managers(request, owned=pool):
        return redirect("pooling:pool-detail", name=pool.name)
    return redirect("pooling:pool-list")  # they took themselves off: the pool's page is not theirs now


def change_managers(request: HttpRequest, *, owned: Collection | Pool) -> bool:
    """The managers form (`ManagerForm`) of a pool's or a collection's page, through `ownership`'s
    services (the API's), its outcome a message; answers whether the requesting user still manages
    `owned` (`managed_by`, the rule that scopes its page): a manager who took themselves off is not sent
    back to a page that is now a 404 to them."""
    form = ManagerForm(request.POST)
    kind = "pool" if isinstance(owned, Pool) else "collection"
    if not form.is_valid():
        for message in form.errors.get("username", []) or ["a username is needed"]:
            messages.error(request, str(message))
        return True
    user, username = form.cleaned_data["username"], form.cleaned_data["username"].get_username()
    try:
        if form.cleaned_data["remove"]:
            ownership.remove_manager(owned=owned, user=user)
            messages.success(request, f"{username} no longer manages {kind} {owned.name}.")
        else:
            ownership.add_managers(owned=owned, users=[user])
            messages.success(request, f"{username} manages {kind} {owned.name} now.")
    except ownership.OwnershipError as exc:
        messages.error(request, str(exc))
    return type(owned).objects.managed_by(request.user).filter(pk=owned.pk).exists()


# --------------------------------------------------------------------------------------------- jobs


def _job_links(job: Job, user: Any) -> list[dict[str, str]]:
    """What a job's page leads to, each `{"label", "url"}`, a url only to a page `user` may open (by that
    page's own rule): the job's collection (its page is its managers', `managed_collection`), for a job
    of a pool the pool's page or the job's result there (a pool's pages are its managers', `managed_pool`),
    and what a later app's kind of job made, by that app's own rule (`jobs.LINKS`: a click log, a judge).
    A collection the user may not open is named without a link; a pool they may not manage is not named;
    a pool since deleted is named as deleted."""
    made = jobs.LINKS.get(job.kind)
    return [*_collection_and_pool_links(job, user), *(made(job, user) if made is not None else [])]


def _collection_and_pool_links(job: Job, user: Any) -> list[dict[str, str]]:
    from django.urls import NoReverseMatch, reverse

    links: list[dict[str, str]] = []
    if job.collection is not None:
        label = f"collection {job.collection.name}"
        if may_open_collection(user, job.collection.pk):
            links.append({"label": label, "url": reverse("setup:collection", args=[job.collection.name])})
        else:
            links.append({"label": label})
    pool_id = job.params.get("pool")
    if not pool_id:
        return links
    pools = Pool.objects.filter(pk=pool_id)
    pool = pools.managed_by(user).first()  # one query for a manager, the page's usual viewer
    if pool is None:
        if pools.exists():  # a pool the user may not manage: not named
            return links
        return [*links, {"label": f"pool {job.params.get('name') or pool_id} (deleted)"}]
    made = (job.result or {}).get("release")
    if job.kind == Job.Kind.RELEASE and made:  # the release this job made, by its number in the pool
        number = (job.result or {}).get("number")
        label = f"release {number} of {pool.name}" if number else f"the release of {pool.name} it made"
        page, args = "campaigns:release", [pool.name, made]
    elif job.kind == Job.Kind.RELEASE:
        page, args, label = "campaigns:releases", [pool.name], f"releases of {pool.name}"
    elif job.kind == Job.Kind.JUDGEMENTS:
        page, args, label = "judging-manage:crowd-import", [pool.name], f"crowd imports of {pool.name}"
    else:
        page, args, label = "pooling:pool-detail", [pool.name], f"pool {pool.name}"
    try:
        return [*links, {"label": label, "url": reverse(page, args=args)}]
    except NoReverseMatch:
        return links


def _shown(value: object) -> object:
    """A count as the job page shows it: a breakdown (`{"unpooled": 3, ...}`, a crowd import's skipped rows
    by reason) as `3 unpooled, ...`, `none` when empty."""
    if isinstance(value, dict):
        return ", ".join(f"{n} {reason}" for reason, n in sorted(value.items())) or "none"
    return value


def render_job(request: HttpRequest, job: Job, *, status: int = 200) -> HttpResponse:
    """The page of one job: status, live progress (the page reloads itself while the job runs), counts,
    errors, warnings, and a retry button once it failed, for a viewer who may retry it (`jobs.retry_refusal`,
    what `retry_job` refuses)."""
    live = job.live()
    visible = Job.objects.visible_to(request.user)
    context = {
        "job": job,
        "percent": round(100 * float(live.get("progress", 0.0))),
        "message": live.get("message", ""),
        "links": _job_links(job, request.user),
        # a list, not `job.counts.items` in the template: a release's counts have a key named "items"; in
        # the order the job's summary gave them, not the order PostgreSQL's jsonb keeps them in
        "counts": [(key, _shown(value)) for key, value in job.ordered_counts()],
        # the retries, and the job this one retried, whose pages the viewer may open (`visible_to`)
        "retries": visible.filter(retry_of=job).order_by("-created_at", "-pk"),
        "retry_of": visible.filter(pk=job.retry_of_id).first() if job.retry_of_id else None,
        "may_retry": jobs.retry_refusal(job=job, user=request.user) is None,
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

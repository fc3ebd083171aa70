"""The manager's campaign pages: collections and their uploads, creating a pool with a live size and cost
preview, and adding runs to a pool with the preview of what they bring.

Thin views: each gets its object through `pooling.permissions` (`managed_collection`, `managed_pool`: 403
without the manager role, 404 for someone else's), validates with a form of `pooling.forms`, and calls one
service. The previews call `pool_reads.estimate_pool`, the function `create_pool`'s callers print."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from pooling import errors as pooling_errors
from pooling import imports, jobs, pool_build, pool_reads
from pooling.forms import AddRunsForm, CollectionForm, PoolForm, UploadForm
from pooling.models import Collection, Job, Pool
from pooling.permissions import managed_collection, managed_pool, manager_required, may_open_collection

#: Import jobs listed on a collection's page.
RECENT_JOBS = 10


@require_http_methods(["GET", "POST"])
@manager_required
def collection_list(request: HttpRequest) -> HttpResponse:
    """The collections the user manages, and a form to create one (its creator becomes its manager)."""
    form = CollectionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        collection = imports.create_collection(**form.cleaned_data, created_by=request.user)
        messages.success(
            request, f"Collection {collection.name} created: upload its documents, topics and runs."
        )
        return redirect("setup:collection", name=collection.name)
    collections = (
        Collection.objects.managed_by(request.user)
        .annotate(
            num_documents=Count("documents", distinct=True),
            num_topics=Count("topics", distinct=True),
            num_runs=Count("runs", distinct=True),
        )
        .order_by("name")
    )
    return render(request, "setup/collection_list.html", {"collections": collections, "form": form})


@require_http_methods(["GET", "POST"])
@manager_required
def collection_detail(request: HttpRequest, name: str) -> HttpResponse:
    """A collection's contents, its recent imports, and the upload form (each upload is a job)."""
    collection = managed_collection(request, name)
    form = UploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = jobs.start_import(
                collection=collection,
                kind=form.cleaned_data["kind"],
                upload=form.cleaned_data["file"],
                params=form.params(),
                user=request.user,
            )
        except pooling_errors.Refused as exc:
            for error in exc.errors:
                form.add_error("file", error)
        else:
            return redirect("jobs:job-detail", job_id=job.pk)
    context = {
        "collection": collection,
        "form": form,
        "counts": {
            "documents": collection.documents.count(),
            "topics": collection.topics.count(),
            "runs": collection.runs.count(),
        },
        "runs": collection.runs.order_by("name"),
        "pools": collection.pools.managed_by(request.user).order_by("name"),
        # only the jobs whose page the user may open (`visible_to`): a pool's of a pool they manage
        "jobs": Job.objects.visible_to(request.user)
        .filter(collection=collection)
        .exclude(kind=Job.Kind.BUILD_POOL)
        .order_by("-created_at", "-pk")[:RECENT_JOBS],
    }
    return render(request, "setup/collection_detail.html", context)


@require_http_methods(["GET", "POST"])
@manager_required
def pool_create(request: HttpRequest, name: str) -> HttpResponse:
    """Configure a pool over this collection's runs, with its size and cost shown before it is built."""
    collection = managed_collection(request, name)
    form = PoolForm(request.POST or None, collection=collection)
    if request.method == "POST" and "preview" not in request.POST and form.is_valid():
        try:
            pool = pool_build.create_pool(**form.pool_options(), created_by=request.user)
        except pooling_errors.PoolError as exc:  # a name taken since the form's checks, say
            exc.add_to(form)
        else:
            messages.success(request, f"Pool {pool.name} created (not built yet): build it below.")
            return redirect("pooling:pool-detail", name=pool.name)
    context = {"collection": collection, "form": form, **_preview(form)}
    return render(request, "setup/pool_create.html", context)


@require_GET
@manager_required
def pool_preview(request: HttpRequest, name: str) -> HttpResponse:
    """The preview fragment of the pool form (htmx fetches it whenever a field changes)."""
    collection = managed_collection(request, name)
    form = PoolForm(request.GET, collection=collection)
    return render(request, "setup/_pool_preview.html", _preview(form))


def _preview(form: PoolForm) -> dict[str, object]:
    if not form.is_bound:
        return {"estimate": None}
    form.is_valid()
    pool, runs = form.unsaved_pool()
    return {"estimate": pool_reads.estimate_pool(pool=pool, runs=runs, per_topic=True), "preview_pool": pool}


@require_http_methods(["GET", "POST"])
@manager_required
def pool_add_runs(request: HttpRequest, name: str) -> HttpResponse:
    """Add runs of the collection that are not in the pool; a built pool gains only their new items."""
    pool = managed_pool(request, name)
    form = AddRunsForm(request.POST or None, pool=pool)
    if request.method == "POST" and form.is_valid():
        try:
            job = jobs.start_add_runs(pool=pool, runs=list(form.cleaned_data["runs"]), user=request.user)
        except pooling_errors.PoolError as exc:
            form.add_error("runs", str(exc))
        else:
            added = ", ".join(run.name for run in form.cleaned_data["runs"])
            messages.success(request, f"Adding {added} to pool {pool.name}.")
            # the job's own page: its progress, then the new items counted and a link back to the pool
            return redirect("jobs:job-detail", job_id=job.pk)
    context = {
        "pool": pool,
        "form": form,
        # A manager the pool is shared with may not manage its collection: its page (collection_detail,
        # scoped by `managed_collection`) would be a 404 to them, so the name is then plain text.
        "collection_page": may_open_collection(request.user, pool.collection_id),
        **_added_preview(form, pool),
    }
    return render(request, "setup/pool_add_runs.html", context)


@require_GET
@manager_required
def pool_add_runs_preview(request: HttpRequest, name: str) -> HttpResponse:
    """The preview fragment of the add-runs form: the new items the chosen runs bring and their cost."""
    pool = managed_pool(request, name)
    form = AddRunsForm(request.GET, pool=pool)
    return render(request, "setup/_add_runs_preview.html", {"pool": pool, **_added_preview(form, pool)})


def _added_preview(form: AddRunsForm, pool: Pool) -> dict[str, object]:
    if not form.is_bound or not form.is_valid():
        return {"added": None}
    return {"added": pool_reads.estimate_added_runs(pool=pool, runs=form.cleaned_data["runs"])}

"""The manager's campaign pages: collections (their uploads, runs and managers, deleting one nothing uses),
creating a pool with a live size and cost preview, editing its description and instructions, adding runs
to a pool with the preview of what they bring, taking one out, and deleting a pool nobody has judged.

Thin views: each gets its object through `pooling.permissions` (`managed_collection`, `managed_pool`: 403
without the manager role, 404 for someone else's), validates with a form of `pooling.forms`, and calls one
service. The previews call `pool_reads.estimate_pool`, the function `create_pool`'s callers print."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import NON_FIELD_ERRORS
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from pooling import deletion, imports, jobs, ownership, pool_build, pool_reads, pool_text, stats
from pooling import errors as pooling_errors
from pooling.forms import UPLOAD_KINDS, AddRunsForm, CollectionForm, PoolForm, PoolTextForm, UploadForm
from pooling.models import Collection, Job, Pool, PoolItem, PoolRun, Run
from pooling.permissions import managed_collection, managed_pool, manager_required, may_open_collection
from pooling.pool_build import PoolOptions
from pooling.views import change_managers

#: Import jobs listed on a collection's page.
RECENT_JOBS = 10


@require_http_methods(["GET", "POST"])
@manager_required
def collection_list(request: HttpRequest) -> HttpResponse:
    """The collections the user manages, and a form to create one (its creator becomes its manager)."""
    form = CollectionForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            collection = imports.create_collection(**form.cleaned_data, created_by=request.user)
        except pooling_errors.ImportFailed as exc:  # the name taken since the form's checks
            exc.add_to(form)
        else:
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
    form = UploadForm(request.POST or None, request.FILES or None, collection=collection)
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
        "managers": ownership.manager_names(owned=collection),
        "pools": collection.pools.managed_by(request.user).order_by("name"),
        # the uploads of the form below (a pool's jobs are on the pool's page), those the user may open
        "jobs": Job.objects.visible_to(request.user)
        .filter(collection=collection, kind__in=[kind for kind, _ in UPLOAD_KINDS])
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


#: The fields the preview's figures are read from: while one of them has an error, the preview says what
#: to fix instead of showing figures for settings the form would not create.
PREVIEWED_FIELDS = {"runs", *PoolOptions.names(), NON_FIELD_ERRORS}


def _preview(form: PoolForm) -> dict[str, object]:
    if not form.is_bound:
        return {"estimate": None}
    form.is_valid()
    problems = [
        {"field": form[field].label if field in form.fields else "", "message": message}
        for field, messages_ in form.errors.items()
        for message in messages_
    ]
    if PREVIEWED_FIELDS.intersection(form.errors):
        return {"estimate": None, "problems": problems}
    pool, runs = form.unsaved_pool()
    return {
        "estimate": pool_reads.estimate_pool(pool=pool, runs=runs, per_topic=True),
        "preview_pool": pool,
        "runs_chosen": bool(runs),  # none: the preview asks for runs; some, with no items: it says so
        "problems": problems,
    }


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


@require_http_methods(["GET", "POST"])
@manager_required
def pool_remove_run(request: HttpRequest, name: str, run: str) -> HttpResponse:
    """Take a run out of the pool (`pool_build.remove_run`, what the API's DELETE calls): GET says what
    goes and asks to confirm; POST does it."""
    pool = managed_pool(request, name)
    link = get_object_or_404(PoolRun.objects.select_related("run"), pool=pool, run__name=run)
    if request.method == "POST":
        summary = pool_build.remove_run(pool=pool, run=link.run)
        messages.success(request, pool_build.run_removed(pool, link.run, summary))
        return redirect("pooling:pool-detail", name=pool.name)
    contribution = next((c for c in stats.run_contributions(pool) if c.run == link.run.name), None)
    context = {"pool": pool, "run": link.run, "contribution": contribution}
    return render(request, "setup/pool_remove_run.html", context)


@require_http_methods(["GET", "POST"])
@manager_required
def pool_delete(request: HttpRequest, name: str) -> HttpResponse:
    """Delete a pool nobody has judged (`deletion.delete_pool`, what the API's DELETE calls): GET says
    what goes and asks to confirm, or why the pool may not be deleted (`pool_deletion_refusal`); POST
    does it, back to the pool list."""
    pool = managed_pool(request, name)
    if request.method == "POST":
        try:
            items = deletion.delete_pool(pool=pool)
        except pooling_errors.PoolError as exc:
            messages.error(request, str(exc))
            return redirect("pooling:pool-detail", name=pool.name)
        messages.success(request, deletion.pool_deleted(pool, items))
        return redirect("pooling:pool-list")
    context = {
        "pool": pool,
        "items": PoolItem.objects.filter(pool=pool).count(),
        "runs": pool.runs.order_by("name"),
        "refusal": deletion.pool_deletion_refusal(pool),
        "collection_page": may_open_collection(request.user, pool.collection_id),
    }
    return render(request, "setup/pool_delete.html", context)


@require_http_methods(["GET", "POST"])
@manager_required
def pool_edit(request: HttpRequest, name: str) -> HttpResponse:
    """Edit the pool's description and instructions (`pool_text.edit_pool_text`, what the API's PATCH
    calls), the current ones filled in; saved, back to the pool's page."""
    pool = managed_pool(request, name)
    form = PoolTextForm(request.POST or None, initial={f: getattr(pool, f) for f in pool_text.TEXT_FIELDS})
    if request.method == "POST" and form.is_valid():
        try:
            pool_text.edit_pool_text(pool=pool, **form.cleaned_data)
        except pooling_errors.PoolError as exc:
            exc.add_to(form)
        else:
            messages.success(request, pool_text.texts_saved(pool, form.cleaned_data))
            return redirect("pooling:pool-detail", name=pool.name)
    return render(request, "setup/pool_edit.html", {"pool": pool, "form": form})


@require_http_methods(["GET", "POST"])
@manager_required
def collection_delete(request: HttpRequest, name: str) -> HttpResponse:
    """Delete a collection nothing uses (`deletion.delete_unused_collection`, what the API's DELETE calls,
    for the collection's managers as there): GET says what goes and asks to confirm, or why it may not be
    deleted (`collection_deletion_refusal`: its pools, named, a job at work, what other apps keep on it);
    POST does it, back to the collections."""
    collection = managed_collection(request, name)
    if request.method == "POST":
        try:
            contents = deletion.delete_unused_collection(collection=collection, user=request.user)
        except pooling_errors.PoolError as exc:
            messages.error(request, str(exc))
            return redirect("setup:collection", name=collection.name)
        messages.success(request, contents.deleted(collection.name))
        return redirect("setup:collections")
    context = {
        "collection": collection,
        "contents": deletion.CollectionContents.of(collection),
        "refusal": deletion.collection_deletion_refusal(collection, user=request.user),
    }
    return render(request, "setup/collection_delete.html", context)


@require_http_methods(["GET", "POST"])
@manager_required
def collection_delete_run(request: HttpRequest, name: str, run: str) -> HttpResponse:
    """Delete a run of the collection (`deletion.delete_run`, what the API's DELETE calls, for the
    collection's managers as there): GET says what goes and asks to confirm; POST does it."""
    collection = managed_collection(request, name)
    target = get_object_or_404(Run, collection=collection, name=run)
    if request.method == "POST":
        deletion.delete_run(run=target)
        messages.success(request, deletion.run_deleted(target))
        return redirect("setup:collection", name=collection.name)
    pools = Pool.objects.filter(pool_runs__run=target).distinct()
    context = {
        "collection": collection,
        "run": target,
        "pools": pools.managed_by(request.user).order_by("name"),
        "pool_count": pools.count(),
    }
    return render(request, "setup/collection_delete_run.html", context)


@require_POST
@manager_required
def collection_managers(request: HttpRequest, name: str) -> HttpResponse:
    """Add a manager (by username) to the collection, or take one off (`remove`)."""
    collection = managed_collection(request, name)
    if change_managers(request, owned=collection):
        return redirect("setup:collection", name=collection.name)
    return redirect("setup:collections")  # they took themselves off: the page is not theirs now

"""Admin: collections, documents, topics, runs and jobs; pools through the pooling services."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.widgets import FilteredSelectMultiple
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from pooling import deletion, imports, pool_build
from pooling import errors as pooling_errors
from pooling.jobs import active_build, start_build
from pooling.models import Collection, Document, Job, Pool, PoolItem, Run, Topic

#: A list filter by collection or pool that offers only the ones in the admin's (scoped) rows.
ONLY_MINE = admin.RelatedOnlyFieldListFilter


class ScopedAdmin(admin.ModelAdmin):
    """Staff who are not superusers see and change, in the admin, only the rows of the pools or the
    collections they manage (the rule is `Pool/Collection.objects.managed_by`, `visible_to`).

    `pool_path` is the lookup from the model to its pool ("" for a pool itself), or `collection_path`
    to its collection. A collection's rows are read by its managers and its pools' managers, changed by
    its managers only. Choices of a pool, a collection, an item or a run in forms are scoped alike."""

    pool_path: str | None = None
    collection_path: str | None = None

    def _scoped(self, request: HttpRequest, queryset: Any, *, change: bool) -> Any:
        user = request.user
        if self.pool_path is not None:
            key = f"{self.pool_path}__in" if self.pool_path else "pk__in"
            return queryset.filter(**{key: Pool.objects.managed_by(user).values("pk")})
        if self.collection_path is not None:
            key = f"{self.collection_path}__in" if self.collection_path else "pk__in"
            collections = Collection.objects.all()
            collections = collections.managed_by(user) if change else collections.visible_to(user)
            return queryset.filter(**{key: collections.values("pk")})
        return queryset

    def get_queryset(self, request: HttpRequest) -> Any:
        return self._scoped(request, super().get_queryset(request), change=False)

    def _may(self, request: HttpRequest, obj: Any, *, change: bool) -> bool:
        if obj is None or request.user.is_superuser:
            return True
        row = self.model._default_manager.filter(pk=obj.pk)
        return bool(self._scoped(request, row, change=change).exists())

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) and self._may(request, obj, change=False)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._may(request, obj, change=True)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self._may(request, obj, change=True)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        scoped = _scoped_choices(db_field.related_model, request)
        if scoped is not None:
            kwargs["queryset"] = scoped
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ReadOnlyAdmin(ScopedAdmin):
    """Scoped, and listed only: these rows change through the services and their pages, never by hand
    here (no add, no change; no delete unless `deletable`, for rows whose deletion the services expect)."""

    deletable = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.deletable and super().has_delete_permission(request, obj)


def _scoped_choices(model: Any, request: HttpRequest) -> Any:
    """The pools, collections, items or runs a form of the admin may offer this user (None: any)."""
    user = request.user
    if model is Pool:
        return Pool.objects.managed_by(user)
    if model is PoolItem:
        return PoolItem.objects.filter(pool__in=Pool.objects.managed_by(user).values("pk"))
    if model is Collection:
        return Collection.objects.managed_by(user)
    if model is Run:
        return Run.objects.filter(collection__in=Collection.objects.managed_by(user).values("pk"))
    return None


@admin.register(Collection)
class CollectionAdmin(ScopedAdmin):
    list_display = ["name", "description", "created_at"]
    search_fields = ["name"]
    # Managers change through pooling.ownership (the pool page, the API), which checks the role.
    exclude = ["managers"]
    collection_path = ""

    def delete_model(self, request: HttpRequest, obj: Collection) -> None:
        deletion.delete_collection(collection=obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for collection in queryset:
            deletion.delete_collection(collection=collection)


@admin.register(Document)
class DocumentAdmin(ScopedAdmin):
    list_display = ["docid", "title", "collection"]
    list_filter = [("collection", ONLY_MINE)]
    search_fields = ["docid", "title"]
    show_full_result_count = False
    collection_path = "collection"


@admin.register(Topic)
class TopicAdmin(ScopedAdmin):
    list_display = ["qid", "query", "collection", "segments"]
    list_filter = [("collection", ONLY_MINE)]
    search_fields = ["qid", "query"]
    collection_path = "collection"


class RunAdminForm(forms.ModelForm):
    def clean_name(self) -> str:
        """A new name by the import's rule (`imports.check_run_name`); an old one stays as it is."""
        name = cast(str, self.cleaned_data["name"])
        if "name" in self.changed_data:
            try:
                imports.check_run_name(name=name, file_name="")
            except pooling_errors.PoolError as exc:
                raise forms.ValidationError(exc.fields["name"]) from None
        return name


@admin.register(Run)
class RunAdmin(ScopedAdmin):
    form = RunAdminForm
    list_display = ["name", "collection", "num_rows", "num_topics", "created_at"]
    list_filter = [("collection", ONLY_MINE)]
    search_fields = ["name"]
    readonly_fields = ["num_rows", "num_topics", "source_file", "created_at"]
    collection_path = "collection"

    def delete_model(self, request: HttpRequest, obj: Run) -> None:
        deletion.delete_run(run=obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        """The bulk "delete selected" action: each run through the service (a queryset delete would leave
        its partition behind)."""
        for run in queryset:
            deletion.delete_run(run=run)


@admin.register(Job)
class JobAdmin(ScopedAdmin):
    list_display = ["id", "kind", "status", "collection", "progress", "created_at", "finished_at"]
    list_filter = ["kind", "status"]
    readonly_fields = [f.name for f in Job._meta.fields]

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request) & Job.objects.visible_to(request.user)

    def _may(self, request: HttpRequest, obj: Any, *, change: bool) -> bool:
        return obj is None or Job.objects.visible_to(request.user).filter(pk=obj.pk).exists()


# --------------------------------------------------------------------------------------------- pools


class RunChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.collection.name} / {obj.name}"


class PoolAddForm(forms.ModelForm):
    """Creates the pool through `pool_build.create_pool`, which validates the runs and every parameter.

    The service runs once the form's own checks pass (in `full_clean`); its refusal becomes a form error,
    so nothing is stored and the page shows why. The admin's `save_model` then has nothing left to save.
    """

    runs = RunChoiceField(
        queryset=Run.objects.select_related("collection").order_by("collection__name", "name"),
        widget=FilteredSelectMultiple("runs", is_stacked=False),
        help_text="The contributing runs (all of the pool's collection).",
    )

    class Meta:
        model = Pool
        fields = [
            "name", "description", "instructions", "collection", "segment", "runs", "strategy", "depth",
            "budget", "seed", "judgements_per_item", "double_judge_fraction", "relevance_level",
            "price_per_judgement",
        ]  # fmt: skip

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.created: Pool | None = None
        self.created_by: Any = None

    def full_clean(self) -> None:
        super().full_clean()
        if self.errors or not hasattr(self, "cleaned_data"):
            return
        data = self.cleaned_data
        try:
            self.created = pool_build.create_pool(
                name=data["name"],
                description=data.get("description", ""),
                instructions=data.get("instructions", ""),
                collection=data["collection"],
                runs=data["runs"],
                **pool_build.PoolOptions.given(data),
                created_by=self.created_by,
            )
        except pooling_errors.PoolError as exc:
            self.add_error(None, str(exc))

    def save(self, commit: bool = True) -> Pool:
        assert self.created is not None, "the pool is created when the form is validated"
        self.save_m2m = self._save_m2m  # type: ignore[method-assign]  # as ModelForm.save(commit=False)
        return self.created

    def _save_m2m(self) -> None:
        """Nothing: the service linked the runs."""


class PoolChangeForm(forms.ModelForm):
    """After creation only the description, the raters' instructions and the price change here; runs
    change through the actions (add runs) and the API, which keep the pool's items consistent; managers
    change on the pool's page."""

    class Meta:
        model = Pool
        fields = ["description", "instructions", "price_per_judgement"]


class AddRunsForm(forms.Form):
    runs = forms.ModelMultipleChoiceField(queryset=Run.objects.none(), widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args: Any, collection_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        runs = cast(forms.ModelMultipleChoiceField, self.fields["runs"])
        runs.queryset = Run.objects.filter(collection_id=collection_id).order_by("name")


@admin.register(Pool)
class PoolAdmin(ScopedAdmin):
    """Pools are created, built and extended through the pooling services, never by saving rows."""

    pool_path = ""
    list_display = ["name", "collection", "strategy", "depth", "budget", "status", "statistics", "created_at"]
    list_filter = ["status", "strategy", ("collection", ONLY_MINE)]
    search_fields = ["name", "description"]
    actions = ["build_pools", "add_runs"]
    readonly_fields = [
        "name", "collection", "segment", "run_names", "strategy", "depth", "budget", "seed",
        "judgements_per_item", "double_judge_fraction", "relevance_level", "status", "created_at",
        "built_at", "statistics",
    ]  # fmt: skip

    def get_form(
        self, request: HttpRequest, obj: Pool | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        if obj is None:
            user = request.user

            class ScopedPoolAddForm(PoolAddForm):
                """Over a collection the user manages; the user becomes the pool's first manager."""

                def __init__(self, *args: Any, **kwargs: Any) -> None:
                    super().__init__(*args, **kwargs)
                    self.created_by = user
                    fields = cast(dict[str, Any], self.fields)
                    fields["collection"].queryset = Collection.objects.managed_by(user)
                    fields["runs"].queryset = fields["runs"].queryset.filter(
                        collection__in=Collection.objects.managed_by(user).values("pk")
                    )

            return ScopedPoolAddForm
        kwargs["form"] = PoolChangeForm
        kwargs["fields"] = ["description", "instructions", "price_per_judgement"]
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Pool | None = None) -> Any:
        return self.readonly_fields if obj is not None else []

    def get_fields(self, request: HttpRequest, obj: Pool | None = None) -> Any:
        if obj is None:
            return PoolAddForm.Meta.fields
        return ["description", "instructions", "price_per_judgement", *self.readonly_fields]

    def save_model(self, request: HttpRequest, obj: Pool, form: Any, change: bool) -> None:
        if change:  # only the description, instructions and price, which no service owns
            super().save_model(request, obj, form, change)
        # on add, pool_build.create_pool already stored the pool and its runs (PoolAddForm)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        if change:
            super().save_related(request, form, formsets, change)

    @admin.display(description="runs")
    def run_names(self, pool: Pool) -> str:
        return ", ".join(sorted(pool.runs.values_list("name", flat=True))) or "–"

    @admin.display(description="statistics")
    def statistics(self, pool: Pool) -> str:
        return format_html('<a href="{}">statistics</a>', reverse("pooling:pool-detail", args=[pool.name]))

    @admin.action(description="Build the selected pools (a background job each)")
    def build_pools(self, request: HttpRequest, queryset: Any) -> None:
        for pool in queryset:
            if active_build(pool) is not None:
                self.message_user(request, f"{pool.name}: a build is under way already", messages.WARNING)
                continue
            job = start_build(pool=pool, user=request.user)
            self.message_user(request, f"{pool.name}: build queued (job {job.pk})", messages.SUCCESS)

    @admin.action(description="Add runs to the selected pools")
    def add_runs(self, request: HttpRequest, queryset: Any) -> TemplateResponse | None:
        pools = list(queryset.select_related("collection"))
        collections = {pool.collection_id for pool in pools}
        if len(collections) != 1:
            self.message_user(request, "Choose pools of one collection to add runs to.", messages.ERROR)
            return None
        form = AddRunsForm(
            request.POST if "apply" in request.POST else None, collection_id=next(iter(collections))
        )
        if form.is_valid():
            for pool in pools:
                try:
                    summary = pool_build.add_runs(pool=pool, runs=form.cleaned_data["runs"])
                except pooling_errors.PoolError as exc:
                    self.message_user(request, f"{pool.name}: {exc}", messages.ERROR)
                    continue
                self.message_user(
                    request,
                    f"{pool.name}: {summary.items_added} items and {summary.provenance_added} provenance "
                    f"rows added",
                    messages.SUCCESS,
                )
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Add runs",
            "opts": self.model._meta,
            "pools": pools,
            "form": form,
            "action": "add_runs",
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "pooling/admin_add_runs.html", context)

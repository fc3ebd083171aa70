"""Admin pages of the judging app. State changes go through the judging services:

- a rubric with judgements is read-only here (grades and facets included); "Save as new version" (a button
  on its page, or the list action) copies it as version n+1 through `rubrics.update_rubric`, which is
  then edited in place until it too is judged; an unjudged rubric is validated by the same rules;
- removing raters from a pool releases their live leases (`membership.remove_rater`);
- user accounts (`user_admin`): one that has judged is deactivated, never deleted; deleting one ends its
  live leases first (`lease_ends.end_lease`);
- gold labels are set and removed with `adjudication.set_gold` / `adjudication.remove_gold` (which also
  mark the item as gold, so that it is served to every rater);
- assignments, judgements (with their revisions), adjudications and model judges are shown, never edited
  here: raters change judgements through revisions, adjudicators decide on the adjudication page, judges
  are made and run on their own pages.
"""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import Count, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from judgements import (
    adjudication,
    errors,
    lease_ends,
    membership,
    rubrics,
    user_admin,  # noqa: F401  (registers the user accounts' admin)
)
from judgements.models import (
    Adjudication,
    Assignment,
    Facet,
    GoldLabel,
    Grade,
    Judge,
    Judgement,
    JudgementRevision,
    Judging,
    Rubric,
)
from pooling.admin import ONLY_MINE, ReadOnlyAdmin, ScopedAdmin
from pooling.models import Pool

NEW_VERSION = "_new_version"
RUBRIC_FIELDS = ("name", "version", "description", "allow_unrateable", "unrateable_key", "created_at")
REVISION_FIELDS = (
    "changed_at", "changed_by", "old_grade", "old_unrateable", "new_grade", "new_unrateable", "old_note",
    "new_note", "old_facets", "new_facets",
)  # fmt: skip


def _judged(rubric: Rubric | None) -> bool:
    """Whether a rubric has judgements (cached on the instance for the length of one request)."""
    if rubric is None or rubric.pk is None:
        return False
    if not hasattr(rubric, "_judged_cache"):
        rubric._judged_cache = rubric.has_judgements()  # type: ignore[attr-defined]  # a per-request memo
    return bool(rubric._judged_cache)  # type: ignore[attr-defined]  # the memo above


# -------------------------------------------------------------------------------------------- rubrics


class GradeFormSet(BaseInlineFormSet):
    """Checks the grades with the services' rules (distinct values and one-character keys, no clash with
    the unrateable key, no reserved key). No grade at all on a new rubric means the default scale."""

    def clean(self) -> None:
        super().clean()
        if _judged(self.instance) or any(form.errors for form in self.forms):
            return
        grades = [
            {key: form.cleaned_data.get(key) for key in ("value", "label", "description", "key")}
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE")
        ]
        if not grades and (self.instance.pk is None or not self.instance.grades.exists()):
            return  # the default four-grade scale is filled in by RubricAdmin.save_related
        try:
            rubrics._check_grades(  # noqa: SLF001 - the one place the rubric rules live
                grades,
                allow_unrateable=self.instance.allow_unrateable,
                unrateable_key=self.instance.unrateable_key,
            )
            rubrics.check_pools_gaps(self.instance, grades)
        except errors.JudgingError as exc:
            raise ValidationError(str(exc)) from None


class FacetForm(forms.ModelForm):
    class Meta:
        model = Facet
        fields = ["name", "label", "choices", "required"]

    def clean_choices(self) -> list[Any]:
        choices = self.cleaned_data.get("choices")
        if choices in (None, ""):
            return []
        if not isinstance(choices, list):
            raise ValidationError('choices are a JSON list, e.g. ["fresh", "stale"]')
        return choices


class ReadOnlyWhenJudged:
    """Inline mixin: no add, change or delete on a rubric that has judgements."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not _judged(obj) and super().has_add_permission(request, obj)  # type: ignore[misc]  # a mixin of InlineModelAdmin

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not _judged(obj) and super().has_change_permission(request, obj)  # type: ignore[misc]  # a mixin of InlineModelAdmin

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not _judged(obj) and super().has_delete_permission(request, obj)  # type: ignore[misc]  # a mixin of InlineModelAdmin


class GradeInline(ReadOnlyWhenJudged, admin.TabularInline):
    model = Grade
    formset = GradeFormSet
    fields = ["value", "label", "description", "key"]
    extra = 0


class FacetInline(ReadOnlyWhenJudged, admin.TabularInline):
    model = Facet
    form = FacetForm
    fields = ["name", "label", "choices", "required"]
    extra = 0


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "scale", "num_facets", "allow_unrateable", "judged", "created_at"]
    list_filter = ["allow_unrateable"]
    search_fields = ["name", "description"]
    inlines = [GradeInline, FacetInline]
    actions = ["make_new_version"]
    fields = RUBRIC_FIELDS

    def get_queryset(self, request: HttpRequest) -> QuerySet[Rubric]:
        return super().get_queryset(request).annotate(facet_count=Count("facets", distinct=True))

    def get_fields(self, request: HttpRequest, obj: Rubric | None = None) -> list[Any]:
        return [*RUBRIC_FIELDS, "new_version"] if _judged(obj) else list(RUBRIC_FIELDS)

    def get_readonly_fields(self, request: HttpRequest, obj: Rubric | None = None) -> list[str]:
        if _judged(obj):
            return [*RUBRIC_FIELDS, "new_version"]
        if obj is not None:
            return ["name", "version", "unrateable_key", "created_at"]
        return ["version", "created_at"]

    def has_delete_permission(self, request: HttpRequest, obj: Rubric | None = None) -> bool:
        return not _judged(obj) and super().has_delete_permission(request, obj)

    @admin.display(description="grades")
    def scale(self, rubric: Rubric) -> str:
        return ", ".join(f"{g.value} {g.label}" for g in rubric.grades.all())

    @admin.display(description="facets", ordering="facet_count")
    def num_facets(self, rubric: Rubric) -> int:
        return int(getattr(rubric, "facet_count", 0))

    @admin.display(description="judged", boolean=True)
    def judged(self, rubric: Rubric) -> bool:
        return _judged(rubric)

    @admin.display(description="new version")
    def new_version(self, rubric: Rubric) -> str:
        return format_html(
            '<p>This rubric has judgements, so it is never edited in place.</p><button type="submit" '
            'name="{}" value="1" class="button">Save as new version</button> (copies it as the next '
            "version of {}, which you can then edit)",
            NEW_VERSION,
            rubric.name,
        )

    def save_model(self, request: HttpRequest, obj: Rubric, form: Any, change: bool) -> None:
        if change and _judged(obj):
            return  # read-only: nothing was editable, nothing is written
        if not change:
            latest = Rubric.objects.filter(name=obj.name).order_by("-version").first()
            obj.version = latest.version + 1 if latest else 1
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        if not form.instance.grades.exists():
            rubrics.update_rubric(rubric=form.instance, grades=rubrics.DEFAULT_GRADES)

    def response_change(self, request: HttpRequest, obj: Rubric) -> HttpResponse:
        if NEW_VERSION in request.POST and _judged(obj):
            new = rubrics.update_rubric(rubric=obj)
            self.message_user(
                request, f"Saved {new} as a new version of {obj}; edit it here.", messages.SUCCESS
            )
            return HttpResponseRedirect(reverse("admin:judgements_rubric_change", args=[new.pk]))
        return super().response_change(request, obj)

    @admin.action(description="Save selected judged rubrics as new versions")
    def make_new_version(self, request: HttpRequest, queryset: QuerySet[Rubric]) -> None:
        made = []
        for rubric in queryset:
            if _judged(rubric):
                made.append(str(rubrics.update_rubric(rubric=rubric)))
            else:
                self.message_user(request, f"{rubric} has no judgements: edit it in place.", messages.WARNING)
        if made:
            self.message_user(request, f"New versions: {', '.join(made)}.", messages.SUCCESS)


# ----------------------------------------------------------------------------------- pools and leases


@admin.register(Judging)
class JudgingAdmin(ScopedAdmin):
    pool_path = "pool"
    list_display = ["pool", "rubric", "num_raters", "lease_minutes", "adjudication_gap"]
    list_select_related = ["pool", "rubric"]
    search_fields = ["pool__name"]
    filter_horizontal = ["raters"]
    autocomplete_fields = ["rubric"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Judging]:
        return super().get_queryset(request).annotate(rater_count=Count("raters", distinct=True))

    @admin.display(description="raters", ordering="rater_count")
    def num_raters(self, judging: Judging) -> int:
        return int(getattr(judging, "rater_count", 0))

    def get_readonly_fields(self, request: HttpRequest, obj: Judging | None = None) -> list[str]:
        return ["pool"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: Judging, form: Any, change: bool) -> None:
        obj._raters_before = set(obj.raters.values_list("pk", flat=True)) if change else set()  # type: ignore[attr-defined]  # read by save_related
        super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        judging = form.instance
        before: set[int] = getattr(judging, "_raters_before", set())
        removed = before - set(judging.raters.values_list("pk", flat=True))
        for rater in judging.raters.model.objects.filter(pk__in=removed):
            membership.remove_rater(pool=judging.pool, rater=rater)  # releases their live leases
        membership.count_gold_need(pool_id=judging.pool_id)  # raters added here too


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    pool_path = "item__pool"
    list_display = ["id", "rater", "pool", "item", "state", "leased_at", "expires_at"]
    list_filter = ["state", ("item__pool", ONLY_MINE)]
    list_select_related = ["rater", "item__pool", "item__topic", "item__document"]
    search_fields = ["rater__username", "item__document__docid", "item__topic__qid"]
    actions = ["sweep_expired"]

    @admin.display(description="pool", ordering="item__pool__name")
    def pool(self, assignment: Assignment) -> str:
        return assignment.item.pool.name

    @admin.action(description="Sweep the expired leases of the pools I manage now (gives their items back)")
    def sweep_expired(self, request: HttpRequest, queryset: QuerySet[Assignment]) -> None:
        swept = lease_ends.sweep_expired_leases(pools=Pool.objects.managed_by(request.user))
        self.message_user(request, f"{swept} expired lease(s) swept in the pools you manage.")


# ------------------------------------------------------------------------------------------ judgements


class RevisionInline(admin.TabularInline):
    model = JudgementRevision
    fields = REVISION_FIELDS
    readonly_fields = REVISION_FIELDS
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Judgement)
class JudgementAdmin(ReadOnlyAdmin):
    """Read-only: a judgement changes only through a revision (labels.revise_judgement), and is never
    deleted here (the item's judgement counter is kept by the services)."""

    pool_path = "item__pool"
    list_display = ["id", "rater", "pool", "qid", "docid", "grade", "unrateable", "imported", "updated_at"]
    list_filter = ["unrateable", "imported", ("item__pool", ONLY_MINE)]
    list_select_related = ["rater", "item__pool", "item__topic", "item__document"]
    search_fields = ["rater__username", "item__document__docid", "item__topic__qid"]
    inlines = [RevisionInline]

    @admin.display(description="pool", ordering="item__pool__name")
    def pool(self, judgement: Judgement) -> str:
        return judgement.item.pool.name

    @admin.display(description="qid", ordering="item__topic__qid")
    def qid(self, judgement: Judgement) -> str:
        return judgement.item.topic.qid

    @admin.display(description="docid", ordering="item__document__docid")
    def docid(self, judgement: Judgement) -> str:
        return judgement.item.document.docid

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the item's judgement counter is kept by the services


@admin.register(Judge)
class JudgeAdmin(ReadOnlyAdmin):
    """Read-only: model judges are made, run and measured on their pages (/evaluation/<pool>/judges/), the
    API and the commands (`judgements.judges`), which also keep the judge's account and its labels."""

    pool_path = "pool"
    list_display = ["name", "pool", "method", "admitted", "created_at"]
    list_filter = ["method", "admitted", ("pool", ONLY_MINE)]
    list_select_related = ["pool"]
    search_fields = ["name", "pool__name"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# ------------------------------------------------------------------------------ gold and adjudication


class GoldLabelForm(forms.ModelForm):
    class Meta:
        model = GoldLabel
        fields = ["item", "grade"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        item = data.get("item") or getattr(self.instance, "item", None)
        if item is not None and data.get("grade") is not None:
            judging = Judging.objects.filter(pool_id=item.pool_id).select_related("rubric").first()
            if judging is None:
                raise ValidationError("this item's pool has no judging set up")
            if data["grade"] not in judging.rubric.labels:
                raise ValidationError({"grade": f"not a grade of {judging.rubric} ({judging.rubric.labels})"})
        return data


@admin.register(GoldLabel)
class GoldLabelAdmin(ScopedAdmin):
    pool_path = "item__pool"
    form = GoldLabelForm
    list_display = ["item", "grade", "created_by", "created_at"]
    list_select_related = ["item__pool", "item__topic", "item__document", "created_by"]
    list_filter = [("item__pool", ONLY_MINE)]
    search_fields = ["item__document__docid", "item__topic__qid"]
    raw_id_fields = ["item"]

    def get_readonly_fields(self, request: HttpRequest, obj: GoldLabel | None = None) -> list[str]:
        return ["item", "created_by", "created_at"] if obj is not None else []

    def save_model(self, request: HttpRequest, obj: GoldLabel, form: Any, change: bool) -> None:
        gold = adjudication.set_gold(item=obj.item, grade=obj.grade, by=cast(User, request.user))
        obj.pk = gold.pk

    def delete_model(self, request: HttpRequest, obj: GoldLabel) -> None:
        adjudication.remove_gold(item=obj.item)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[GoldLabel]) -> None:
        for gold in queryset.select_related("item"):
            adjudication.remove_gold(item=gold.item)


@admin.register(Adjudication)
class AdjudicationAdmin(ReadOnlyAdmin):
    """Decisions are made on the adjudication page (it shows every grade and note); here they are listed,
    and deleting one puts the item back in the queue."""

    pool_path = "item__pool"
    deletable = True

    list_display = ["item", "grade", "unrateable", "adjudicator", "decided_at"]
    list_select_related = ["item__pool", "item__topic", "item__document", "adjudicator"]
    list_filter = [("item__pool", ONLY_MINE), "unrateable"]
    search_fields = ["item__document__docid", "item__topic__qid", "note"]

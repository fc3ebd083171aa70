"""Manager pages of the judging app (pool managers and admins only; anyone else gets a 403, anonymous users
the login page, a pool or item that does not exist a 404): rater statistics with a grade-distribution chart,
gold items, the adjudication queue, and the history of an item's judgements.

Managers see everything about a pool here, including every rater's grades; none of it is reachable from
the rater pages or the rater API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judgements import adjudication as gold_and_adjudication
from judgements import dashboard as boards
from judgements import errors, labels, paging, quality_views, stats
from judgements.campaign_views import JudgingNotSetUp
from judgements.models import Adjudication, GoldLabel, Judgement, Judging, Rubric
from pooling import charts
from pooling.models import Pool, PoolItem
from pooling.permissions import managed_pool, manager_required

UNRATEABLE = "unrateable"


def _judging(request: HttpRequest, name: str) -> Judging:
    """The judging set-up of a pool the user manages (404 for another's pool; for one not set up, the page
    that links to its set-up)."""
    pool = managed_pool(request, name, queryset=Pool.objects.all())
    judging = Judging.objects.select_related("pool", "rubric").filter(pool=pool).first()
    if judging is None:
        raise JudgingNotSetUp(pool.name)  # the pool's manager is told to set it up
    return judging


def _item(judging: Judging, item_id: int, **more: Any) -> PoolItem:
    """An item of the judging's pool, with its topic and document (404 for another pool's item), that
    also matches `more`."""
    return get_object_or_404(
        PoolItem.objects.select_related("topic", "document"), pool=judging.pool, pk=item_id, **more
    )


class Labels:
    """How labels read on these pages — `2 Good`, `unrateable`, `—` for none — with each rubric's grade
    names loaded once."""

    def __init__(self) -> None:
        self._names: dict[int, dict[int, str]] = {}

    def __call__(self, rubric: Rubric, grade: int | None, unrateable: bool) -> str:
        if unrateable:
            return UNRATEABLE
        if grade is None:
            return "—"
        if rubric.pk not in self._names:
            self._names[rubric.pk] = dict(rubric.grades.values_list("value", "label"))
        name = self._names[rubric.pk].get(grade)
        return f"{grade} {name}" if name else str(grade)


# ---------------------------------------------------------------------------------------------- forms


def _grade_choices(rubric: Rubric, *, unrateable: bool, blank: str = "") -> list[tuple[str, str]]:
    choices = [("", blank)] if blank else []
    choices += [(str(g.value), f"{g.value} — {g.label}") for g in rubric.grades.order_by("-value")]
    if unrateable and rubric.allow_unrateable:
        choices.append((UNRATEABLE, "unrateable"))
    return choices


class GoldForm(forms.Form):
    """A gold label: the item by qid and docid, and its known grade."""

    qid = forms.CharField(max_length=100)
    docid = forms.CharField(max_length=255)
    grade = forms.TypedChoiceField(coerce=int, choices=())

    def __init__(self, *args: Any, rubric: Rubric, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["grade"].choices = _grade_choices(rubric, unrateable=False)  # type: ignore[attr-defined]  # a ChoiceField


class DecisionForm(forms.Form):
    """An adjudicator's decision: a grade of the rubric or unrateable, and a note. Nothing is chosen
    until the adjudicator chooses: a careless submit is refused, never recorded as the top grade."""

    decision = forms.ChoiceField(choices=())
    note = forms.CharField(
        required=False, max_length=labels.NOTE_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 2})
    )

    def __init__(self, *args: Any, rubric: Rubric, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["decision"].choices = _grade_choices(rubric, unrateable=True, blank="— choose a grade —")  # type: ignore[attr-defined]  # a ChoiceField

    def label(self) -> tuple[int | None, bool]:
        """(grade, unrateable) of a valid form."""
        decision = self.cleaned_data["decision"]
        return (None, True) if decision == UNRATEABLE else (int(decision), False)


# ---------------------------------------------------------------------------------------------- chart

#: Colours of grades, highest grade first; unrateable is grey.
GRADE_COLOURS = ["#2f7d4f", "#7fb069", "#e0b040", "#d9822b", "#b3261e", "#7a1c16", "#4a3f8c", "#2458a6"]
UNRATEABLE_COLOUR = "#9aa3ab"


def grade_chart(rows: Sequence[stats.RaterStats], labels: Sequence[int]) -> SafeString:
    """A stacked bar per rater: the share of each grade (highest first, then unrateable) in the rater's
    judgements."""
    ordered = sorted(labels, reverse=True)
    parts = [
        (str(grade), GRADE_COLOURS[i % len(GRADE_COLOURS)], [entry.grades.get(grade, 0) for entry in rows])
        for i, grade in enumerate(ordered)
    ]
    parts.append((UNRATEABLE, UNRATEABLE_COLOUR, [entry.unrateable for entry in rows]))
    return charts.stacked_shares(
        [entry.username for entry in rows], parts, title="Grade distribution per rater",
        x_label="share of the rater's judgements",
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- pages


@require_GET
@manager_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """Every pool the manager manages: progress per topic and rater, pace, ETA, cost, what needs them."""
    return render_dashboard(request)


def render_dashboard(request: HttpRequest, *, rater_of_nothing: bool = False) -> HttpResponse:
    """The dashboard page (also the home page of a manager who rates no pool: `rater_of_nothing`)."""
    rows = boards.manager_dashboard(user=request.user)
    context = {"boards": rows, "rater_of_nothing": rater_of_nothing}
    return render(request, "judgements/manage/dashboard.html", context)


@require_GET
@manager_required
def index(request: HttpRequest) -> HttpResponse:
    """Every pool with a judging setup: raters, judgements, gold items, adjudications."""
    judgings = (
        Judging.objects.filter(pool__in=Pool.objects.managed_by(request.user).values("pk"))
        .select_related("pool", "rubric")
        .annotate(
            num_raters=Count("raters", distinct=True),
            num_gold=Count("pool__items", filter=Q(pool__items__gold=True), distinct=True),
        )
        .order_by("pool__name")
    )
    return render(request, "judgements/manage/index.html", {"judgings": judgings})


#: Raters per page of the rater page (each has a row of statistics, a bar of the chart, a row of quality
#: with its confusion matrices).
RATER_PAGE = 50


@require_GET
@manager_required
def pool_stats(request: HttpRequest, pool: str) -> HttpResponse:
    """Per-rater statistics of a pool, each rater's quality and flags, and a bar chart of each rater's
    grade distribution, a page of raters at a time: one order of raters (`rater_statistics`', by username)
    pages the two tables and the chart together. The pool's figures (judgements, gold, queue) and the
    count of raters (`stats.headcount`: raters, crowd workers, removed raters) and of flagged ones are the
    whole pool's; each flagged rater links to their page."""
    judging = _judging(request, pool)
    rows = stats.rater_statistics(pool=judging.pool)
    page = paging.page_of(request, rows, RATER_PAGE)
    shown = list(page.object_list)
    quality = quality_views.quality_rows(judging)
    page_of_rater = {row.rater_id: n // page.paginator.per_page + 1 for n, row in enumerate(rows)}
    context = {
        "judging": judging,
        "page": page,
        "rows": shown,
        "headcount": stats.headcount(rows),
        "chart": grade_chart(shown, judging.rubric.labels),
        "labels": sorted(judging.rubric.labels, reverse=True),
        "queue": gold_and_adjudication.queue_rows(pool=judging.pool).count(),
        "num_gold": GoldLabel.objects.filter(item__pool=judging.pool).count(),
        "judgements": Judgement.objects.filter(item__pool=judging.pool).count(),
        "quality": quality,
        "quality_rows": quality_views.of_raters(quality, [row.rater_id for row in shown]),
        "flagged": quality_views.flagged(quality, page_of_rater),
    }
    return render(request, "judgements/manage/stats.html", context)


@require_http_methods(["GET", "POST"])
@manager_required
def gold(request: HttpRequest, pool: str) -> HttpResponse:
    """The pool's gold items, and a form to give an item (qid + docid) a known grade."""
    judging = _judging(request, pool)
    form = GoldForm(request.POST or None, rubric=judging.rubric)
    if request.method == "POST" and form.is_valid():
        item = PoolItem.objects.filter(
            pool=judging.pool, topic__qid=form.cleaned_data["qid"], document__docid=form.cleaned_data["docid"]
        ).first()
        if item is None:
            form.add_error(
                "docid", f"{form.cleaned_data['qid']} {form.cleaned_data['docid']} is not in the pool"
            )
        else:
            try:
                gold_and_adjudication.set_gold(
                    item=item, grade=form.cleaned_data["grade"], by=cast(User, request.user)
                )
            except errors.JudgingError as exc:
                form.add_error("grade", str(exc))
            else:
                messages.success(request, f"{item.topic.qid} {item.document.docid} is gold now.")
                return redirect("judging-manage:gold", pool=judging.pool.name)
    golds = (
        GoldLabel.objects.filter(item__pool=judging.pool)
        .select_related("item__topic", "item__document", "created_by")
        .annotate(num_judgements=Count("item__judgements"))
        .order_by("item__topic__qid", "item__document__docid")
    )
    code = 400 if request.method == "POST" else 200
    return render(
        request,
        "judgements/manage/gold.html",
        {"judging": judging, "golds": golds, "form": form},
        status=code,
    )


@require_POST
@manager_required
def remove_gold(request: HttpRequest, pool: str, item_id: int) -> HttpResponse:
    judging = _judging(request, pool)
    item = _item(judging, item_id, gold_label__isnull=False)
    gold_and_adjudication.remove_gold(item=item)
    messages.success(request, f"{item.topic.qid} {item.document.docid} is no longer gold.")
    return redirect("judging-manage:gold", pool=judging.pool.name)


#: Items of the adjudication queue per page (each shows every judgement and a decision form).
ADJUDICATION_PAGE = 50


def _queue_page(
    request: HttpRequest,
    judging: Judging,
    *,
    failed: int | None = None,
    failed_form: DecisionForm | None = None,
) -> HttpResponse:
    label = Labels()
    entries = []
    # A page of the queue at a time (counted and sliced in the database, details for the page only); a
    # decision posts its page back, so the manager stays where they were.
    page = paging.page_of(request, gold_and_adjudication.queue_rows(pool=judging.pool), ADJUDICATION_PAGE)
    for entry in stats.queue_entries(page.object_list):
        form = failed_form if entry.item_id == failed else DecisionForm(rubric=judging.rubric)
        labels = [
            {"judgement": j, "label": label(judging.rubric, j.grade, j.unrateable)} for j in entry.judgements
        ]
        gold = label(judging.rubric, entry.gold, False) if entry.gold is not None else None
        entries.append({"entry": entry, "labels": labels, "form": form, "gold": gold})
    context = {"judging": judging, "entries": entries, "page": page}
    return render(request, "judgements/manage/adjudication.html", context, status=400 if failed else 200)


def _queue_url(pool: Pool, page: str | None) -> str:
    """The queue's page `page` (the first without a query)."""
    return paging.page_url(reverse("judging-manage:adjudication", kwargs={"pool": pool.name}), page)


@require_GET
@manager_required
def adjudication(request: HttpRequest, pool: str) -> HttpResponse:
    """Items whose grades differ by at least the pool's gap, with every grade, note and rater."""
    return _queue_page(request, _judging(request, pool))


@require_POST
@manager_required
def adjudicate(request: HttpRequest, pool: str, item_id: int) -> HttpResponse:
    """Record the decision on an item; it overrides aggregation and leaves the queue."""
    judging = _judging(request, pool)
    item = _item(judging, item_id)
    form = DecisionForm(request.POST, rubric=judging.rubric)
    if form.is_valid():
        grade, unrateable = form.label()
        try:
            gold_and_adjudication.adjudicate(
                item=item,
                adjudicator=cast(User, request.user),
                grade=grade,
                unrateable=unrateable,
                note=form.cleaned_data["note"],
            )
        except errors.JudgingError as exc:
            form.add_error("decision", str(exc))
        else:
            messages.success(request, f"Decision recorded for {item.topic.qid} {item.document.docid}.")
            return redirect(_queue_url(judging.pool, request.POST.get("page")))
    return _queue_page(request, judging, failed=item.pk, failed_form=form)


@require_GET
@manager_required
def item_history(request: HttpRequest, pool: str, item_id: int) -> HttpResponse:
    """Every judgement of an item and every revision of it (who, when, old, new); gold and decision."""
    judging = _judging(request, pool)
    item = _item(judging, item_id)
    rubric = judging.rubric
    label = Labels()
    judgements = []
    for judgement in (
        Judgement.objects.filter(item=item)
        .select_related("rater", "rubric")
        .prefetch_related("revisions__changed_by")
        .order_by("created_at", "id")
    ):
        revisions = [
            {
                "revision": revision,
                "old": label(judgement.rubric, revision.old_grade, revision.old_unrateable),
                "new": label(judgement.rubric, revision.new_grade, revision.new_unrateable),
            }
            for revision in judgement.revisions.all()
        ]
        judgements.append(
            {"judgement": judgement, "label": label(judgement.rubric, judgement.grade, judgement.unrateable),
             "revisions": revisions}
        )  # fmt: skip
    gold_label = GoldLabel.objects.filter(item=item).first()
    decision = Adjudication.objects.filter(item=item).select_related("adjudicator").first()
    context = {
        "judging": judging,
        "item": item,
        "judgements": judgements,
        "gold": label(rubric, gold_label.grade, False) if gold_label else None,
        "decision": decision,
        "decision_label": label(rubric, decision.grade, decision.unrateable) if decision else None,
    }
    return render(request, "judgements/manage/history.html", context)

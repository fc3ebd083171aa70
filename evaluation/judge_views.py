"""Pages of a pool's model judges (managers): the list with each gate's verdict, one judge's gate."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from judgements.errors import JudgingError
from judgements.judges import create_judge, external_commands, start_judge_run
from judgements.models import Judge, Judging
from pooling.permissions import managed_pool


class JudgeForm(forms.Form):
    """What `judges.create_judge` takes from a page: external judges by the name of a configured program."""

    name = forms.SlugField(max_length=80)
    method = forms.ChoiceField(choices=Judge.Method.choices)
    program = forms.ChoiceField(required=False, help_text="External judges: one the server offers.")
    # Their ranges are the service's (`judges.create_judge`), shown beside the field as the API gives them.
    seed = forms.IntegerField(initial=0)
    folds = forms.IntegerField(initial=5, help_text="Learned judges.")
    timeout_seconds = forms.FloatField(initial=30.0)
    retries = forms.IntegerField(initial=1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        program = self.fields["program"]
        assert isinstance(program, forms.ChoiceField)
        program.choices = [("", "—"), *((name, name) for name in sorted(external_commands()))]


class ThresholdForm(forms.Form):
    gate_kappa = forms.FloatField(
        required=False, min_value=-1.0, max_value=1.0, help_text="Blank: the raters' own agreement."
    )


def _judge(request: HttpRequest, name: str, judge: str) -> Judge:
    pool = managed_pool(request, name)
    return get_object_or_404(Judge.objects.select_related("pool"), pool=pool, name=judge)


@login_required
def judges(request: HttpRequest, name: str) -> HttpResponse:
    """The pool's judges (creates one, or sets the gate's threshold, on POST)."""
    pool = managed_pool(request, name)
    judging = Judging.objects.filter(pool=pool).first()
    form, threshold, status = (
        JudgeForm(),
        ThresholdForm(initial={"gate_kappa": getattr(judging, "gate_kappa", None)}),
        200,
    )
    if request.method == "POST" and request.POST.get("action") == "threshold" and judging is not None:
        threshold = ThresholdForm(request.POST)
        if threshold.is_valid():
            Judging.objects.filter(pk=judging.pk).update(gate_kappa=threshold.cleaned_data["gate_kappa"])
            return redirect("evaluation:judges", name=pool.name)
        status = 400
    elif request.method == "POST":
        form = JudgeForm(request.POST)
        if form.is_valid():
            data = dict(form.cleaned_data)
            data["program"] = data["program"] or None
            try:
                judge = create_judge(pool=pool, by=request.user, **data)  # type: ignore[arg-type]  # logged in
            except JudgingError as exc:
                exc.add_to(form)
            else:
                return redirect("evaluation:judge", name=pool.name, judge=judge.name)
        status = 400
    rows = Judge.objects.filter(pool=pool).annotate(
        labels=Count("user__judgements", filter=Q(user__judgements__kind=Judge.Kind.MODEL))
    )
    context = {"pool": pool, "judging": judging, "judges": rows, "form": form, "threshold": threshold}
    return render(request, "evaluation/judges.html", context, status=status)


@login_required
def judge(request: HttpRequest, name: str, judge: str) -> HttpResponse:
    """One judge: what it is, its last run, and its gate — the figures and why it was admitted or not."""
    found = _judge(request, name, judge)
    gate = found.gate or {}
    labels = gate.get("labels", [])
    confusion = [{"grade": labels[i], "cells": row} for i, row in enumerate(gate.get("confusion", []))]
    counts = found.run_counts or {}
    context = {
        "pool": found.pool,
        "judge": found,
        "gate": gate,
        "labels": labels,
        "confusion": confusion,
        # lists, not dicts: a template's `.items` would read the key "items" of these dicts
        "counts": [(key, value) for key, value in counts.items() if key != "errors"],
        "errors": counts.get("errors", []),
        "runs": list(gate.get("ranking", {}).get("runs", {}).items()),
    }
    return render(request, "evaluation/judge.html", context)


@login_required
@require_POST
def judge_run(request: HttpRequest, name: str, judge: str) -> HttpResponse:
    """Start the job that labels the pool with this judge and measures its gate; its page follows it."""
    found = _judge(request, name, judge)
    job = start_judge_run(judge=found, user=request.user)
    return redirect("jobs:job-detail", job_id=job.pk)

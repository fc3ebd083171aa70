"""The pool manager's crowd import page: upload a crowd file (many workers' labels) with its options; the
import is a job (`crowd_import.start_crowd_import`), followed on its job page, whose counts say how many
rows were created, revised, made unrateable, and skipped by reason."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from judgements import crowd_import
from judgements.errors import JudgingError
from judgements.manager_views import _judging
from pooling import errors as pooling_errors
from pooling.models import Job
from pooling.permissions import manager_required

#: Crowd imports listed on the page.
RECENT_IMPORTS = 10


#: How the page names each of the import's rules for a (worker, item) given twice (`DUPLICATE_RULES`).
DUPLICATE_LABELS = {"last": "the last row wins", "revisions": "keep every row, as revisions"}


class CrowdImportForm(forms.Form):
    """A crowd file and the options of `crowd_import.import_crowd_judgements` (the API's fields, too)."""

    file = forms.FileField(
        help_text="CSV or TSV with a header: worker, qid, docid, label[, seconds]; .gz read."
    )
    duplicates = forms.ChoiceField(
        choices=[(rule, DUPLICATE_LABELS[rule]) for rule in crowd_import.DUPLICATE_RULES],
        initial="last",
        help_text="The same (worker, item) more than once in the file.",
    )
    unrateable_labels = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"maxlength": crowd_import.MAX_LABELS_TEXT}),  # checked by parse_labels
        help_text="Labels that mean unrateable, comma-separated (e.g. -2 for a broken page); other "
        "negative labels are skipped and counted.",
    )
    skip_unpooled = forms.BooleanField(
        required=False, help_text="Skip (and count) rows of documents outside the pool instead of failing."
    )
    create_raters = forms.BooleanField(
        required=False,
        help_text="Give each new worker an account of their own (no password: they never log in).",
    )

    def clean_unrateable_labels(self) -> list[int]:
        try:
            return crowd_import.parse_labels(self.cleaned_data.get("unrateable_labels") or "")
        except crowd_import.CrowdOptionError as exc:
            raise forms.ValidationError(exc.message) from None

    def options(self) -> dict[str, Any]:
        """The keyword arguments of `start_crowd_import` (without the pool and the user)."""
        data = self.cleaned_data
        return {
            "upload": data["file"],
            "duplicates": data["duplicates"],
            "unrateable_labels": data["unrateable_labels"],
            "skip_unpooled": data["skip_unpooled"],
            "create_raters": data["create_raters"],
        }


@require_http_methods(["GET", "POST"])
@manager_required
def crowd_upload(request: HttpRequest, pool: str) -> HttpResponse:
    """The upload form and the pool's recent crowd imports; a good upload goes to its job's page, a bad
    one comes back (400) with the errors by line on the file, or on the option at fault."""
    judging = _judging(request, pool)
    form = CrowdImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = crowd_import.start_crowd_import(pool=judging.pool, user=request.user, **form.options())
        except crowd_import.CrowdOptionError as exc:
            exc.add_to(form)
        except pooling_errors.ImportFailed as exc:
            for error in exc.errors:
                form.add_error("file", error)
        except JudgingError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("jobs:job-detail", job_id=job.pk)
    recent = Job.objects.filter(kind=Job.Kind.JUDGEMENTS, params__pool=judging.pool.pk).order_by(
        "-created_at", "-pk"
    )[:RECENT_IMPORTS]
    context = {"judging": judging, "form": form, "jobs": recent}
    return render(
        request, "judgements/manage/crowd.html", context, status=400 if request.method == "POST" else 200
    )

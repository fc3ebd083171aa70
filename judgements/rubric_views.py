"""The manager's rubric pages: every rubric (grades, keys, facets, version, whether judged), one rubric, and
a new rubric — or the next version of one — from a form held to the API's rules (`rubric_forms`).

Rubrics are shared by every manager, as in the API (`RubricViewSet`: managers and admins); raters get a
403, anonymous users the login page. A rubric is never edited in place here: saving under an existing name
makes its next version (`rubrics.create_rubric`), so judgements keep the scale they were made on.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit, urlunsplit

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods

from judgements import errors
from judgements.models import Rubric
from judgements.rubric_forms import RubricForm
from pooling.permissions import manager_required


def _safe_next(request: HttpRequest) -> str:
    """The `next` the request names if it is a URL of this site (else ''): where to go after saving."""
    url = request.POST.get("next") or request.GET.get("next") or ""
    allowed = url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return url if url and allowed else ""


def _with_rubric(url: str, rubric: Rubric) -> str:
    """`url` with `rubric=<id>` in its query: the judging set-up page then offers the new rubric chosen."""
    parts = urlsplit(url)
    query = f"{parts.query}&" if parts.query else ""
    return urlunsplit(parts._replace(query=query + urlencode({"rubric": rubric.pk})))


@require_GET
@manager_required
def rubric_list(request: HttpRequest) -> HttpResponse:
    """Every rubric, newest version of each name first, with its grades, keys and facets."""
    rubrics = Rubric.objects.prefetch_related("grades", "facets").order_by("name", "-version")
    rows = [(rubric, rubric.has_judgements()) for rubric in rubrics]  # few rubrics: one query each is fine
    return render(request, "setup/rubric_list.html", {"rubrics": rows})


@require_GET
@manager_required
def rubric_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One rubric: grades with keys and descriptions, facets, whether judged; a link to its next version."""
    rubric = get_object_or_404(Rubric.objects.prefetch_related("grades", "facets"), pk=pk)
    return render(request, "setup/rubric_detail.html", {"rubric": rubric, "judged": rubric.has_judgements()})


@require_http_methods(["GET", "POST"])
@manager_required
def rubric_create(request: HttpRequest) -> HttpResponse:
    """A new rubric (`?from=<id>`: starting from that rubric, to save its next version); then back to
    `next` (a local URL only, with the new rubric's id) or to the rubric's page."""
    next_url = _safe_next(request)
    source = request.GET.get("from", "")
    base = Rubric.objects.filter(pk=source).first() if source.isdigit() else None
    initial = RubricForm.initial_from(base) if base else None
    form = RubricForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        assert form.serializer is not None  # set by a valid form's clean
        try:
            rubric = form.serializer.save()
        except errors.JudgingError as exc:
            exc.add_to(form)
        else:
            if next_url:
                messages.success(request, f"Rubric {rubric} created: save the set-up to judge on it.")
                return redirect(_with_rubric(next_url, rubric))
            messages.success(request, f"Rubric {rubric} created.")
            return redirect("rubrics:detail", pk=rubric.pk)
    return render(request, "setup/rubric_form.html", {"form": form, "next": next_url, "base": base})

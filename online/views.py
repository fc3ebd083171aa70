"""Manager pages of the online app: click logs (what was imported, unmapped queries) and their upload, a
propensity estimate with its curve and intervention counts, and a click-label set beside the human labels
with the agreement gate and its release. Raters and outsiders get 403, another manager's log a 404; every page
reaches its log through `_log`, scoped by `ClickLog.objects.visible_to`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from judgements.releases import current_qrels
from online import jobs, propensity, relevance, services
from online.forms import ClickLogUploadForm
from online.models import ClickLabelSet, ClickLog, PropensityEstimate
from pooling import charts
from pooling.errors import Refused
from pooling.models import Job
from pooling.permissions import manager_required


def _log(request: HttpRequest, log_id: int) -> ClickLog:
    return get_object_or_404(
        ClickLog.objects.visible_to(request.user).select_related("collection", "pool"), pk=log_id
    )


def _start_job(request: HttpRequest, log: ClickLog, form: str, start: Callable[[], Job]) -> HttpResponse:
    """`start()` a job from the log's `form` ("estimate" or "derive"): the job's page next; else the log's
    page again (400) with the form as sent and the refusal beside the field it names (above the form's
    fields when it names none of them)."""
    try:
        job = start()
    except (Refused, ValueError) as exc:  # a refused option is both (online.services.OptionError)
        errors: dict[str, list[str]] = {}
        refused = exc.as_data() if isinstance(exc, Refused) else {"detail": [str(exc)]}
        for field, messages in refused.items():  # each beside its field; above the form's fields else
            shown = field if field in LOG_FORM_FIELDS[form] else "detail"
            errors.setdefault(shown, []).extend([messages] if isinstance(messages, str) else messages)
        context = {**_log_context(log), "form": form, "errors": errors, "values": request.POST}
        return render(request, "online/log_detail.html", context, status=400)
    return redirect("jobs:job-detail", job_id=job.pk)


#: The fields of the log page's two forms (templates/online/log_detail.html), where a refusal is shown.
LOG_FORM_FIELDS = {
    "estimate": {"method", "theta", "n"},
    "derive": {"estimator", "propensity", "tau", "thresholds", "replicates"},
}


def _numbers(request: HttpRequest, name: str, kind: Callable[[str], Any], what: str) -> list[Any]:
    """The form field `name` as numbers (`kind`), separated by commas or spaces; Refused naming it else."""
    try:
        return [kind(v) for v in request.POST.get(name, "").replace(",", " ").split()]
    except ValueError:
        raise Refused(f"{name}: {what}", field=name) from None


def _number(request: HttpRequest, name: str, kind: Callable[[str], Any], what: str, empty: Any) -> Any:
    """The form field `name` as one number (`kind`), `empty` when blank; Refused naming it else."""
    text = request.POST.get(name, "").strip()
    try:
        return kind(text) if text else empty
    except ValueError:
        raise Refused(f"{name}: {what}", field=name) from None


def _whole(text: str) -> int | str:
    """`text` as a whole number when it is one, else as it is: the service's check that refuses it (by the
    rule it breaks, with that rule's message) is the one to say what it should be."""
    try:
        return int(text)
    except ValueError:
        return text


def _log_context(log: ClickLog) -> dict[str, Any]:
    return {
        "log": log,
        "unmapped": log.queries.filter(topic=None)[:50],
        "propensities": log.propensities.all(),
        "label_sets": log.label_sets.all(),
        "methods": jobs.METHODS,
        "max_depth": propensity.MAX_DEPTH,  # the depth input's bound (the check is `depth_problem`)
        "estimators": relevance.ESTIMATORS,
    }


@manager_required
@require_GET
def log_list(request: HttpRequest) -> HttpResponse:
    logs = ClickLog.objects.visible_to(request.user).select_related("collection", "pool")
    return render(request, "online/log_list.html", {"logs": logs})


@require_http_methods(["GET", "POST"])
@manager_required
def log_upload(request: HttpRequest) -> HttpResponse:
    """Upload a click log into a collection the user manages: the import job of the API and the admin
    (`ClickLogUploadForm.start`, `jobs.start_click_import`), followed on its job's page; a bad upload comes
    back (400) with each error beside its field and the choices kept."""
    form = ClickLogUploadForm(request.POST or None, request.FILES or None, user=request.user)
    if request.method == "POST" and form.is_valid() and (job := form.start(user=request.user)):
        return redirect("jobs:job-detail", job_id=job.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "online/log_upload.html", {"form": form}, status=status)


@manager_required
@require_GET
def log_detail(request: HttpRequest, log_id: int) -> HttpResponse:
    return render(request, "online/log_detail.html", _log_context(_log(request, log_id)))


@manager_required
@require_POST
def estimate(request: HttpRequest, log_id: int) -> HttpResponse:
    log = _log(request, log_id)

    def start() -> Job:
        method = request.POST.get("method", "")
        params: dict[str, Any] = {}
        if method == "given":
            params["theta"] = _numbers(
                request, "theta", float, "give the propensities as numbers, position 1 first"
            )
        depth = request.POST.get("n", "").strip()
        if method == "randtop" and depth:  # blank: the deepest position logged
            params["n"] = _whole(depth)
        return jobs.start_propensity(log=log, method=method, params=params, user=request.user)

    return _start_job(request, log, "estimate", start)


@manager_required
@require_POST
def derive(request: HttpRequest, log_id: int) -> HttpResponse:
    log = _log(request, log_id)
    estimate_id = request.POST.get("propensity") or None
    chosen = (
        log.propensities.filter(pk=estimate_id).first() if estimate_id and estimate_id.isdigit() else None
    )

    def start() -> Job:
        tau = _number(request, "tau", float, "a number of at least 1, or empty for no cap", None)
        replicates = _number(request, "replicates", int, "a whole number", 0)
        return jobs.start_click_labels(
            log=log,
            estimator=request.POST.get("estimator", ""),
            propensity_estimate=chosen,
            options={"tau": tau, "thresholds": request.POST.get("thresholds", ""), "replicates": replicates},
            user=request.user,
        )

    return _start_job(request, log, "derive", start)


@manager_required
@require_GET
def propensity_detail(request: HttpRequest, estimate_id: int) -> HttpResponse:
    estimate = get_object_or_404(PropensityEstimate.objects.visible_to(request.user), pk=estimate_id)
    theta = list(estimate.theta)
    chart = charts.hbar_chart(
        [f"position {k}" for k in range(1, len(theta) + 1)],
        theta,
        title="Examination propensity θ_k / θ_1",
        decimals=3,
        vmax=1.0,
        x_label="θ",
    )
    pairs = estimate.diagnostics.get("pairs") or []
    heat = None
    if pairs:
        k = max(max(p["a"], p["b"]) for p in pairs)
        matrix: list[list[float | None]] = [[None] * k for _ in range(k)]
        for p in pairs:
            matrix[p["a"] - 1][p["b"] - 1] = matrix[p["b"] - 1][p["a"] - 1] = p["interventions"]
        names = [str(i) for i in range(1, k + 1)]
        heat = charts.heatmap(matrix, names, names, title="Interventions per position pair", decimals=0)
    return render(
        request,
        "online/propensity.html",
        {
            "estimate": estimate,
            "chart": chart,
            "heat": heat,
            "rows": list(enumerate(theta, 1)),
            "pairs": pairs,
        },
    )


def _label_set(request: HttpRequest, set_id: int) -> ClickLabelSet:
    return get_object_or_404(
        ClickLabelSet.objects.visible_to(request.user).select_related("log", "pool", "propensity", "rubric"),
        pk=set_id,
    )


#: The most labels the click-labels page lists; the API's paginated list has them all.
LABELS_SHOWN = 500


@manager_required
@require_GET
def labels_detail(request: HttpRequest, set_id: int) -> HttpResponse:
    label_set = _label_set(request, set_id)
    human = current_qrels(pool=label_set.pool) if label_set.pool else {}
    rows = []
    labels = label_set.labels.select_related("topic", "document").order_by("topic__qid", "-score")
    for label in labels[:LABELS_SHOWN]:
        grade = human.get(label.topic.qid, {}).get(label.document.docid)
        rows.append((label, None if grade is None or grade < 0 else grade))
    if len(rows) == LABELS_SHOWN and (total := label_set.labels.count()) > LABELS_SHOWN:
        everything = reverse("click-label-set-label-rows", kwargs={"pk": label_set.pk})
        messages.info(
            request,
            format_html(
                'The table lists the first {} of {} labels (by topic, highest score first); <a href="{}">all '
                "{} labels</a> are in the API's list.",
                LABELS_SHOWN, total, everything, total,
            ),
        )  # fmt: skip
    context = {
        "set": label_set,
        "rows": rows,
        "gate": label_set.agreement,
        "releases": label_set.releases.all(),
    }
    return render(request, "online/labels.html", context)


@manager_required
@require_GET
def release_file(request: HttpRequest, set_id: int, release_id: int, filename: str) -> HttpResponse:
    """One file of a click-label release of a set the user may read, as a download (404 for another's, a
    name a click-label release never holds, or a file not written)."""
    label_set = _label_set(request, set_id)
    made = get_object_or_404(label_set.releases.all(), pk=release_id)
    path = Path(settings.MEDIA_ROOT) / made.directory / filename
    # the release's own files (each with its SHA-256 in `files`) and the manifest written beside them
    if filename not in (*made.files, "manifest.json") or not made.directory or not path.is_file():
        raise Http404("this click-label release has no such file")
    content_type = "application/json" if filename.endswith(".json") else "text/plain; charset=utf-8"
    download = FileResponse(path.open("rb"), as_attachment=True, filename=filename, content_type=content_type)
    return download  # type: ignore[return-value]  # streamed: manager_required's views are typed HttpResponse


@manager_required
@require_POST
def release(request: HttpRequest, set_id: int) -> HttpResponse:
    label_set = _label_set(request, set_id)
    try:
        made = services.release_click_labels(label_set=label_set, user=request.user)
    except Refused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"click-label release {made.pk} written")  # not where: the server's
    return redirect("online:labels", set_id=label_set.pk)

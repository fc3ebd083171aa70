"""Manager pages for a pool's agreement and its qrels releases."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from judgements import aggregation, queries
from judgements.campaign_views import JudgingNotSetUp
from judgements.errors import JudgingError
from judgements.models import Judge, Judging, Release
from judgements.release_policy import DEFAULT_POLICY, read_policy
from judgements.releases import release_file_response, start_release
from pooling import charts
from pooling.models import JUDGED, Job, Pool
from pooling.permissions import managed_pool


@login_required
def agreement(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    if not Judging.objects.filter(pool=pool).exists():
        raise JudgingNotSetUp(pool.name)
    try:
        weights = queries.interval_weights(request.GET.get("weights"))
    except ValueError as exc:
        context = {"message": f"weights: {exc}", "back": request.path,
                   "advice": "The agreement page's menu names the weights it can use."}  # fmt: skip
        return render(request, "refused.html", context, status=400)
    summary = queries.cached_for_pool(pool, "agreement", queries.pool_agreement, weights=weights)
    figures: dict[str, SafeString] = {}
    matrix = summary.get("pair_matrix") or {}
    raters = [str(r) for r in matrix.get("raters", [])]
    if len(raters) >= 2:
        figures["pairs"] = charts.heatmap(
            matrix["unweighted"], raters, raters, title="Cohen's kappa (unweighted) per rater pair",
            vmin=-0.2, vmax=1.0, scale_label="κ",
        )  # fmt: skip
    labels = [str(label) for label in summary["labels"]]
    if summary.get("n_pairs"):
        figures["confusion"] = charts.heatmap(
            summary["confusion"], labels, labels, title="Confusion over all pairs (rows: first rater)",
            decimals=0, scale_label="pairs",
        )  # fmt: skip
    topics = [t for t in summary["topics"] if t.get("unweighted") is not None]
    if topics:
        figures["topics"] = charts.hbar_chart(
            [t["topic"] for t in topics[:30]], [t["unweighted"] for t in topics[:30]],
            title="Per-topic kappa, worst first", decimals=2, vmax=1.0, x_label="Cohen's κ (unweighted)",
        )  # fmt: skip
    return render(
        request,
        "judgements/campaign/agreement.html",
        {
            "pool": pool,
            "summary": summary,
            "figures": figures,
            "weights": weights or "unweighted",
            "weight_choices": queries.INTERVAL_WEIGHTS,
        },
    )


#: The fields of the release form, each of which shows its own refusal beside it.
RELEASE_FIELDS = ("policy", "unjudged", "judge")


@login_required
def releases(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    context = _releases_context(pool)
    # a refused release (`create_release`) comes back here once, its form as sent and its error beside it
    refused = request.session.pop(_refused_key(pool), None)
    if refused:
        context.update(chosen=refused["chosen"], errors=refused["errors"])
    return render(request, "judgements/campaign/releases.html", context)


def _refused_key(pool: Pool) -> str:
    return f"release-refused-{pool.pk}"


def _releases_context(pool: Pool) -> dict[str, Any]:
    return {
        "pool": pool,
        "releases": Release.objects.filter(pool=pool),
        "jobs": Job.objects.filter(kind=Job.Kind.RELEASE, params__pool=pool.pk)[:5],
        "runs": queries.unpooled_by_run(pool=pool),
        "state": pool_state_counts(pool),
        "admitted_judges": list(
            Judge.objects.filter(pool=pool, admitted=True).values_list("name", flat=True)
        ),
        "rules": list(aggregation.RULES),
        "model_policies": aggregation.MODEL_POLICIES,
        "chosen": {"policy": DEFAULT_POLICY, "unjudged": "explicit", "judge": ""},
        "errors": {},
    }


def pool_state_counts(pool: Pool) -> dict[str, int]:
    """Items judged enough / still pending right now (the release decides judged vs unrateable): the
    selected and judged items as every progress figure counts them (`pooling.stats.ITEM_COUNTS`), and of
    the others those with a judgement already, in one aggregate."""
    from django.db.models import Count, Q

    from pooling.stats import ITEM_COUNTS

    row = pool.items.aggregate(
        **ITEM_COUNTS, started=Count("id", filter=Q(~JUDGED, selected=True, num_judgements__gt=0))
    )
    counts = {"items": row["n_selected"], "complete": row["n_judged"], "started": row["started"]}
    counts["untouched"] = counts["items"] - counts["complete"] - counts["started"]
    counts["unselected"] = row["n"] - row["n_selected"]
    return counts


@login_required
@require_POST
def create_release(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    policy = request.POST.get("policy", "")  # as sent, until read
    unjudged = request.POST.get("unjudged", "explicit")
    judge = request.POST.get("judge", "").strip() or None
    try:
        policy = read_policy(policy)
        job = start_release(pool=pool, policy=policy, unjudged=unjudged, user=request.user, judge=judge)
    except JudgingError as exc:
        # the form again, as it was sent, with the refusal beside the field it is about (else above it)
        shown = exc.field in RELEASE_FIELDS
        request.session[_refused_key(pool)] = {
            "chosen": {"policy": policy[:200], "unjudged": unjudged[:20], "judge": (judge or "")[:200]},
            "errors": {exc.field: exc.message} if shown and exc.field else {"form": str(exc)},
        }
        return redirect("campaigns:releases", name=pool.name)
    messages.info(request, f"Release of {pool.name} queued.")
    return redirect("jobs:job-detail", job_id=job.pk)  # its progress, then a link to the releases


@login_required
def release_detail(request: HttpRequest, name: str, release_id: int) -> HttpResponse:
    pool = managed_pool(request, name)
    release = get_object_or_404(Release, pool=pool, pk=release_id)
    return render(request, "judgements/campaign/release.html", {"pool": pool, "release": release})


@login_required
def release_file(request: HttpRequest, name: str, release_id: int, filename: str) -> FileResponse:
    pool = managed_pool(request, name)
    release = get_object_or_404(Release, pool=pool, pk=release_id)
    return release_file_response(release, filename)

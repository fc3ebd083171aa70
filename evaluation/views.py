"""Evaluation pages for managers: a pool's runs scored on its labels, pool bias, two-stage diagnosis."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.db.models import Count, Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evaluation import services
from judgements.models import Adjudication, Judgement
from labeling import plots
from labeling.svg import cache_key, trusted_svg
from pooling.models import Pool, Run
from pooling.permissions import managed_pool


def cached(pool: Pool, kind: str, compute: Any, **params: Any) -> dict[str, Any]:
    """A report, recomputed only when a judgement, an adjudication or the runs changed."""
    stamp = Judgement.objects.filter(item__pool=pool).aggregate(m=Max("updated_at"), n=Count("id"))
    adjudicated = Adjudication.objects.filter(item__pool=pool).aggregate(m=Max("decided_at"))["m"]
    runs = Run.objects.filter(collection=pool.collection_id).aggregate(m=Max("created_at"), n=Count("id"))
    key = cache_key(f"eval:{kind}:{pool.pk}", stamp, adjudicated, runs, sorted(params.items()))
    result = cache.get(key)
    if result is None:
        result = compute(pool=pool, **params)
        cache.set(key, result, 3600)
    return result


def _policy(request: HttpRequest) -> str:
    return request.GET.get("policy", "majority").strip() or "majority"


@login_required
def report(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    gain = "exp" if request.GET.get("gain") == "exp" else "linear"
    try:
        data = cached(pool, "report", services.pool_report, policy=_policy(request), gain=gain)
    except ValueError as exc:
        return render(request, "evaluation/error.html", {"pool": pool, "error": str(exc)}, status=400)
    rows = data["runs"]
    names = [row["run"] for row in rows]
    figure = ""
    if rows:
        figure = plots.grouped_bars(
            names,
            {
                "nDCG@10, unjudged = non-relevant": [row["nonrelevant"]["ndcg_cut_10"] for row in rows],
                "nDCG@10, condensed (-J)": [row["condensed"]["ndcg_cut_10"] for row in rows],
                "judged@10": [row["judged_10"] for row in rows],
            },
            title=f"nDCG@10 ({gain} gain) under both unjudged policies, with judged@10",
            vmin=0.0,
            vmax=1.0,
        )
    segment_names = sorted({seg for segs in data["segments"].values() for seg in segs})
    segments = [
        {"run": run, "cells": [data["segments"][run].get(seg, {}) for seg in segment_names]} for run in names
    ]
    context = {"pool": pool, "data": data, "figure": trusted_svg(figure), "segment_names": segment_names,
               "segments": segments, "gain": gain, "runs": names}  # fmt: skip
    return render(request, "evaluation/report.html", context)


@login_required
def pool_bias(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    data = cached(pool, "bias", services.pool_bias, policy=_policy(request))
    figure = ""
    if data["runs"]:
        figure = plots.hbar_chart(
            [row["run"] for row in data["runs"]],
            [abs(row["change"] or 0.0) for row in data["runs"]],
            title="Loss of nDCG@10 when the run's unique documents are left unjudged",
            decimals=3,
        )
    return render(
        request, "evaluation/pool_bias.html", {"pool": pool, "data": data, "figure": trusted_svg(figure)}
    )


@login_required
def two_stage(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    runs = list(
        Run.objects.filter(collection=pool.collection_id).order_by("name").values_list("name", flat=True)
    )
    candidate = request.GET.get("candidate") or (runs[0] if runs else "")
    reranked = request.GET.get("reranked") or (runs[-1] if runs else "")
    try:
        k = max(1, min(int(request.GET.get("k", "100")), 10000))
    except ValueError:
        k = 100
    data, error, figure = None, "", ""
    if candidate and reranked:
        try:
            data = cached(pool, "two-stage", services.two_stage, candidate=candidate, reranked=reranked, k=k)
        except ValueError as exc:
            error = str(exc)
    if data and data["topics"]:
        figure = plots.scatter(
            [(t["recall"], t["ndcg_10"]) for t in data["topics"]],
            labels=[f"{t['qid']}: {t['verdict']}" for t in data["topics"]],
            title=f"Per topic: recall@{k} of {candidate} against nDCG@10 of {reranked}",
            x_label=f"recall@{k} ({candidate})",
            y_label=f"nDCG@10 ({reranked})",
            x_range=(0.0, 1.0),
            y_range=(0.0, 1.0),
        )
    context = {"pool": pool, "runs": runs, "candidate": candidate, "reranked": reranked, "k": k,
               "data": data, "error": error, "figure": trusted_svg(figure)}  # fmt: skip
    return render(request, "evaluation/two_stage.html", context, status=400 if error else 200)

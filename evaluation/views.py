"""Evaluation pages for managers: a pool's runs scored on its labels, pool bias, two-stage diagnosis."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from evaluation import metrics, noise_pool, services
from judgements.queries import cached_for_pool
from judgements.release_policy import DEFAULT_POLICY, read_policy
from pooling import charts
from pooling.charts import decimals_apart
from pooling.models import Run
from pooling.permissions import managed_pool

#: The report table's score columns: (measure, unjudged policy, header), in this one order for the headers
#: and for every row's cells, so a value can never land under another measure's name.
POLICY_SUFFIX = {"nonrelevant": "", "condensed": " (-J)"}


def report_columns(measures: list[str]) -> list[tuple[str, str, str]]:
    """Every measure under both unjudged policies, then judged@10 (one value: it is the same under both)."""
    columns = [
        (m, policy, f"{m}{suffix}")
        for m in measures
        if m != "judged_10"
        for policy, suffix in POLICY_SUFFIX.items()
    ]
    if "judged_10" in measures:
        columns.append(("judged_10", "nonrelevant", "judged@10"))
    return columns


def report_rows(data: dict[str, Any], columns: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """Each run of a report with its cells in the order of `columns`."""
    return [
        {**row, "cells": [{"measure": m, "policy": p, "value": row[p].get(m)} for m, p, _ in columns]}
        for row in data["runs"]
    ]


def _policy(request: HttpRequest) -> str:
    """The aggregation policy a page's labels are read under (`?policy=`, read by `read_policy`: absent
    or blank is the default), for every evaluation page: the report, the pool bias, the two-stage
    diagnosis and the noise floor. JudgingError (a `services.PARAMETER_ERRORS`) for one it refuses."""
    return read_policy(request.GET.get("policy"))


def _average(request: HttpRequest) -> metrics.Average:
    """The report's averaging (`?average=`, one of `services.AVERAGES`; absent or blank is `common`,
    trec_eval's default). ValueError (a `services.PARAMETER_ERRORS`) for another."""
    value = request.GET.get("average", "").strip() or "common"
    if value not in services.AVERAGES:
        raise ValueError(f"average must be one of {', '.join(services.AVERAGES)}, not {value!r}")
    return cast(metrics.Average, value)


@login_required
def report(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    gain = "exp" if request.GET.get("gain") == "exp" else "linear"
    try:
        data = cached_for_pool(
            pool,
            "report",
            services.pool_report,
            policy=_policy(request),
            gain=gain,
            judge=request.GET.get("judge", "").strip() or None,
            average=_average(request),
        )
    except services.PARAMETER_ERRORS as exc:
        return render(request, "evaluation/error.html", {"pool": pool, "error": str(exc)}, status=400)
    rows = data["runs"]
    names = [row["run"] for row in rows]
    columns = report_columns(data["measures"])
    floor = cached_for_pool(pool, "noise-floor", noise_pool.pool_noise_floor, **_noise_params(data["policy"]))
    verdicts = noise_pool.verdicts_by_pair(floor)
    # The noise floor pairs two runs over the topics both have: under -c that is the report's pairing
    # only when neither run lacks a judged topic; for the others its verdict would be of other numbers.
    lacking = {row["run"] for row in rows if row["missing_topics"]} if data["average"] == "all" else set()
    significance = [
        {**t, "verdict": verdicts.get((t["a"], t["b"]), ""), "uncompared": bool({t["a"], t["b"]} & lacking)}
        for t in data["significance"]
    ]
    complete = data["average"] == "all"
    figure = ""
    if rows:
        figure = charts.grouped_bars(
            names,
            {
                "nDCG@10, unjudged = non-relevant": [row["nonrelevant"]["ndcg_cut_10"] for row in rows],
                "nDCG@10, condensed (-J)": [row["condensed"]["ndcg_cut_10"] for row in rows],
                "judged@10": [row["judged_10"] for row in rows],
            },
            title=f"nDCG@10 ({gain} gain{', -c' if complete else ''}) under both unjudged policies, with"
            " judged@10",
            y_label="score over the judged topics",
            vmin=0.0,
            vmax=1.0,
        )
    segment_names = sorted(
        {seg for segs in data["segments"].values() for seg in segs} | set(data["segments_not_judged"])
    )
    segments = [
        {
            "run": run,
            "cells": [
                {**data["segments"][run].get(seg, {}), "missing": data["segments_missing"][run].get(seg, [])}
                for seg in segment_names
            ],
        }
        for run in names
    ]
    context = {
        "pool": pool,
        "data": data,
        "figure": figure,
        "gain": gain,
        "complete": complete,
        "runs": names,
        "columns": columns,
        "rows": report_rows(data, columns),
        "segment_names": segment_names,
        "segments": segments,
        "segment_not_judged": [data["segments_not_judged"].get(s, 0) for s in segment_names],
        "significance": significance,
        "default_policy": DEFAULT_POLICY,  # links carry ?policy= only for another
    }
    return render(request, "evaluation/report.html", context)


def _noise_params(policy: str) -> dict[str, Any]:
    """The noise floor the pages show: the API's defaults, under the page's policy."""
    return {"policy": policy}


@login_required
def noise_floor(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    try:
        data = cached_for_pool(
            pool, "noise-floor", noise_pool.pool_noise_floor, **_noise_params(_policy(request))
        )
    except services.PARAMETER_ERRORS as exc:
        return render(request, "evaluation/error.html", {"pool": pool, "error": str(exc)}, status=400)
    key = data["key_measure"]
    names = [row["run"] for row in data["runs"]]
    figures = {}
    if len(names) >= 2:
        swap = data["stability"]["swap_rate"][key]
        matrix = [
            [swap.get(f"{a}\t{b}", swap.get(f"{b}\t{a}")) if a != b else None for b in names] for a in names
        ]
        figures["swaps"] = charts.heatmap(
            matrix,
            names,
            names,
            title=f"Swap rate of each pair of runs on {data['measures_summary'][key]['label']}"
            " over random halvings of the raters",
            vmin=0.0,
            vmax=0.5,
            scale_label="share of splits that swap",
        )
        summary = data["measures_summary"]
        figures["power"] = charts.hbar_chart(
            [summary[m]["label"] for m in data["measures"]],
            [summary[m]["discriminative_power"] for m in data["measures"]],
            title="Discriminative power: share of run pairs significantly different (paired bootstrap)",
            decimals=2,
            vmax=1.0,
            x_label="share of pairs",
        )
    run_rows = [
        {"run": r["run"], "topics": r["topics"],
         "cells": [(r["means"].get(m), r["raters"].get(m)) for m in data["measures"]]}
        for r in data["runs"]
    ]  # fmt: skip
    rater_rows = [{**r, "key": r[key]} for r in data["stability"]["raters"]]
    context = {"pool": pool, "data": data, "key": key, "pairs": data["pairs"].get(key, []),
               "run_rows": run_rows, "rater_rows": rater_rows,
               "summary": [{"measure": m, **data["measures_summary"][m]} for m in data["measures"]],
               "figures": figures}  # fmt: skip
    return render(request, "evaluation/noise_floor.html", context)


@login_required
def pool_bias(request: HttpRequest, name: str) -> HttpResponse:
    pool = managed_pool(request, name)
    try:
        data = cached_for_pool(pool, "bias", services.pool_bias, policy=_policy(request))
    except services.PARAMETER_ERRORS as exc:
        return render(request, "evaluation/error.html", {"pool": pool, "error": str(exc)}, status=400)
    changes = [row["change"] for row in data["runs"]]
    decimals = decimals_apart(changes)
    figure = ""
    charted = [row for row in data["runs"] if row["change"] is not None]  # undefined: no bar, not a 0
    if charted:
        figure = charts.hbar_chart(
            [row["run"] + (" (within the noise)" if row["within_noise"] else "") for row in charted],
            [abs(row["change"]) for row in charted],
            title="Loss of nDCG@10 when the run's unique documents are left unjudged",
            x_label="nDCG@10 full − nDCG@10 left out",
            legend="loss (a longer bar: the run was helped more by the pool)",
            decimals=decimals,
        )
    context = {"pool": pool, "data": data, "figure": figure, "decimals": decimals}
    return render(request, "evaluation/pool_bias.html", context)


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
    policy = request.GET.get("policy", "")  # as asked, for the form, until read
    try:
        policy = _policy(request)
        if candidate and reranked:
            data = cached_for_pool(
                pool, "two-stage", services.two_stage, candidate=candidate, reranked=reranked, k=k,
                policy=policy,
            )  # fmt: skip
    except services.PARAMETER_ERRORS as exc:
        error = str(exc)
    if data and data["topics"]:
        figure = charts.scatter(
            [(t["recall"], t["ndcg_10"]) for t in data["topics"]],
            labels=[f"{t['qid']}: {t['verdict']}" for t in data["topics"]],
            kinds=[t["verdict"] for t in data["topics"]],
            title=f"Per topic: recall@{k} of {candidate} against nDCG@10 of {reranked}",
            x_label=f"recall@{k} ({candidate})",
            y_label=f"nDCG@10 ({reranked})",
            x_range=(0.0, 1.0),
            y_range=(0.0, 1.0),
        )
    context = {"pool": pool, "runs": runs, "candidate": candidate, "reranked": reranked, "k": k,
               "policy": policy, "data": data, "error": error, "figure": figure,
               "default_policy": DEFAULT_POLICY}  # fmt: skip
    return render(request, "evaluation/two_stage.html", context, status=400 if error else 200)

"""The gate a model judge passes before any of its labels may enter a release.

The judge is measured against the people's labels of the same pool, on the items it did not train on (a
learned judge's labels of people-judged items are all cross-validated, `judgements.learned`; an external
judge never trained on the pool): Cohen's kappa unweighted and quadratic, Krippendorff's alpha (ordinal),
the confusion matrix — all from `judgements.agreement`, over the rubric's full label set — and Kendall's
tau between the rankings of the pool's runs by nDCG@10 on its labels and on the people's labels of the
same items (`evaluation.metrics`, `pooling.strategies.kendall_tau`).

It is admitted when its unweighted kappa is at least the pool's threshold: `Judging.gate_kappa` if set,
else the people's own agreement with each other (the unweighted kappa over every pair of human
judgements of one item), measured on at least `MIN_ITEMS` items. The verdict, the figures and a sentence
saying why are stored on the judge (`Judge.gate`, `Judge.admitted`); this module lives in the evaluation
app because the tau needs the metrics.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from evaluation import metrics
from evaluation.services import run_as_dict
from judgements import agreement
from judgements.judges import human_grades, model_grades
from judgements.models import Judge, Judging
from judgements.queries import agreement_records
from pooling.models import PoolItem, Run
from pooling.strategies import kendall_tau

MIN_ITEMS = 20
GATE_MEASURE = "ndcg_cut_10"


def _figure(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 6)


def _run_ranking_tau(
    *, judge: Judge, items: list[int], people: dict[int, int], model: dict[int, int]
) -> dict[str, Any]:
    """Each contributing run's nDCG@10 on the people's and on the judge's labels of `items`, and τ."""
    pool = judge.pool
    rows = PoolItem.objects.filter(pk__in=items).values_list("pk", "topic__qid", "document__docid")
    keys = {pk: (qid, docid) for pk, qid, docid in rows}
    human_qrels: dict[str, dict[str, int]] = {}
    model_qrels: dict[str, dict[str, int]] = {}
    for pk in items:
        qid, docid = keys[pk]
        human_qrels.setdefault(qid, {})[docid] = people[pk]
        model_qrels.setdefault(qid, {})[docid] = model[pk]
    on_people: dict[str, float] = {}
    on_model: dict[str, float] = {}
    for run in Run.objects.filter(pk__in=pool.pool_runs.values("run_id")).order_by("name"):
        run_dict = run_as_dict(run=run, qids=human_qrels)
        if not run_dict:
            continue
        for qrels, out in ((human_qrels, on_people), (model_qrels, on_model)):
            result = metrics.evaluate(
                qrels, run_dict, [GATE_MEASURE], relevance_level=pool.relevance_level, average="all"
            )
            out[run.name] = float(result.means[GATE_MEASURE])
    tau = kendall_tau(on_people, on_model) if len(on_people) >= 2 else math.nan
    return {
        "measure": GATE_MEASURE,
        "runs": {
            name: {"people": _figure(on_people[name]), "judge": _figure(on_model[name])} for name in on_people
        },
        "kendall_tau": _figure(tau),
    }


def _reason(figures: dict[str, Any]) -> tuple[bool, str]:
    n, kappa, threshold = figures["items"], figures["kappa"], figures["threshold"]
    source = (
        "the pool's gate κ"
        if figures["threshold_source"] == "pool"
        else "the raters' own agreement with each other"
    )
    if n < MIN_ITEMS:
        return False, (
            f"Refused: only {n} items have both a human label and a label of this judge; "
            f"at least {MIN_ITEMS} are needed to measure it."
        )
    if threshold is None:
        return False, (
            "Refused: the threshold is the raters' own agreement with each other, and no item has two human "
            "grades to measure it. Double-judge some items, or set the pool's gate κ."
        )
    if kappa is None:
        return False, f"Refused: κ is undefined on its {n} items (every label on one grade)."
    where = f"on {n} items it did not train on"
    if kappa >= threshold:
        return True, (
            f"Admitted: its κ against the human labels is {kappa:.3f} {where}, "
            f"at least the threshold {threshold:.3f} ({source})."
        )
    return False, (
        f"Refused: its κ against the human labels is {kappa:.3f} {where}, "
        f"below the threshold {threshold:.3f} ({source})."
    )


def measure_gate(*, judge: Judge) -> dict[str, Any]:
    """Measure `judge` against the people's labels of its pool, store the figures and the verdict on it,
    and return the figures (module docstring)."""
    pool = judge.pool
    judging = Judging.objects.select_related("rubric").get(pool=pool)
    labels = judging.rubric.labels
    people = human_grades(pool=pool)
    model = model_grades(judge=judge)
    items = sorted(set(people) & set(model))
    a = np.array([people[pk] for pk in items], dtype=np.int64)
    b = np.array([model[pk] for pk in items], dtype=np.int64)
    human_kappa = agreement.overall_kappa(agreement_records(pool=pool), labels=labels)
    threshold = judging.gate_kappa if judging.gate_kappa is not None else human_kappa
    figures: dict[str, Any] = {
        "items": len(items),
        "labels": labels,
        "kappa": _figure(agreement.cohen_kappa(a, b, labels=labels)) if items else None,
        "kappa_quadratic": _figure(agreement.cohen_kappa(a, b, labels=labels, weights="quadratic"))
        if items
        else None,
        "alpha_ordinal": _figure(
            agreement.krippendorff_alpha(
                np.vstack([a, b]).astype(float), level="ordinal", value_domain=labels
            )
        )
        if items
        else None,
        "confusion": agreement.confusion_matrix(a, b, labels=labels).tolist(),
        "confusion_rows": "human",
        "human_kappa": _figure(human_kappa),
        "threshold": _figure(threshold),
        "threshold_source": "pool" if judging.gate_kappa is not None else "raters",
        "ranking": _run_ranking_tau(judge=judge, items=items, people=people, model=model)
        if items
        else {"measure": GATE_MEASURE, "runs": {}, "kendall_tau": None},
        "measured_at": timezone.now().isoformat(),
    }
    admitted, reason = _reason(figures)
    figures["admitted"], figures["reason"] = admitted, reason
    with transaction.atomic():
        judge.gate, judge.admitted = figures, admitted
        judge.save(update_fields=["gate", "admitted"])
    return figures

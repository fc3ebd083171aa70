"""The offline–online tracker: ranking changes with their offline delta (scored by the evaluation app on
a release's qrels) and their online delta (entered, imported, or an interleaving result), and the
correlation across them (`online.tracker` holds the statistics).

The offline delta of an experiment is mean(treatment) − mean(baseline) of one metric over the release's
judged topics that both runs answer (trec_eval's semantics through `evaluation.metrics.evaluate`, topics
nobody judged left out, unjudged documents non-relevant as in the release's qrels.txt). An interleaving
result's online delta is the treatment's preference: Δ_AB when the treatment is run A, −Δ_AB when it is
run B, so a positive online delta always favours the treatment.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from evaluation import metrics
from evaluation.services import run_as_dict
from judgements.models import Release
from online import experiments, tracker
from online.experiment_models import InterleavingExperiment, InterleavingResult, TrackedExperiment
from pooling.formats import FormatError, client_name, open_path
from pooling.models import Collection, Run, column_problems
from pooling.trec_io import read_qrels

INTERLEAVING_METRIC = "interleaving Δ"


@dataclass(frozen=True)
class OfflineDelta:
    metric: str
    baseline: float
    treatment: float
    delta: float
    topics: int
    judged_10: float  # judged@10 of the less judged run over the same topics


def offline_delta(*, release: Release, baseline: Run, treatment: Run, metric: str) -> OfflineDelta:
    """`metric` of both runs on the release's qrels.txt, over the judged topics both runs answer, unjudged
    documents counted as non-relevant (trec_eval's default), with judged@10 beside it: the share of each
    run's top 10 the release judged, the less judged run's (a delta between runs the release barely judged
    says more about the pool than about the runs)."""
    try:
        plan = metrics.plan_measures([metric])
    except ValueError as exc:
        raise ValidationError({"metric": [str(exc)]}) from None
    if len(plan) != 1:
        raise ValidationError({"metric": ["name one measure (such as ndcg_cut_10)"]})
    # the delta is of means over topics: a measure trec_eval does not average over topics (runid, relstring,
    # num_q, the sums num_ret..., the geometric means gm_map, gm_bpref) would be another number under its name
    if plan[0].family.kind in ("meta", "text") or metrics.summary_of(plan[0].name) != "mean":
        raise ValidationError(
            {"metric": [f"{plan[0].name} is not a mean over topics: name one that is (such as ndcg_cut_10)"]}
        )
    names = [plan[0].name]
    path = Path(settings.MEDIA_ROOT) / release.directory / "qrels.txt"
    try:
        with open_path(path, client_name(path)) as named:  # its errors name qrels.txt, not the path
            qrels = read_qrels(named)
    except FormatError as exc:
        raise ValidationError({"release": [f"release {release.pk} has no readable qrels: {exc}"]}) from None
    qids = set(qrels.topic_ids)
    level = release.pool.relevance_level
    per_topic, judged = [], []
    for run in (baseline, treatment):
        with warnings.catch_warnings():  # the topics a run lacks: the delta is over the common ones
            warnings.simplefilter("ignore", metrics.MissingTopicsWarning)
            result = metrics.evaluate(
                qrels,
                run_as_dict(run=run, qids=qids),
                [*names, "judged_10"],
                relevance_level=level,
                skip_unjudged_topics=True,
            )
        per_topic.append(result.topic_values(names[0]))
        judged.append(result.topic_values("judged_10"))
    common = sorted(set(per_topic[0]) & set(per_topic[1]))
    if not common:
        raise ValidationError({"treatment": ["the two runs answer none of the release's judged topics"]})
    base = sum(per_topic[0][q] for q in common) / len(common)
    treat = sum(per_topic[1][q] for q in common) / len(common)
    judged_10 = min(sum(values[q] for q in common) / len(common) for values in judged)
    return OfflineDelta(names[0], base, treat, treat - base, len(common), judged_10)


def _run(collection: Collection, name: str, field: str) -> Run:
    run = Run.objects.filter(collection=collection, name=name).first()
    if run is None:
        raise ValidationError({field: [f"collection {collection.name!r} has no run named {name!r}"]})
    return run


def interleaving_delta(result: InterleavingResult, baseline: Run, treatment: Run) -> float:
    """The treatment's preference in an interleaving result (see the module): ±Δ_AB. Refused unless the
    result's experiment interleaves exactly the baseline and the treatment: a result of the treatment
    against another run is the online delta of another change."""
    experiment = result.experiment
    if not compares(experiment, baseline.pk, treatment.pk):
        raise ValidationError(
            {
                "interleaving": [
                    f"the interleaving experiment {experiment.name!r} compares {experiment.run_a.name!r} "
                    f"with {experiment.run_b.name!r}, not the baseline {baseline.name!r} with the treatment "
                    f"{treatment.name!r}: its preference is the online delta of another change"
                ]
            }
        )
    if result.delta_ab is None:
        raise ValidationError({"interleaving": ["the interleaving result has no clicked impression"]})
    return result.delta_ab if experiment.run_a_id == treatment.pk else -result.delta_ab


def compares(experiment: InterleavingExperiment, baseline_id: int | None, treatment_id: int | None) -> bool:
    """Whether the interleaving experiment's two runs are exactly the baseline and the treatment: the one
    rule of which experiment's result may be a tracked experiment's online delta (`interleaving_delta`
    refuses the others; the tracker's forms list only these, comparing the runs in their templates)."""
    return {experiment.run_a_id, experiment.run_b_id} == {baseline_id, treatment_id}


def _finite(value: float | None, field: str) -> float | None:
    if value is not None and not math.isfinite(value):
        raise ValidationError({field: ["must be a finite number"]})
    return value


def track_experiment(
    *,
    collection: Collection,
    name: str,
    release: Release,
    metric: str,
    baseline: str,
    treatment: str,
    online_metric: str = "",
    online_delta: float | None = None,
    interleaving: InterleavingResult | None = None,
    description: str = "",
    created_by: User | None = None,
) -> TrackedExperiment:
    """A new tracked experiment: its offline delta is computed now (`offline_delta`); its online delta is
    the value given, the interleaving result's, or left to fill in later (`set_online_delta`)."""
    name = name.strip()  # as the API's field trims it, and as `import_online_deltas` reads names
    # the model field's own rules (not blank, its length), for every caller
    if messages := column_problems(TrackedExperiment, "name", name):
        raise ValidationError({"name": messages})
    if release.pool.collection_id != collection.pk:
        raise ValidationError({"release": [f"release {release.pk} is not of collection {collection.name!r}"]})
    if TrackedExperiment.objects.filter(collection=collection, name=name).exists():
        raise ValidationError({"name": [f"an experiment named {name!r} exists already in this collection"]})
    base, treat = _run(collection, baseline, "baseline"), _run(collection, treatment, "treatment")
    if base.pk == treat.pk:
        raise ValidationError({"treatment": ["the treatment must differ from the baseline"]})
    offline = offline_delta(release=release, baseline=base, treatment=treat, metric=metric)
    experiment = TrackedExperiment(
        collection=collection,
        name=name,
        description=description,
        release=release,
        metric=offline.metric,
        baseline=base,
        treatment=treat,
        baseline_name=base.name,
        treatment_name=treat.name,
        offline_baseline=offline.baseline,
        offline_treatment=offline.treatment,
        offline_delta=offline.delta,
        offline_topics=offline.topics,
        offline_judged_10=offline.judged_10,
        created_by=created_by,
    )
    _apply_online(experiment, online_metric, online_delta, interleaving)
    experiment.save()
    return experiment


def _apply_online(
    experiment: TrackedExperiment,
    online_metric: str,
    online_delta: float | None,
    interleaving: InterleavingResult | None,
) -> None:
    if interleaving is not None and online_delta is not None:
        raise ValidationError({"online_delta": ["give an online delta or an interleaving result, not both"]})
    if interleaving is not None:
        if experiment.baseline is None or experiment.treatment is None:
            raise ValidationError({"interleaving": ["the baseline or the treatment run no longer exists"]})
        experiment.online_delta = interleaving_delta(interleaving, experiment.baseline, experiment.treatment)
        experiment.online_metric = INTERLEAVING_METRIC
        experiment.interleaving = interleaving
        return
    if online_delta is not None and not online_metric.strip():
        raise ValidationError({"online_metric": ["name the online metric (such as ctr or conversion)"]})
    experiment.online_delta = _finite(online_delta, "online_delta")
    experiment.online_metric = online_metric.strip()
    experiment.interleaving = None


def set_online_delta(
    *,
    experiment: TrackedExperiment,
    online_metric: str = "",
    online_delta: float | None = None,
    interleaving: InterleavingResult | None = None,
) -> TrackedExperiment:
    """Enter (or replace) an experiment's online delta: a value of `online_metric`, or an interleaving
    result's preference for the treatment."""
    _apply_online(experiment, online_metric, online_delta, interleaving)
    experiment.save(update_fields=["online_metric", "online_delta", "interleaving"])
    return experiment


@dataclass(frozen=True)
class DeltasImported:
    """What importing a file of online deltas did (`import_online_deltas`): the number of tracked
    experiments it updated."""

    updated: int


def import_online_deltas(
    *, collection: Collection, path: Path | str, display: str | None = None, user: Any = None
) -> int:
    """Online deltas from a tab-separated file, `name<TAB>online_metric<TAB>online_delta` per line (blank
    lines and `#` comments skipped), onto the collection's tracked experiments by name. One transaction:
    a bad line stores nothing; errors read `FILE:LINE: what is wrong`. Returns the experiments updated."""
    shown = display or str(path)
    errors: list[str] = []
    updates: list[tuple[TrackedExperiment, str, float]] = []
    experiments = TrackedExperiment.objects.filter(collection=collection)
    if user is not None:  # only those the user may change (the command, for an admin, changes any)
        experiments = experiments.filter(pk__in=TrackedExperiment.objects.managed_by(user).values("pk"))
    known = {e.name: e for e in experiments}
    seen: dict[str, int] = {}
    number = 0
    if not Path(path).is_file():
        raise ValidationError(
            {"file": [f"{shown}: {'not a file' if Path(path).exists() else 'file not found'}"]}
        )
    with open(path, encoding="utf-8", errors="strict") as handle:
        try:
            for number, line in enumerate(handle, 1):
                text = line.rstrip("\r\n")
                if not text.strip() or text.lstrip().startswith("#"):
                    continue
                fields = text.split("\t")
                if len(fields) != 3:
                    errors.append(f"{shown}:{number}: expected 3 tab-separated fields, found {len(fields)}")
                    continue
                name, metric, raw = (f.strip() for f in fields)
                if name not in known:
                    errors.append(f"{shown}:{number}: no tracked experiment named {name!r}")
                elif name in seen:
                    errors.append(f"{shown}:{number}: {name!r} again (first at line {seen[name]})")
                if not metric:
                    errors.append(f"{shown}:{number}: the online metric is empty")
                try:
                    value = float(raw)
                except ValueError:
                    errors.append(f"{shown}:{number}: online delta {raw!r} is not a number")
                    continue
                if not math.isfinite(value):
                    errors.append(f"{shown}:{number}: online delta {raw!r} is not a finite number")
                    continue
                seen.setdefault(name, number)
                if name in known:
                    updates.append((known[name], metric, value))
        except UnicodeDecodeError:
            errors.append(f"{shown}:{number + 1}: not valid UTF-8")
    if not errors and not updates:
        errors.append(f"{shown}: no online deltas found")
    if errors:
        raise ValidationError({"file": errors})
    with transaction.atomic():
        for experiment, metric, value in updates:
            set_online_delta(experiment=experiment, online_metric=metric, online_delta=value)
    return len(updates)


@dataclass(frozen=True)
class TrackedResult:
    """The interleaving result a tracked experiment's online delta was taken from: a snapshot, kept when
    its experiment computes newer ones, so the answer says which it is and whether it is still the latest
    (re-enter the delta from the experiment's name to take the latest)."""

    id: int
    experiment: str  # the interleaving experiment's name
    computed_at: str  # ISO 8601
    source: str
    latest: int  # the id of the experiment's latest result
    newer: bool  # the experiment has a newer result than this one


@dataclass(frozen=True)
class TrackedBody:
    """A tracked ranking change as the API and the pages show it: its offline delta and (once entered) its
    online one."""

    id: int
    collection: str
    name: str
    description: str
    release: int | None
    metric: str
    baseline: str
    treatment: str
    offline_baseline: float
    offline_treatment: float
    offline_delta: float
    offline_topics: int
    offline_judged_10: float | None
    online_metric: str
    online_delta: float | None
    interleaving: int | None  # the interleaving result's id
    interleaving_result: TrackedResult | None  # which result the online delta is, and whether a newer exists
    created_at: str  # ISO 8601


@dataclass(frozen=True)
class CorrelationGroup(tracker.Correlation):
    """The experiments of one (offline metric, online metric) with an online delta, and how well one delta
    predicts the other (`tracker.Correlation`'s statistics)."""

    metric: str
    online_metric: str
    experiments: list[TrackedBody]


def correlation_groups(experiments: Iterable[TrackedExperiment]) -> list[dict[str, Any]]:
    """The experiments with an online delta, one group per (offline metric, online metric) — deltas of
    different metrics are on different scales and one correlation over them would mean nothing — each
    with `tracker.correlate`'s statistics and verdict (`CorrelationGroup`)."""
    groups: dict[tuple[str, str], list[TrackedExperiment]] = {}
    for experiment in experiments:
        if experiment.online_delta is not None:
            groups.setdefault((experiment.metric, experiment.online_metric), []).append(experiment)
    result = []
    for (metric, online_metric), members in sorted(groups.items()):
        stats = tracker.correlate(
            [e.offline_delta for e in members], [e.online_delta or 0.0 for e in members]
        )
        group = CorrelationGroup(
            metric=metric,
            online_metric=online_metric,
            experiments=[tracked_body(e) for e in members],
            **{f.name: getattr(stats, f.name) for f in fields(stats)},
        )
        result.append(asdict(group))
    return result


def experiment_dict(experiment: TrackedExperiment) -> dict[str, Any]:
    return asdict(tracked_body(experiment))


def tracked_body(experiment: TrackedExperiment) -> TrackedBody:
    return TrackedBody(
        id=experiment.pk,
        collection=experiment.collection.name,
        name=experiment.name,
        description=experiment.description,
        release=experiment.release_id,
        metric=experiment.metric,
        baseline=experiment.baseline_name,
        treatment=experiment.treatment_name,
        offline_baseline=experiment.offline_baseline,
        offline_treatment=experiment.offline_treatment,
        offline_delta=experiment.offline_delta,
        offline_topics=experiment.offline_topics,
        offline_judged_10=experiment.offline_judged_10,
        online_metric=experiment.online_metric,
        online_delta=experiment.online_delta,
        interleaving=experiment.interleaving_id,
        interleaving_result=tracked_result(experiment),
        created_at=experiment.created_at.isoformat(),
    )


_UNREAD = object()


def tracked_result(experiment: TrackedExperiment) -> TrackedResult | None:
    """Which interleaving result `experiment`'s online delta is (None for an entered or imported one), with
    its experiment's latest result beside it."""
    result = experiment.interleaving
    if result is None:
        return None
    # read with the experiment (`TrackedExperimentQuerySet.for_answers`), or else here
    read = getattr(experiment, "latest_result_id", _UNREAD)
    latest = (
        result.experiment.results.values_list("pk", flat=True).first()
        if read is _UNREAD
        else cast(int | None, read)
    )
    return TrackedResult(
        id=result.pk,
        experiment=result.experiment.name,
        computed_at=result.computed_at.isoformat(),
        source=experiments.result_source(result),
        latest=latest if latest is not None else result.pk,
        newer=latest is not None and latest != result.pk,
    )

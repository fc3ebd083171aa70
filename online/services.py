"""Services of the online app for propensities and click labels; every caller (pages, API, commands,
tasks, admin, demo) calls these. Importing a log is `online.clicklogs.import_click_log`.

- `estimate_propensity`: θ for a log by a method of `online.propensity` (or given), stored.
- `derive_click_labels`: per (topic, document) scores by an estimator of `online.relevance`, their
  session-bootstrap intervals (θ re-estimated in each replicate), grades by the user's thresholds, and
  at once the agreement gate: Cohen's κ and Krippendorff's α of the click grades against the human
  consensus of the log's pool (`judgements.releases.current_qrels`, statistics from
  `judgements.agreement`).
- `release_click_labels`: an immutable release of a label set, its own files, separate from every human
  release, refused until the agreement has been computed; the manifest carries it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from judgements import agreement
from judgements.models import Judging, Rubric
from online import archive, propensity, relevance
from online.clicklogs import insert_rows
from online.models import ClickCount, ClickLabel, ClickLabelSet, ClickLog, ClickRelease, PropensityEstimate
from pooling.errors import Refused


def _user(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def log_counts(log: ClickLog) -> tuple[propensity.Counts, list[tuple[int, int]]]:
    """The log's cells as `Counts` (pair = index into the returned (topic pk, document pk) list)."""
    rows = ClickCount.objects.filter(log=log).values_list(
        "topic_id", "document_id", "position", "logger", "impressions", "clicks"
    )
    pairs: dict[tuple[int, int], int] = {}
    topics: dict[int, int] = {}
    loggers: dict[str, int] = {}
    cols: list[list[Any]] = [[], [], [], [], [], []]
    for topic, doc, position, logger, imp, clk in rows.iterator(chunk_size=10000):
        cols[0].append(pairs.setdefault((topic, doc), len(pairs)))
        cols[1].append(topics.setdefault(topic, len(topics)))
        cols[2].append(position)
        cols[3].append(loggers.setdefault(logger, len(loggers)))
        cols[4].append(imp)
        cols[5].append(clk)
    counts = propensity.Counts.from_cells(cols[0], cols[2], cols[4], cols[5], query=cols[1], logger=cols[3])
    return counts, list(pairs)


def estimate_propensity(
    *, log: ClickLog, method: str, name: str = "", params: dict[str, Any] | None = None, user: Any = None
) -> PropensityEstimate:
    """Estimate θ for `log` by `method` (given, randtop, swap, em, harvest) and store it. Refused (nothing
    stored) with the reason when θ cannot be estimated or a given θ is outside (0, 1]."""
    params = dict(params or {})
    try:
        counts = None if method == "given" else log_counts(log)[0]
        result = propensity.estimate(method, counts, **params)
    except propensity.PropensityError as exc:
        raise Refused(str(exc)) from None
    except KeyError as exc:
        raise Refused(f"method {method} needs the parameter {exc.args[0]!r}") from None
    theta = [None if not np.isfinite(v) else round(float(v), 6) for v in result.theta]
    return PropensityEstimate.objects.create(
        log=log,
        collection_id=log.collection_id,
        name=name or f"{log.name}-{method}",
        method=method,
        theta=theta,
        params=params,
        diagnostics=result.diagnostics,
        warnings=result.warnings,
        created_by=_user(user),
    )


def pool_rubric(log: ClickLog) -> Rubric | None:
    judging = (
        Judging.objects.select_related("rubric").filter(pool=log.pool_id).first() if log.pool_id else None
    )
    return judging.rubric if judging else None


MAX_REPLICATES = 2000  # bootstrap replicates one derivation may ask for
#: The most impressions a (topic, document) may be asked to have before it is labelled: the column's bound.
MAX_MIN_IMPRESSIONS = 2**31 - 1


class OptionError(Refused, ValueError):
    """Options of a click-label derivation are refused: `problems` maps each option refused to why, in the
    order the options are checked; `field` names the first (where a single-field refusal is shown), and
    the API's 400 and the page put each message on its own field. A ValueError too, as the derivation's
    other bad arguments are."""

    def __init__(self, field: str, message: str, *, problems: dict[str, str] | None = None) -> None:
        self.problems = problems or {field: message}
        super().__init__("; ".join(self.problems.values()), field=field)

    @classmethod
    def of(cls, problems: dict[str, str]) -> OptionError:
        field, message = next(iter(problems.items()))
        return cls(field, message, problems=problems)

    def as_data(self) -> dict[str, Any]:
        return {field: [message] for field, message in self.problems.items()}


def check_click_label_options(
    *,
    log: ClickLog,
    estimator: str,
    propensity_estimate: PropensityEstimate | None,
    thresholds: Any,
    replicates: int = 0,
    min_impressions: int = 1,
    tau: float | None = None,
) -> tuple[Rubric | None, list[list[float]] | None]:
    """What deriving click labels for `log` first checks (and starting its job refuses at once): a known
    estimator, a propensity estimate of the log's collection for ips and ratio, 0 to MAX_REPLICATES
    bootstrap replicates, 1 to MAX_MIN_IMPRESSIONS impressions, a τ of `relevance.check_tau`, and
    thresholds only over the rubric of the log's pool. Returns that rubric and the parsed thresholds (both
    None without thresholds); an OptionError names every bad argument (`OptionError.problems`), so that
    one answer says all there is to mend."""
    problems: dict[str, str] = {}
    if not 0 <= replicates <= MAX_REPLICATES:
        problems["replicates"] = f"replicates must be between 0 and {MAX_REPLICATES}"
    if not 1 <= min_impressions <= MAX_MIN_IMPRESSIONS:
        problems["min_impressions"] = f"min_impressions must be between 1 and {MAX_MIN_IMPRESSIONS:,}"
    try:
        relevance.check_tau(tau)
    except ValueError as exc:
        problems["tau"] = str(exc)
    if estimator not in relevance.ESTIMATORS:
        problems["estimator"] = f"unknown estimator {estimator!r}; expected ips, ratio or coec"
    elif estimator != "coec" and propensity_estimate is None:
        problems["propensity"] = f"the {estimator} estimator needs a propensity estimate"
    if propensity_estimate is not None and propensity_estimate.collection_id != log.collection_id:
        problems["propensity"] = "the propensity estimate belongs to another collection"
    rubric = parsed = None
    if thresholds not in (None, "", []):
        rubric = pool_rubric(log)
        if rubric is None:
            problems["thresholds"] = "thresholds map to a rubric's grades: the log needs a pool with a rubric"
        else:
            try:
                parsed = relevance.parse_thresholds(thresholds, rubric.labels)
            except ValueError as exc:
                problems["thresholds"] = str(exc)
    if problems:
        raise OptionError.of(problems)
    return rubric, parsed


def derive_click_labels(
    *,
    log: ClickLog,
    estimator: str,
    propensity_estimate: PropensityEstimate | None = None,
    tau: float | None = None,
    thresholds: Any = None,
    name: str = "",
    min_impressions: int = 1,
    replicates: int = 0,
    level: float = 0.95,
    seed: int = 0,
    user: Any = None,
    progress: Any = None,
) -> ClickLabelSet:
    """Score every (topic, document) of `log` with `estimator` (ips, ratio, coec), with bootstrap
    intervals over sessions when `replicates` > 0 (θ re-estimated in each replicate by the estimate's own
    method; a given θ stays fixed), grades by `thresholds` over the log's pool rubric, and the agreement
    with the human judgements of the pool. Refused (nothing stored) on a bad argument."""
    report = progress or (lambda fraction, message: None)
    try:
        rubric, parsed = check_click_label_options(
            log=log,
            estimator=estimator,
            propensity_estimate=propensity_estimate,
            thresholds=thresholds,
            replicates=replicates,
            min_impressions=min_impressions,
            tau=tau,
        )
        counts, pairs = log_counts(log)
        if not len(counts.pair):
            raise ValueError("the log has no impressions of known topics and documents")
        theta = propensity_estimate.theta if propensity_estimate else None
        theta_arr = [float("nan") if v is None else v for v in theta] if theta else None
        scored = relevance.score(counts, theta_arr, estimator, tau)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    report(0.2, "scored")
    warnings: list[str] = []
    if scored.left_out:
        warnings.append(f"{scored.left_out:,} impressions at positions without a propensity were left out")
    intervals: dict[tuple[int, int], tuple[float, float]] = {}
    if replicates:
        if not log.archive_dir:
            warnings.append("a pre-aggregated log has no sessions: no bootstrap intervals")
        else:
            intervals, more = _intervals(log, propensity_estimate, estimator, tau, replicates, level, seed)
            warnings.extend(more)
    report(0.8, "storing labels")
    with transaction.atomic():
        label_set = ClickLabelSet.objects.create(
            log=log,
            propensity=propensity_estimate,
            name=name or f"{log.name}-{estimator}",
            estimator=estimator,
            tau=tau,
            clipped_share=scored.clipped_share,
            min_impressions=min_impressions,
            rubric=rubric if parsed else None,
            thresholds=parsed or [],
            pool=log.pool,
            bootstrap={"replicates": replicates, "level": level, "seed": seed} if replicates else {},
            warnings=warnings,
            created_by=_user(user),
        )
        grades = relevance.grade(scored.score, parsed, min(rubric.labels)) if parsed and rubric else None
        unseen = relevance.seen_too_little(scored, parsed, level) if grades is not None and parsed else None
        # a pair never clicked: its interval reaches at least its score's Poisson bound (the bootstrap of
        # sessions without a click gives 0 to 0)
        assert scored.expected is not None  # every estimator sets it
        upper = relevance.unclicked_upper(scored.expected, level).tolist()
        rows = []
        impressions, clicks, scores = (
            scored.impressions.tolist(),
            scored.clicks.tolist(),
            scored.score.tolist(),
        )
        grade_of = grades.tolist() if grades is not None else None
        for i, pair in enumerate(scored.pair.tolist()):
            if impressions[i] < min_impressions:
                continue
            topic, doc = pairs[pair]
            low, high = intervals.get((topic, doc), (None, None))
            if clicks[i] == 0 and high is not None and upper[i] > high:
                high = upper[i] if math.isfinite(upper[i]) else None
            grade = int(grade_of[i]) if grade_of is not None else None
            if unseen is not None and unseen[i]:
                grade = None  # not seen enough to be called irrelevant
            rows.append(
                (label_set.pk, topic, doc, int(impressions[i]), int(clicks[i]), scores[i], low, high, grade)
            )
        columns = [
            "label_set_id",
            "topic_id",
            "document_id",
            "impressions",
            "clicks",
            "score",
            "low",
            "high",
            "grade",
        ]
        insert_rows(ClickLabel, columns, rows)
        if parsed and log.pool_id:
            label_set.agreement = agreement_with_humans(label_set)
            label_set.save(update_fields=["agreement"])
    report(1.0, f"{len(rows)} labels")
    return label_set


def _intervals(
    log: ClickLog,
    estimate: PropensityEstimate | None,
    estimator: str,
    tau: float | None,
    replicates: int,
    level: float,
    seed: int,
) -> tuple[dict[tuple[int, int], tuple[float, float]], list[str]]:
    meta = archive.meta(log.archive_dir)
    n_docs = len(meta["doc_pks"])
    if estimate is None:

        def theta_of(counts: propensity.Counts) -> Any:
            return None
    elif estimate.method == "given":
        fixed = [float("nan") if v is None else v for v in estimate.theta]

        def theta_of(counts: propensity.Counts) -> Any:
            return fixed
    else:

        def theta_of(counts: propensity.Counts) -> Any:
            try:
                return propensity.estimate(estimate.method, counts, **estimate.params).theta
            except propensity.PropensityError as exc:
                raise ValueError(str(exc)) from None

    pairs, low, high, warnings = relevance.bootstrap(
        lambda: archive.chunks(log.archive_dir),
        n_docs=n_docs,
        n_loggers=max(len(meta["loggers"]), 1),
        theta_of=theta_of,
        estimator=estimator,
        tau=tau,
        replicates=replicates,
        level=level,
        seed=seed,
    )
    topic_pks, doc_pks = meta["topic_pks"], meta["doc_pks"]
    out = {}
    for pair, lo, hi in zip(pairs, low, high, strict=True):
        if np.isfinite(lo) and np.isfinite(hi):
            out[(int(topic_pks[pair // n_docs]), int(doc_pks[pair % n_docs]))] = (float(lo), float(hi))
    return out, warnings


def agreement_with_humans(label_set: ClickLabelSet) -> dict[str, Any]:
    """κ (unweighted and linear) and Krippendorff's α (ordinal) of the set's click grades against the
    human consensus (majority policy) of its pool, over the (topic, document) pairs both have graded."""
    from judgements.releases import current_qrels

    assert label_set.pool is not None and label_set.rubric is not None
    labels = label_set.rubric.labels
    human = current_qrels(pool=label_set.pool, policy="majority")
    a: list[int] = []
    b: list[int] = []
    rows = label_set.labels.exclude(grade=None).values_list("topic__qid", "document__docid", "grade")
    for qid, docid, grade in rows.iterator():
        value = human.get(qid, {}).get(docid, -1)
        if value >= 0 and grade is not None:
            a.append(value)
            b.append(grade)
    n = len(a)
    result: dict[str, Any] = {"n": n, "policy": "majority", "labels": labels}
    if n:
        result["kappa"] = agreement.cohen_kappa(a, b, labels=labels)
        result["kappa_linear"] = agreement.cohen_kappa(a, b, labels=labels, weights="linear")
        result["alpha_ordinal"] = agreement.krippendorff_alpha(
            np.array([a, b], dtype=np.float64), level="ordinal", value_domain=labels
        )
        result["confusion"] = agreement.confusion_matrix(a, b, labels=labels).tolist()
        result["band"] = agreement.landis_koch_band(result["kappa"])
    else:
        result.update(kappa=None, kappa_linear=None, alpha_ordinal=None, confusion=[], band="undefined")
    return result


@dataclass(frozen=True)
class ClickReleaseBody:
    """A click-label release as the API answers it: its id and its manifest (`release_click_labels` writes
    it: the source, the log, the estimator, θ, the thresholds, the agreement with the human judgements,
    the number of labels and the files' SHA-256)."""

    id: int
    manifest: dict[str, Any]


def click_release_dict(release: ClickRelease) -> dict[str, Any]:
    """A click-label release as the API answers it (`ClickReleaseBody`)."""
    return asdict(ClickReleaseBody(id=release.pk, manifest=release.manifest))


def release_click_labels(*, label_set: ClickLabelSet, user: Any = None) -> ClickRelease:
    """Write `click-qrels.txt` (`qid 0 docid grade`, byte order) and `manifest.json` (source "clicks",
    the estimator, θ, thresholds and the agreement with the human judgements) under
    MEDIA_ROOT/click-releases/<id>/. Refused without grades or before the agreement is computed."""
    if not label_set.thresholds:
        raise Refused("the label set has no grades: derive it with thresholds first")
    if not label_set.agreement:
        raise Refused(
            "no agreement with human judgements: a click-label release needs the log's pool, whose "
            "human judgements it is compared with first"
        )
    rows = sorted(
        label_set.labels.exclude(grade=None).values_list("topic__qid", "document__docid", "grade"),
        key=lambda r: (r[0].encode(), r[1].encode()),
    )
    with transaction.atomic():
        release = ClickRelease.objects.create(label_set=label_set, directory="", created_by=_user(user))
        # never into a directory that exists (a restored database reuses ids): <id>-2, <id>-3, ...
        directory = Path("click-releases") / str(release.pk)
        suffix = 1
        while (Path(settings.MEDIA_ROOT) / directory).exists():
            suffix += 1
            directory = Path("click-releases") / f"{release.pk}-{suffix}"
        root = Path(settings.MEDIA_ROOT) / directory
        root.mkdir(parents=True, exist_ok=False)
        qrels = "".join(f"{q} 0 {d} {g}\n" for q, d, g in rows)
        (root / "click-qrels.txt").write_text(qrels)
        estimate = label_set.propensity
        manifest = {
            "format": "click-label-release/1",
            "source": "clicks (not human judgements; never merged into a human release)",
            "log": label_set.log.name,
            "collection": label_set.log.collection.name,
            "pool": label_set.pool.name if label_set.pool else None,
            "estimator": label_set.estimator,
            "tau": label_set.tau,
            "clipped_share": label_set.clipped_share,
            "propensity": {"method": estimate.method, "theta": estimate.theta} if estimate else None,
            "thresholds": label_set.thresholds,
            "rubric": str(label_set.rubric) if label_set.rubric else None,
            "agreement_with_humans": label_set.agreement,
            "labels": len(rows),
            "files": {"click-qrels.txt": hashlib.sha256(qrels.encode()).hexdigest()},
        }
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        release.directory = str(directory)
        release.files = manifest["files"]
        release.manifest = manifest
        release.save(update_fields=["directory", "files", "manifest"])
    return release

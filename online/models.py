"""Click logs, propensity estimates, click-derived labels, interleaving experiments and the
offline–online tracker.

A click log is stored twice, each for what it serves:
- `ClickCount` rows: the sufficient statistics of the position-based model, impressions and clicks per
  (logger, topic, document, position). Propensity estimation (RandTop-n, swap, EM, harvesting) and the
  IPS / ratio / COEC labels read only these, so a log of any size is a table of its distinct keys, and a
  warehouse's pre-aggregated counts import straight into it.
- the impression archive (`ClickLog.archive_dir`, `online.archive`): every impression in compact numpy
  chunks (session, user, topic, logger, and per position the document, click and team), for what needs
  the sessions — the session bootstrap, and interleaving credit. Pre-aggregated imports have none.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models

from judgements.models import Published, Rubric
from pooling.models import Authored, Collection, Document, Pool, Topic


class ClickLogQuerySet(models.QuerySet["ClickLog"]):
    def visible_to(self, user: Any) -> ClickLogQuerySet:
        """Logs `user` may read and derive from (propensities, click labels, releases): those of the
        collections they manage and those of the pools they manage; every log for an admin; none for a
        rater or anyone anonymous (raters never see clicks, ranks or sources)."""
        from django.db.models import Q

        if not getattr(user, "is_authenticated", False):
            return self.none()
        return self.filter(
            Q(collection__in=Collection.objects.managed_by(user)) | Q(pool__in=Pool.objects.managed_by(user))
        )


class DerivedQuerySet(models.QuerySet[Any]):
    """What is derived from one click log (propensity estimates, click-label sets)."""

    def visible_to(self, user: Any) -> DerivedQuerySet:
        """Those derived from a log `user` may read (`ClickLogQuerySet.visible_to`)."""
        return self.filter(log__in=ClickLog.objects.visible_to(user))


class ClickLog(Authored):
    """One imported click log of a collection (a file, or a UBI queries + events pair)."""

    class Format(models.TextChoices):
        UBI = "ubi", "OpenSearch UBI 1.x (ubi_queries + ubi_events)"
        JSONL = "jsonl", "impressions JSONL"
        COUNTS = "counts", "pre-aggregated counts"
        SIMULATED = "simulated", "simulated"

    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="click_logs", db_index=False
    )
    pool = models.ForeignKey(
        Pool,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="click_logs",
        help_text="The pool whose human judgements click labels are compared with.",
    )
    name = models.SlugField(max_length=100)
    format = models.CharField(max_length=10, choices=Format.choices)
    source_file = models.CharField(max_length=500, blank=True)
    # What the import counted (`clicklogs.import_click_log` writes them, in this order): pages (the result
    # pages whose query maps to a topic; null for a format without pages, the counts format, whose rows read
    # are `rows` instead), impressions, clicks, cells, queries, unmapped_queries, unmapped_impressions,
    # unknown_objects (distinct), unknown_impressions, unknown_clicks, and the loggers' names (a log imported
    # before unknown_impressions was counted has the impressions under unknown_objects)
    counts = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    max_position = models.PositiveIntegerField(default=0)
    # Relative to MEDIA_ROOT; blank when the log has no per-impression data (pre-aggregated counts).
    archive_dir = models.CharField(max_length=500, blank=True)

    objects = ClickLogQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="clicklog_unique_name")]
        ordering = ["collection", "name"]

    def __str__(self) -> str:
        return f"{self.collection.name}/{self.name}"


class QueryMapping(models.Model):
    """A distinct query of a log and the topic it was mapped to (by qid, or by exact normalised text);
    `topic` is null for an unmapped query, which is counted here and reported, never dropped silently."""

    class By(models.TextChoices):
        QID = "qid"
        TEXT = "text"
        NONE = "none", "unmapped"

    log = models.ForeignKey(ClickLog, on_delete=models.CASCADE, related_name="queries", db_index=False)
    query = models.TextField(help_text="The qid or the normalised query text, as logged.")
    topic = models.ForeignKey(Topic, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    mapped_by = models.CharField(max_length=4, choices=By.choices)
    impressions = models.PositiveBigIntegerField(default=0)
    clicks = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["log", "query"], name="querymapping_unique")]
        ordering = ["log", "-impressions", "query"]

    def __str__(self) -> str:
        return f"{self.query!r} -> {self.topic_id}"


class ClickCount(models.Model):
    """Impressions and clicks of one document at one position for one topic under one logger (the
    ranker that produced the shown list; "" when the log does not say). The statistics every position
    model and label estimator reads."""

    log = models.ForeignKey(ClickLog, on_delete=models.CASCADE, related_name="click_counts", db_index=False)
    logger = models.CharField(max_length=200, blank=True)
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    position = models.PositiveIntegerField()
    impressions = models.PositiveBigIntegerField()
    clicks = models.PositiveBigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["log", "logger", "topic", "document", "position"], name="clickcount_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.topic_id}/{self.document_id}@{self.position}: {self.clicks}/{self.impressions}"


class DerivedFromLog(Authored):
    """What is derived from one click log (propensity estimates, click-label sets): a name, the warnings
    found deriving it, newest first; shown as its name and how it was derived (the field `kind` names)."""

    name = models.CharField(max_length=100)
    warnings = models.JSONField(default=list, blank=True)

    objects = DerivedQuerySet.as_manager()
    kind: ClassVar[str]

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({getattr(self, self.kind)})"


class PropensityEstimate(DerivedFromLog):
    """Examination propensities θ_1..θ_K of the position-based model for a log, normalised θ_1 = 1."""

    class Method(models.TextChoices):
        GIVEN = "given", "given by the user"
        RANDTOP = "randtop", "RandTop-n intervention"
        SWAP = "swap", "swap-k intervention"
        EM = "em", "EM (regression EM on the log)"
        HARVEST = "harvest", "intervention harvesting across loggers"

    log = models.ForeignKey(
        ClickLog, null=True, blank=True, on_delete=models.CASCADE, related_name="propensities"
    )
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=10, choices=Method.choices)
    theta = models.JSONField(help_text="θ by position, position 1 first.")
    params = models.JSONField(default=dict, blank=True)
    # pair counts (harvesting), iterations (EM), sessions used; warnings such as "never changes rank"
    diagnostics = models.JSONField(default=dict, blank=True)

    kind = "method"


class ClickLabelSet(DerivedFromLog):
    """Click-derived relevance for a log's (topic, document) pairs under one estimator and propensity,
    mapped to a rubric's grades by thresholds, with its agreement against the human judgements of
    `pool` (the gate a click-label release carries in its manifest)."""

    class Estimator(models.TextChoices):
        IPS = "ips", "IPS (clicks / θ)"
        RATIO = "ratio", "ratio (Σ clicks / Σ θ)"
        COEC = "coec", "COEC (clicks over expected clicks)"

    log = models.ForeignKey(ClickLog, on_delete=models.CASCADE, related_name="label_sets")
    propensity = models.ForeignKey(
        PropensityEstimate, null=True, blank=True, on_delete=models.PROTECT, related_name="label_sets"
    )
    estimator = models.CharField(max_length=5, choices=Estimator.choices)
    tau = models.FloatField(null=True, blank=True, help_text="Clip 1/θ at τ (none when blank).")
    clipped_share = models.FloatField(default=0.0, help_text="Share of impressions the clipping touched.")
    min_impressions = models.PositiveIntegerField(default=1)
    rubric = models.ForeignKey(Rubric, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # [[threshold, grade], ...] ascending: a score ≥ threshold gets grade (the lowest grade below all)
    thresholds = models.JSONField(default=list, blank=True)
    bootstrap = models.JSONField(default=dict, blank=True, help_text="replicates, level, seed")
    pool = models.ForeignKey(Pool, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # {"kappa", "alpha", "n", "confusion", ...}: null until computed; a release requires it
    agreement = models.JSONField(null=True, blank=True)

    kind = "estimator"


class ClickLabel(models.Model):
    """One (topic, document)'s click-derived score, its bootstrap interval and the grade it maps to."""

    label_set = models.ForeignKey(
        ClickLabelSet, on_delete=models.CASCADE, related_name="labels", db_index=False
    )
    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="+", db_constraint=False)
    document = models.ForeignKey(
        Document, on_delete=models.CASCADE, related_name="+", db_constraint=False, db_index=False
    )
    impressions = models.PositiveBigIntegerField()
    clicks = models.PositiveBigIntegerField()
    score = models.FloatField()
    low = models.FloatField(null=True, blank=True)
    high = models.FloatField(null=True, blank=True)
    grade = models.IntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["label_set", "topic", "document"], name="clicklabel_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.topic_id}/{self.document_id}: {self.score:.3f}"


class ClickRelease(Published):
    """An immutable release of a click-label set: its own files (a qrels-format file of click grades and
    a manifest carrying the agreement with the human judgements), never mixed into a human release."""

    label_set = models.ForeignKey(ClickLabelSet, on_delete=models.PROTECT, related_name="releases")

    def __str__(self) -> str:
        return f"click release {self.pk} of {self.label_set_id}"


# Interleaving experiments and the offline–online tracker live in a module of their own.
from online.experiment_models import (  # noqa: E402, F401
    InterleavedImpression,
    InterleavingExperiment,
    InterleavingResult,
    TrackedExperiment,
)

"""Rubrics, pool membership, leases, judgements with their revisions, gold labels and adjudications.

A little over 400 lines on purpose: the judging app's tables in one module, as Django's migrations and
the admin expect, each model short; the rules over them live in the modules named for them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from judgements.aggregation import DEFAULT_POLICY
from pooling.models import Authored, Pool, PoolItem


class Rubric(models.Model):
    """An ordered grade scale with optional facets. A rubric with judgements is versioned, not edited:
    `services.update_rubric` makes version n+1 under the same name."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    description = models.TextField(blank=True)
    allow_unrateable = models.BooleanField(default=True)
    unrateable_key = models.CharField(max_length=1, default="x")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="rubric_unique_version")]
        ordering = ["name", "-version"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def labels(self) -> list[int]:
        """The full label set, lowest first: agreement statistics always take all of it."""
        return sorted(self.grades.values_list("value", flat=True))

    def has_judgements(self) -> bool:
        return Judgement.objects.filter(rubric=self).exists()


class Grade(models.Model):
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="grades", db_index=False)
    value = models.IntegerField()
    label = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    key = models.CharField(max_length=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rubric", "value"], name="grade_unique_value"),
            models.UniqueConstraint(fields=["rubric", "key"], name="grade_unique_key"),
        ]
        ordering = ["rubric", "-value"]

    def __str__(self) -> str:
        return f"{self.value} {self.label}"


class Facet(models.Model):
    """A question asked beside relevance (freshness, authority): one of `choices`, optional or not."""

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="facets", db_index=False)
    name = models.SlugField(max_length=50)
    label = models.CharField(max_length=100)
    choices = models.JSONField(default=list)
    required = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rubric", "name"], name="facet_unique_name")]
        ordering = ["rubric", "id"]

    def __str__(self) -> str:
        return self.label


class JudgingQuerySet(models.QuerySet["Judging"]):
    def for_rater(self, user: User) -> JudgingQuerySet:
        return self.filter(raters=user)


class Judging(models.Model):
    """How a pool is judged: its rubric, its raters, lease length and the adjudication gap."""

    #: The bounds of a lease (minutes) and of the adjudication gap (grades): the columns' validators, which
    #: `membership.setup_judging` runs for every page, API call and command, and the admin's form too.
    MAX_LEASE_MINUTES = 24 * 60
    MAX_ADJUDICATION_GAP = 1000

    pool = models.OneToOneField(Pool, on_delete=models.CASCADE, related_name="judging")
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="+")
    raters = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="judging_pools", blank=True)
    lease_minutes = models.PositiveIntegerField(
        default=10, validators=[MinValueValidator(1), MaxValueValidator(MAX_LEASE_MINUTES)]
    )
    adjudication_gap = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(MAX_ADJUDICATION_GAP)]
    )
    gate_kappa = models.FloatField(
        null=True,
        blank=True,
        help_text="Cohen's kappa a model judge must reach against the human labels to be admitted; "
        "blank: the humans' own agreement with each other.",
    )

    objects = JudgingQuerySet.as_manager()

    def __str__(self) -> str:
        return f"judging of {self.pool.name}"


class Assignment(models.Model):
    """One rater's lease on one item. One row per (item, rater): a re-lease after expiry reuses it. A rater
    holds at most one live (active) lease per pool: the database refuses a second one (`pool` is the
    item's pool, kept here so that a partial unique index can say so)."""

    class State(models.TextChoices):
        ACTIVE = "active"
        DONE = "done"
        SKIPPED = "skipped"
        EXPIRED = "expired"

    # No index of their own on `item` and `rater`: (item, rater) and (rater, ...) below lead with them,
    # and a key press writes every index of this table twice (the lease's insert, its end's update).
    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="+")
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.ACTIVE)
    leased_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["item", "rater"], name="assignment_unique_rater"),
            models.UniqueConstraint(
                fields=["rater", "pool"], condition=models.Q(state="active"), name="assignment_one_live_lease"
            ),
        ]
        indexes = [
            models.Index(fields=["rater", "state"], name="assignment_rater_state"),
            models.Index(fields=["state", "expires_at"], name="assignment_expiry"),
            # the topic of a rater's last lease (the next lease prefers it): read first, not sorted
            models.Index(fields=["rater", "-leased_at"], name="assignment_rater_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.rater_id} on {self.item_id} ({self.state})"


class Judge(Authored):
    """A model judge of a pool: a rater with its own identity (`user`, an account that cannot log in)
    and kind `model`, whose labels are judgements of kind `model` (see `Judgement`). People who judge are
    raters of kind `human` and need no row here.

    `method` is `learned` (a scikit-learn model trained on the pool's human labels, `judgements.learned`)
    or `external` (a program speaking JSON lines, `judgements.external`: `command` is its argv). `gate`
    holds the last measurement against the human labels (`judgements.judges.measure_gate`) and `admitted`
    its verdict: only an admitted judge's labels may enter a release."""

    class Kind(models.TextChoices):
        HUMAN = "human"
        MODEL = "model"

    class Method(models.TextChoices):
        LEARNED = "learned"
        EXTERNAL = "external"

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="judges", db_index=False)
    name = models.SlugField(max_length=80)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.MODEL)
    method = models.CharField(max_length=10, choices=Method.choices)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judge")
    command = models.JSONField(default=list, blank=True, help_text="argv of an external judge.")
    timeout_seconds = models.FloatField(default=30.0)
    retries = models.PositiveSmallIntegerField(default=1)
    seed = models.IntegerField(default=0)
    folds = models.PositiveSmallIntegerField(default=5)
    run_counts = models.JSONField(default=dict, blank=True)
    gate = models.JSONField(default=dict, blank=True)
    admitted = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "name"], name="judge_unique_name")]
        ordering = ["pool", "name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.method} judge of {self.pool.name})"


class CrowdWorker(models.Model):
    """The mark of a crowd worker's account (`membership.create_worker_account`): `user` was made by a
    crowd import for the worker its files name `worker_id`; a crowd file's rows are credited to these
    accounts only, never to a person's or a model judge's of the same name (`membership.worker_accounts`)."""

    worker_id = models.CharField(max_length=150, unique=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_worker"
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"crowd worker {self.worker_id}"


class HumanJudgementManager(models.Manager["Judgement"]):
    """`Judgement.objects`: human judgements only. Every count, agreement, lease, eligibility, statistic
    and release of the platform reads judgements through this manager (or through an item's
    `judgements`, which uses it), so a model's label can never be counted as a person's by accident.
    Model labels are read on purpose, through `Judgement.all_kinds`."""

    def get_queryset(self) -> models.QuerySet[Judgement]:
        return super().get_queryset().filter(kind=Judge.Kind.HUMAN)


class Judgement(models.Model):
    """A rater's current label for an item; every change is kept in `JudgementRevision`.

    `kind` is the rater's: `human`, or `model` for a `Judge`'s label (`rater` is then the judge's
    account). Model labels never touch the item's `num_judgements`, so an item judged only by a model is
    still unjudged by people (`pooling.models.JUDGED`, `NEEDS_JUDGEMENT`)."""

    # No index of their own on `item` and `rater`: (item, rater) and (rater, updated_at) lead with them.
    item = models.ForeignKey(PoolItem, on_delete=models.CASCADE, related_name="judgements", db_index=False)
    # PROTECT: a judgement is evidence behind releases and counted in its item's `num_judgements` (and the
    # progress tallies): a rater who has judged is deactivated, never deleted (`judgements.user_admin`).
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgements", db_index=False
    )
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="+")
    grade = models.IntegerField(null=True, blank=True)
    unrateable = models.BooleanField(default=False)
    facets = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)
    seconds = models.FloatField(default=0.0)
    imported = models.BooleanField(default=False)
    kind = models.CharField(
        max_length=10, choices=Judge.Kind.choices, default=Judge.Kind.HUMAN, db_default=Judge.Kind.HUMAN
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = HumanJudgementManager()  # the first manager is the default one: people's judgements only
    all_kinds: models.Manager[Judgement] = models.Manager()

    class Meta:
        base_manager_name = "all_kinds"
        constraints = [
            models.UniqueConstraint(fields=["item", "rater"], name="judgement_unique_rater"),
            models.CheckConstraint(
                condition=models.Q(unrateable=True, grade__isnull=True)
                | models.Q(unrateable=False, grade__isnull=False),
                name="judgement_grade_xor_unrateable",
            ),
        ]
        indexes = [models.Index(fields=["rater", "-updated_at"], name="judgement_rater_recent")]

    def __str__(self) -> str:
        return f"{self.rater_id} on {self.item_id}: {'unrateable' if self.unrateable else self.grade}"


class JudgementRevision(models.Model):
    """One change of a judgement: who, when, the old and the new label."""

    judgement = models.ForeignKey(Judgement, on_delete=models.CASCADE, related_name="revisions")
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    changed_at = models.DateTimeField(default=timezone.now)
    old_grade = models.IntegerField(null=True, blank=True)
    old_unrateable = models.BooleanField(default=False)
    old_facets = models.JSONField(default=dict, blank=True)
    old_note = models.TextField(blank=True)
    new_grade = models.IntegerField(null=True, blank=True)
    new_unrateable = models.BooleanField(default=False)
    new_facets = models.JSONField(default=dict, blank=True)
    new_note = models.TextField(blank=True)

    class Meta:
        ordering = ["judgement", "changed_at", "id"]

    def __str__(self) -> str:
        return f"revision of {self.judgement_id} at {self.changed_at:%Y-%m-%d %H:%M}"


class GoldLabel(models.Model):
    """A known grade for an item, served to every rater unannounced to measure accuracy."""

    item = models.OneToOneField(PoolItem, on_delete=models.CASCADE, related_name="gold_label")
    grade = models.IntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"gold {self.grade} for {self.item_id}"


class Adjudication(models.Model):
    """An adjudicator's decision on an item whose grades disagree; overrides every aggregation policy."""

    item = models.OneToOneField(PoolItem, on_delete=models.CASCADE, related_name="adjudication")
    grade = models.IntegerField(null=True, blank=True)
    unrateable = models.BooleanField(default=False)
    note = models.TextField(blank=True)
    adjudicator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"adjudication of {self.item_id}: {'unrateable' if self.unrateable else self.grade}"


class Published(Authored):
    """Files written once under MEDIA_ROOT (a qrels release, a click-label release): their directory, the
    names of its files with their SHA-256, and the manifest; newest first."""

    directory = models.CharField(max_length=500)
    files = models.JSONField(default=dict)
    manifest = models.JSONField(default=dict)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]


class ReleaseQuerySet(models.QuerySet["Release"]):
    def managed_by(self, user: Any) -> ReleaseQuerySet:
        """The releases `user` may open (and score runs on): those of the pools they manage; every release
        for an admin. A release is its pool's managers' own, and so is every figure computed from it."""
        return self.filter(pool__in=Pool.objects.managed_by(user).values("pk"))


class Release(Published):
    """An immutable qrels snapshot of a pool under one aggregation policy. Its files live in
    MEDIA_ROOT/releases/<pool>/<id>/ and are never rewritten; `files` maps names to their SHA-256.
    People know it by its `number` within its pool (1, 2, 3 ... in the order made: "release 2 of news",
    `releases.publish_release`); the id is the key of its URLs and of the API."""

    objects = ReleaseQuerySet.as_manager()

    class Unjudged(models.TextChoices):
        EXPLICIT = "explicit", "explicit (-1 lines)"
        OMIT = "omit", "omitted"

    # No index of its own on `pool`: the unique (pool, number) below leads with it.
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="releases", db_index=False)
    policy = models.CharField(max_length=120, default=DEFAULT_POLICY)
    unjudged = models.CharField(max_length=10, choices=Unjudged.choices, default=Unjudged.EXPLICIT)
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="+")
    counts = models.JSONField(default=dict)
    number = models.PositiveIntegerField(help_text="1, 2, 3 ... within the pool, in the order made")

    class Meta(Published.Meta):
        constraints = [models.UniqueConstraint(fields=["pool", "number"], name="one_release_number_per_pool")]

    def __str__(self) -> str:
        return f"release {self.number} of {self.pool.name} ({self.policy})"


class RaterExclusion(models.Model):
    """A rater's labels left out of a pool's releases (and of its current qrels, agreement and noise
    floor), from `excluded_at` until `restored_at`: every exclusion is kept, so the record says who excluded
    whom, why and when, and who restored them. At most one exclusion of a rater per pool is active."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="exclusions")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="exclusions")
    reason = models.CharField(max_length=500, blank=True)
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    excluded_at = models.DateTimeField(default=timezone.now)
    restored_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    restored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-excluded_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["pool", "rater"],
                condition=models.Q(restored_at__isnull=True),
                name="one_active_exclusion_per_rater_and_pool",
            )
        ]

    def __str__(self) -> str:
        return f"exclusion of {self.rater_id} from {self.pool_id}"

    @property
    def active(self) -> bool:
        return self.restored_at is None


class ProgressTally(models.Model):
    """Sums over a topic's selected items of a pool, kept by PostgreSQL triggers on the item table
    (migrations 0007, 0008, 0010 and 0015: per statement on inserts and deletes, per row on an update
    that changes a row's counts, whichever code writes them): `need` (required judgements), `done`
    (judgements made, at most `required` an item), `needing` (items that may be leased to one more rater,
    `pooling.models.LEASABLE`) and `items` (the selected items themselves). Each database session adds to
    its own `slot` (its backend's pid modulo 32), so that two sessions' counts never wait on one row; a
    topic's figure is the sum over its slots. The judging page's progress (`judgements.progress`) reads
    these instead of a pass over every item of the pool. Plain ids, not foreign keys: a pool's rows outlive
    it at zero harmlessly (its items' deletion counts them down). PostgreSQL only: elsewhere the progress
    counts the items."""

    pool_id = models.BigIntegerField()
    topic_id = models.BigIntegerField()
    slot = models.SmallIntegerField()
    need = models.BigIntegerField(default=0)
    done = models.BigIntegerField(default=0)
    needing = models.BigIntegerField(default=0)
    items = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool_id", "topic_id", "slot"], name="progress_tally_unique")
        ]

    def __str__(self) -> str:
        return f"pool {self.pool_id} topic {self.topic_id} slot {self.slot}"

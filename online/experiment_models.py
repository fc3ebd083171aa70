"""Interleaving experiments (two runs served interleaved to searchers, their logged impressions and the
results computed from them) and the offline–online tracker's experiments. Imported by `online.models`
(a module of its own so that the click-log models and these grow apart).

Who sees what: an experiment belongs to a collection. Its managers (`Collection.objects.managed_by`)
create, change and delete it (`managed_by` below); the managers of the pools built on it read the
collection (`Collection.objects.visible_to`) and so read its interleaving experiments, and change nothing.
A tracked experiment's offline figures are scores on one release, which only its pool's managers may
open (`Pool.objects.managed_by`): it is seen by those who read its collection and may open its release
(`TrackedExperimentQuerySet.visible_to`). An interleaving experiment's `clients` (the search front end's
API account) may also fetch interleaved lists and log impressions, nothing else.
"""

from __future__ import annotations

from typing import Any, cast

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from judgements.models import Release
from pooling.models import Authored, Collection, Run

#: The longest `query_id` a front end may give an impression (a UUID is 36 characters).
QUERY_ID_LENGTH = 100


class InterleavingExperimentQuerySet(models.QuerySet["InterleavingExperiment"]):
    def visible_to(self, user: Any) -> InterleavingExperimentQuerySet:
        """Experiments of the collections `user` may read (their managers, the managers of their pools)."""
        return self.filter(collection__in=Collection.objects.visible_to(user))

    def managed_by(self, user: Any) -> InterleavingExperimentQuerySet:
        """Experiments `user` may change (switch on or off, clients, description, compute a result): those
        of the collections they manage; a reader of the collection changes nothing."""
        return self.filter(collection__in=Collection.objects.managed_by(user))

    def usable_by(self, user: Any) -> InterleavingExperimentQuerySet:
        """Experiments `user` may fetch interleaved lists of and log impressions to (logging writes): those
        they manage, and those naming them among the clients."""
        if not user.is_authenticated:
            return self.none()
        return self.filter(
            Q(collection__in=Collection.objects.managed_by(user)) | Q(pk__in=self._client_of(user))
        )

    @staticmethod
    def _client_of(user: Any) -> Any:
        return InterleavingExperiment.clients.through.objects.filter(user_id=user.pk).values(
            "interleavingexperiment_id"
        )


class InterleavingExperiment(Authored):
    """Runs A and B of a collection, interleaved for searchers by `method` (see `online.interleaving`)."""

    class Method(models.TextChoices):
        TEAM_DRAFT = "team_draft", "team draft"
        BALANCED = "balanced", "balanced"

    name = models.SlugField(max_length=100, unique=True)
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    run_a = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    run_b = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=12, choices=Method.choices, default=Method.TEAM_DRAFT)
    length = models.PositiveSmallIntegerField(default=10, help_text="Positions served (1 to 100).")
    identical_prefix = models.BooleanField(
        default=True, help_text="Team draft: the shared top of A and B belongs to no team."
    )
    active = models.BooleanField(default=True, help_text="An inactive experiment serves and logs nothing.")
    description = models.TextField(blank=True)
    clients = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        related_name="+",
        blank=True,
        help_text="API accounts (the search front end) that may fetch lists and log impressions.",
    )
    unmapped_queries = models.PositiveBigIntegerField(
        default=0, help_text="Searches (`ranking?q=`) whose query text is no topic's: answered 404."
    )

    objects = InterleavingExperimentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class InterleavedImpression(models.Model):
    """One interleaved list a searcher was shown, as the front end logged it back: the documents and the
    team of each position, the clicked positions and the outcome credited at logging time. `query_id` is
    the id the front end made for that search (UBI's `query_id`): at most one impression of an experiment
    has it, so a retried post is stored once (`impressions.log_impressions`)."""

    class Outcome(models.TextChoices):
        A = "A"
        B = "B"
        TIE = "tie"
        NONE = "none", "no click"

    experiment = models.ForeignKey(
        InterleavingExperiment, on_delete=models.CASCADE, related_name="impressions", db_index=False
    )
    query_id = models.CharField(
        max_length=QUERY_ID_LENGTH,
        null=True,
        blank=True,
        help_text="The front end's id of the search (UBI's query_id); a repeat of it is this impression.",
    )
    qid = models.CharField(max_length=100)
    user = models.CharField(max_length=200, help_text="The searcher (the bootstrap resamples by it).")
    session = models.CharField(max_length=200, blank=True)
    docids = models.JSONField()
    teams = models.CharField(max_length=100, help_text="One character per position: A, B or - .")
    clicks = models.JSONField(default=list)
    outcome = models.CharField(max_length=4, choices=Outcome.choices)
    shown_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["experiment", "qid"], name="impression_experiment_qid")]
        constraints = [
            # impressions without an id are counted as they come (a front end that sends none)
            models.UniqueConstraint(
                fields=["experiment", "query_id"],
                condition=Q(query_id__isnull=False),
                name="impression_unique_query_id",
            )
        ]

    def __str__(self) -> str:
        return f"{self.experiment_id}/{self.qid}: {self.outcome}"


class InterleavingResult(models.Model):
    """The preference computed over an experiment's impressions at one moment (a snapshot: the tracker
    can cite it while impressions keep arriving)."""

    experiment = models.ForeignKey(InterleavingExperiment, on_delete=models.CASCADE, related_name="results")
    wins_a = models.PositiveIntegerField()
    wins_b = models.PositiveIntegerField()
    ties = models.PositiveIntegerField()
    no_clicks = models.PositiveIntegerField()
    users = models.PositiveIntegerField()
    delta_ab = models.FloatField(null=True, blank=True)
    low = models.FloatField(null=True, blank=True)
    high = models.FloatField(null=True, blank=True)
    level = models.FloatField(default=0.95)
    p_value = models.FloatField()
    per_query = models.JSONField(default=dict)
    source = models.CharField(
        max_length=300, blank=True, help_text="Blank: the impressions logged back; else the click log read."
    )
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-computed_at", "-id"]

    def __str__(self) -> str:
        return f"result {self.pk} of {self.experiment_id}"


class TrackedExperimentQuerySet(models.QuerySet["TrackedExperiment"]):
    def visible_to(self, user: Any) -> TrackedExperimentQuerySet:
        """Tracked experiments `user` may read: of a collection they read, scored on a release they may
        open (its pool is one they manage: a release is its pool's managers' own, so are the figures
        computed from it). Whoever reads the collection but not the release does not see the experiment
        at all, in the list, the correlation or the page, as if it did not exist. One whose release is
        gone is left to its collection's managers. Every experiment for an admin."""
        return self.filter(collection__in=Collection.objects.visible_to(user)).filter(
            Q(release__in=Release.objects.managed_by(user).values("pk"))
            | Q(release__isnull=True, collection__in=Collection.objects.managed_by(user))
        )

    def managed_by(self, user: Any) -> TrackedExperimentQuerySet:
        """Tracked experiments `user` may change (the online delta) or delete: those they see
        (`visible_to`) of the collections they manage."""
        return self.visible_to(user).filter(collection__in=Collection.objects.managed_by(user))

    def for_answers(self) -> TrackedExperimentQuerySet:
        """With what each one's answer reads (`tracking.tracked_body`) in the same query: its collection, its
        interleaving result and that result's experiment, and the id of the experiment's latest result
        (`latest_result_id`), so that a list of them reads no row more per experiment."""
        newest_first = cast(list[str], InterleavingResult._meta.ordering)  # the one order of "latest"
        latest = InterleavingResult.objects.filter(experiment=OuterRef("interleaving__experiment"))
        return self.select_related("collection", "interleaving__experiment").annotate(
            latest_result_id=Subquery(latest.order_by(*newest_first).values("pk")[:1])
        )


class TrackedExperiment(Authored):
    """A ranking change, baseline → treatment, with its offline delta (a metric on one release, computed by
    the evaluation app and stored with the runs' names, so it stays readable if a run goes) and its online
    delta (an A/B metric entered or imported, or the treatment's interleaving preference)."""

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+", db_index=False)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    release = models.ForeignKey(Release, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    metric = models.CharField(max_length=100)
    baseline = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    treatment = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    baseline_name = models.CharField(max_length=200)
    treatment_name = models.CharField(max_length=200)
    offline_baseline = models.FloatField()
    offline_treatment = models.FloatField()
    offline_delta = models.FloatField()
    offline_topics = models.PositiveIntegerField()
    offline_judged_10 = models.FloatField(
        null=True,
        blank=True,
        help_text="judged@10 of the less judged of the two runs, over the same topics: the share of its top "
        "10 the release judged (the rest count as non-relevant in the offline delta)",
    )
    online_metric = models.CharField(max_length=100, blank=True)
    online_delta = models.FloatField(null=True, blank=True)
    interleaving = models.ForeignKey(
        InterleavingResult, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = TrackedExperimentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="trackedexperiment_unique_name")
        ]
        ordering = ["collection", "created_at", "id"]

    def __str__(self) -> str:
        return self.name

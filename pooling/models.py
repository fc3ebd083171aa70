"""Collections, documents, topics, runs and their rows, pools and pool items, and job status rows.

Over 400 lines on purpose: these are the app's tables with the rules that scope and count them (ownership,
the item rules), each model short, read together; one module is where Django and a newcomer look for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, ProhibitNullCharactersValidator
from django.db import IntegrityError, models, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Exists, ExpressionWrapper, F, OuterRef, Q
from django.db.models.expressions import RawSQL
from django.db.models.functions import Greatest, Lower
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# Ownership (who may see and change what) is decided here and nowhere else: `Collection.objects` and
# `Pool.objects` (and `Job.objects`) `.managed_by(user)` / `.visible_to(user)`. Every page, API endpoint,
# admin view and file download scopes through these, by way of `pooling.permissions`.


def column_problems(model: type[models.Model], column: str, value: Any) -> list[str]:
    """What `model`'s column `column` says of `value` (its field's checks and validators: blank, length, a
    slug, a range), or nothing: the one way a service asks a column what it takes, for the callers that
    have no form (the command line) as for those that do."""
    field = model._meta.get_field(column)
    # An integer column's range is PostgreSQL's (the production database's) on every database, and it is
    # checked first: SQLite would take any 64-bit value (and its field's own check names that range), which
    # the same campaign could not hold in production.
    low, high = BaseDatabaseOperations.integer_field_ranges.get(field.get_internal_type(), (None, None))
    ranged = low is not None and isinstance(value, int)
    for validator in (MinValueValidator(low), MaxValueValidator(high)) if ranged else ():
        try:
            validator(value)
        except ValidationError as exc:
            return list(exc.messages)
    # A NUL, which no text column of PostgreSQL holds: refused as a form or a serializer refuses it (the
    # model field does not check it), so the command line, which has neither, is held to it too.
    checks = [ProhibitNullCharactersValidator()] if isinstance(value, str) else []
    try:
        for check in checks:
            check(value)
        field.clean(value, None)  # type: ignore[union-attr]  # a column, not a relation
    except ValidationError as exc:
        return list(exc.messages)
    return []


def _sees_everything(user: Any) -> bool:
    """Superusers (admins) see and change every collection and pool."""
    return bool(user.is_authenticated and user.is_active and user.is_superuser)


_QS = TypeVar("_QS", bound=models.QuerySet[Any])


def _scoped(queryset: _QS, user: Any, rows: Callable[[], Q]) -> _QS:
    """`queryset` as `user` reaches it: every row for an admin, none for anyone anonymous, otherwise the
    rows `rows()` selects (built only then)."""
    if _sees_everything(user):
        return queryset
    if not user.is_authenticated:
        return queryset.none()
    return queryset.filter(rows())


def _managers_of(model: type[Collection | Pool], user: Any) -> models.QuerySet[Any]:
    """The ids of the collections or pools `user` is one of the managers of (as a subquery)."""
    return model.managers.through.objects.filter(user_id=user.pk).values(f"{model._meta.model_name}_id")


class Authored(models.Model):
    """Who made a row (kept when that account is deleted: null) and when; the fields of every record a
    manager makes: jobs, judges, releases, click logs and their estimates, experiments."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True


class CollectionQuerySet(models.QuerySet["Collection"]):
    def managed_by(self, user: Any) -> CollectionQuerySet:
        """Collections `user` may change (imports, deleting runs, new pools, managers): the ones they
        are a manager of; every collection for an admin; none for anyone anonymous."""
        return _scoped(self, user, lambda: Q(pk__in=_managers_of(Collection, user)))

    def visible_to(self, user: Any) -> CollectionQuerySet:
        """Collections `user` may read (topics, documents, runs): those they manage, and the collections
        of the pools they manage (a pool's manager reads the runs the pool is scored on)."""
        return _scoped(
            self,
            user,
            lambda: (
                Q(pk__in=_managers_of(Collection, user))
                | Q(pk__in=Pool.objects.managed_by(user).values("collection_id"))
            ),
        )


class Owned(models.Model):
    """What managers own, a collection or a pool: named by a slug, listed by name, changed by its
    `managers` (see `managers_field`; `pooling.ownership` adds and removes them)."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        abstract = True
        ordering = ["name"]
        # Names that differ only in case are one (`name_taken_problem`): the checks say so first, and this
        # holds it against two creations racing past them.
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="%(class)s_name_unique_in_any_case",
                violation_error_message=(
                    "This name is taken in another case (names that differ only in case are one)."
                ),
            )
        ]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def name_problems(cls, name: str) -> list[str]:
        """Why `name` cannot name one (empty, not a slug, too long: the column's own validators), or
        nothing. The form and the API check it as their field; the services check it for the command line,
        which has no form: a name a URL cannot carry would leave the object out of every page."""
        if not name:
            return [f"a {cls._meta.verbose_name} needs a name"]
        shown = name if len(name) <= 40 else f"{name[:40]}…"
        return [f"name {shown!r}: {message}" for message in column_problems(cls, "name", name)]

    @classmethod
    def named_in_any_case(cls, name: str) -> models.QuerySet[Any]:
        """The one named `name`, in this case or another (the unique index on `lower(name)` allows one)."""
        return cls._default_manager.filter(name__iexact=name)

    @classmethod
    def name_taken_problem(cls, name: str, *, exists: str) -> str | None:
        """`exists` (the caller's words for "it is taken") when one is named `name` or a name that differs
        from it only in case (``PyDocs`` beside ``pydocs`` would be told apart by case alone, in every list,
        URL and command line), with that name when it differs; else None. Asked where a new one is named."""
        taken = cls.named_in_any_case(name).values_list("name", flat=True).first()
        if taken is None:
            return None
        return exists if taken == name else f"{exists} as {taken!r} (names that differ only in case are one)"

    @classmethod
    @contextmanager
    def creating(cls, name: str, *, refused: Callable[[], Exception]) -> Iterator[None]:
        """Around the creation of one named `name`, after its checks: when another of that name (in any
        case) was created in between, the database refuses this one, and the refusal is raised as
        `refused()`, the caller's own error (which asks its checks again, so it names the one that took the
        name); any other refusal as it was."""
        try:
            yield
        except IntegrityError:
            if not cls.named_in_any_case(name).exists():
                raise
            raise refused() from None


def managers_field(*, related_name: str, help_text: str) -> models.ManyToManyField[User, Any]:
    """The `managers` of an `Owned` model: the users who may change it, none to begin with (admins always
    may); each kind says in `help_text` what managing it allows."""
    return models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name=related_name, blank=True, help_text=help_text
    )


class Collection(Owned):
    created_at = models.DateTimeField(default=timezone.now)
    managers = managers_field(
        related_name="managed_collections",
        help_text="Who may import into this collection, delete its runs and pool it (admins always may).",
    )

    objects = CollectionQuerySet.as_manager()


class Document(models.Model):
    # No index of its own: document_unique_docid (collection, docid) leads with it (so for Topic, Run).
    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="documents", db_index=False
    )
    docid = models.CharField(max_length=255)
    title = models.TextField(blank=True)
    text = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "docid"], name="document_unique_docid")]
        ordering = ["collection", "docid"]

    def __str__(self) -> str:
        return self.docid

    @property
    def full_text(self) -> str:
        """Title and body, what text features (the `cal` strategy, learned judges) read."""
        return f"{self.title}\n{self.text}" if self.title else self.text


def tagged(topics: Iterable[Topic], segment: str) -> list[Topic]:
    """The topics tagged with `segment` (segments are a JSON list; filtered in Python for SQLite too)."""
    return [topic for topic in topics if segment in (topic.segments or [])]


class TopicQuerySet(models.QuerySet["Topic"]):
    def in_segment(self, segment: str) -> list[Topic]:
        """These topics tagged with `segment` (`tagged`)."""
        return tagged(self, segment)

    def segment_names(self) -> list[str]:
        """The segments these topics are tagged with, sorted (what a pool may be restricted to)."""
        tagged = self.values_list("segments", flat=True)
        return sorted({name for segments in tagged for name in segments or []})


class Topic(models.Model):
    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="topics", db_index=False
    )
    qid = models.CharField(max_length=100)
    query = models.TextField()
    description = models.TextField(blank=True)
    narrative = models.TextField(blank=True)
    segments = models.JSONField(default=list, blank=True)
    #: When its texts or segments were last written (an import updates an existing qid): the segments of a
    #: report are read from here, so a cached page is stale once it moves (`queries.data_stamp`).
    updated_at = models.DateTimeField(auto_now=True)

    objects = TopicQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "qid"], name="topic_unique_qid")]
        ordering = ["collection", "qid"]

    def __str__(self) -> str:
        return f"{self.qid}: {self.query}"

    @property
    def full_text(self) -> str:
        """Query, description and narrative, what text features (`cal`, learned judges) read."""
        return "\n".join(part for part in (self.query, self.description, self.narrative) if part)


class RunQuerySet(models.QuerySet["Run"]):
    def named(self, collection: Collection, names: Iterable[str]) -> list[Run]:
        """The runs of `collection` called `names`, in that order (a name given twice counts once).

        The one lookup of runs by name: every page, endpoint and command that takes run names calls it.
        Raises `UnknownRuns` (a `PoolError`) naming each missing run."""
        from pooling.errors import UnknownRuns

        wanted = list(dict.fromkeys(names))
        runs = {run.name: run for run in self.filter(collection=collection, name__in=wanted)}
        missing = [name for name in wanted if name not in runs]
        if missing:
            raise UnknownRuns(collection.name, missing)
        return [runs[name] for name in wanted]


@dataclass(frozen=True)
class RankedRow:
    """One document of a ranked list: its trec_eval rank (1 = first), docid and score."""

    rank: int
    docid: str
    score: float


@dataclass(frozen=True)
class RankedList:
    """One topic's ranked list of a run, in trec_eval order (`Run.ranked_list_body`): as deep as the run
    (its depth per topic), whole, not a page."""

    run: str
    qid: str
    results: list[RankedRow]


class Run(models.Model):
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="runs", db_index=False)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    num_rows = models.PositiveIntegerField(default=0)
    num_topics = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    #: When the row was last saved: an import that replaces its rows saves it, so every score of it read
    #: from a cache is stale once this moves (`queries.data_stamp`).
    updated_at = models.DateTimeField(auto_now=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "name"], name="run_unique_name")]
        ordering = ["collection", "name"]

    def __str__(self) -> str:
        return self.name

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        """Delete the run: its rows first, in one statement (its partition on PostgreSQL), before Django's
        collector would delete them row by row. Every deleter goes through here (`deletion.delete_run`,
        the admin's single and bulk delete, a collection's deletion); a queryset `.delete()` would not."""
        from pooling import runrows

        with transaction.atomic():
            runrows.drop_partition(self.pk)
            return super().delete(*args, **kwargs)

    def ranked_list(self, topic: Topic) -> list[tuple[str, float]]:
        """One topic's ranked list in trec_eval order, as (docid, score), read in bulk (see RunRow)."""
        rows = (
            RunRow.objects.filter(run=self, topic=topic)
            .order_by("rank")
            .values_list("document__docid", "score")
        )
        return list(rows)

    def ranked_list_body(self, topic: Topic) -> RankedList:
        """`ranked_list` of one topic, each document with its rank, as the API answers it."""
        rows = self.ranked_list(topic)
        results = [
            RankedRow(rank=rank, docid=docid, score=score) for rank, (docid, score) in enumerate(rows, 1)
        ]
        return RankedList(run=self.name, qid=topic.qid, results=results)


_M = TypeVar("_M", bound=models.Model)


def unchecked_key(to: type[_M], *, related_name: str = "+") -> models.ForeignKey[_M, _M]:
    """A foreign key of the bulk-written tables (run rows, pool items, provenance), with neither a database
    constraint nor an index of its own: their services are the only writers and check the ids
    themselves, deletes cascade through Django's collector, and the tables' composite keys serve the
    reads (each model's docstring says which)."""
    return models.ForeignKey(
        to, on_delete=models.CASCADE, related_name=related_name, db_index=False, db_constraint=False
    )


class RunRow(models.Model):
    """One retrieved document of a run. `rank` is the trec_eval rank (1 = first), computed at import;
    (run, topic, rank) is the key.

    On PostgreSQL the table is partitioned by run (migrations 0008-0009, `pooling.runrows`): an imported
    run is a table of its own, written once in trec_eval order with a BRIN index on the topic, so one
    topic's ranked list is a few adjacent pages, and the run's rows go with one DROP. On SQLite the key
    is the table's primary key. The foreign keys carry no database constraint and no index of their own:
    the importer is the only writer (it creates the run in the same transaction and validates topic and
    document ids itself), and deletes cascade through Django's collector (a run's own rows first, through
    `Run.delete`). A deferred constraint would be checked row by row at COMMIT.
    """

    pk = models.CompositePrimaryKey("run", "topic", "rank")
    run = unchecked_key(Run, related_name="rows")
    topic = unchecked_key(Topic)
    document = unchecked_key(Document)
    rank = models.PositiveIntegerField()
    score = models.FloatField()

    def __str__(self) -> str:
        return f"run {self.run_id} topic {self.topic_id} rank {self.rank}"


class JobQuerySet(models.QuerySet["Job"]):
    def visible_to(self, user: Any) -> JobQuerySet:
        """Jobs `user` may read: a pool's job (its kind in POOL_JOB_KINDS; `params["pool"]` names the pool)
        if they manage that pool now; any other job (an import, a click log's) if they manage its
        collection or started it; every job for an admin. Managing a collection does not make one a
        manager of its pools, nor does having started a pool's job once: their jobs are the pool's."""
        return _scoped(self, user, lambda: self._pools_or_collections(user, started=True))

    def retryable_by(self, user: Any) -> JobQuerySet:
        """Jobs `user` may start again now: a pool's job if they manage the pool, any other job if they
        manage its collection (having started it is not enough: the right ends with the role)."""
        return _scoped(self, user, lambda: self._pools_or_collections(user, started=False))

    @staticmethod
    def _pools_or_collections(user: Any, *, started: bool) -> Q:
        pools = list(Pool.objects.managed_by(user).values_list("pk", flat=True))
        theirs = Q(collection__in=Collection.objects.managed_by(user))
        if started:
            theirs |= Q(created_by=user.pk)
        return Q(kind__in=POOL_JOB_KINDS, params__pool__in=pools) | (~Q(kind__in=POOL_JOB_KINDS) & theirs)


#: The kinds of job that name their pool in `params["pool"]` (whoever manages the pool sees them).
POOL_JOB_KINDS = ("build_pool", "add_runs", "release", "judge", "judgements")


class Job(Authored):
    """The status row of a long task (an import, a pool build, a release): what the UI and API read."""

    class Kind(models.TextChoices):
        DOCUMENTS = "documents"
        TOPICS = "topics"
        RUN = "run"
        JUDGEMENTS = "judgements"
        BUILD_POOL = "build_pool"
        ADD_RUNS = "add_runs"
        RELEASE = "release"
        JUDGE = "judge"
        CLICK_LOG = "click_log"
        PROPENSITY = "propensity"
        CLICK_LABELS = "click_labels"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    collection = models.ForeignKey(Collection, null=True, blank=True, on_delete=models.CASCADE)
    params = models.JSONField(default=dict, blank=True)
    upload = models.FileField(upload_to="uploads/%Y/%m/", blank=True)
    upload_name = models.CharField(max_length=300, blank=True)
    progress = models.FloatField(default=0.0)
    message = models.CharField(max_length=300, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    count_order = models.JSONField(
        default=list, blank=True, help_text="The counts' names in the order the job's summary gave them."
    )
    errors = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    result = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Stamped by the worker while the job runs (`pooling.jobs.Heartbeat`): a running job whose stamp is
    # older than JOB_STALE_SECONDS has lost its worker, and the sweep fails it.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="Deliveries of the job's task so far.")
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid of the last attempt.")
    retry_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries"
    )

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    def report(self, *, progress: float | None = None, message: str | None = None, **fields: Any) -> None:
        """Record progress without touching other columns (called from inside tasks).

        Inside a transaction (an atomic import) a row update would stay invisible until the commit, so
        live progress goes to the shared cache instead, where `live()` finds it.
        """
        values: dict[str, Any] = dict(fields)
        if progress is not None:
            values["progress"] = round(min(max(progress, 0.0), 1.0), 4)
        if message is not None:
            values["message"] = message[:300]
        for key, value in values.items():
            setattr(self, key, value)
        if transaction.get_connection().in_atomic_block and not fields:
            cache.set(self._cache_key, {"progress": self.progress, "message": self.message}, 3600)
        else:
            Job.objects.filter(pk=self.pk).update(**values)

    @property
    def _cache_key(self) -> str:
        return f"job-progress:{self.pk}"

    def ordered_counts(self) -> list[tuple[str, Any]]:
        """The job's counts in the order its summary gave them (`job_summary.ordered_counts`)."""
        from pooling.job_summary import ordered_counts

        return ordered_counts(self.kind, self.counts or {}, self.count_order or ())

    def live(self) -> dict[str, Any]:
        """Progress and message, from the cache while the job runs inside a transaction."""
        if self.status == self.Status.RUNNING:
            cached = cache.get(self._cache_key)
            if cached:
                return cached
        return {"progress": self.progress, "message": self.message}


class PoolQuerySet(models.QuerySet["Pool"]):
    def managed_by(self, user: Any) -> PoolQuerySet:
        """Pools `user` may read and change as a manager (judgements with rater names, scores, releases,
        raters, gold, adjudication, runs, builds, managers): the pools they are a manager of; every pool
        for an admin; none for anyone anonymous. Managing a pool's collection does not make one a
        manager of the pool: a pool is its managers' own."""
        return _scoped(self, user, lambda: Q(pk__in=_managers_of(Pool, user)))

    def visible_to(self, user: Any) -> PoolQuerySet:
        """Pools `user` may see at all: the ones they manage and the ones they rate (a rater sees only
        the blind judging view of theirs)."""
        return _scoped(
            self,
            user,
            lambda: (
                Q(pk__in=_managers_of(Pool, user))
                | Q(pk__in=Pool.objects.filter(judging__raters=user.pk).values("pk"))
            ),
        )


class Pool(Owned):
    """A judging campaign over a collection's topics: contributing runs, strategy and its parameters."""

    class Strategy(models.TextChoices):
        DEPTH = "depth", "depth-k"
        MTF = "mtf", "move-to-front"
        MAXMEAN = "bandit-maxmean", "bandit (MaxMean)"
        THOMPSON = "bandit-thompson", "bandit (Thompson sampling)"
        CAL = "cal", "continuous active learning"

    class Status(models.TextChoices):
        DRAFT = "draft"
        BUILDING = "building"
        BUILT = "built"
        FAILED = "failed"

    # `description` is for managers only: it may name runs. Raters see `instructions`, written for them.
    instructions = models.TextField(
        blank=True, help_text="Shown to the pool's raters (the description is not): what to judge and how."
    )
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="pools")
    segment = models.CharField(
        max_length=100, blank=True, help_text="Only topics with this segment; blank for all topics."
    )
    runs = models.ManyToManyField(Run, through="PoolRun", related_name="pools", blank=True)
    strategy = models.CharField(max_length=20, choices=Strategy.choices, default=Strategy.DEPTH)
    depth = models.PositiveIntegerField(default=10)
    budget = models.PositiveIntegerField(
        null=True, blank=True, help_text="Judgement budget (items) for the adaptive strategies."
    )
    seed = models.IntegerField(default=0)
    judgements_per_item = models.PositiveSmallIntegerField(default=1)
    double_judge_fraction = models.FloatField(
        null=True,
        blank=True,
        help_text="If set, only this random fraction of items gets judgements_per_item judgements; "
        "the others need one.",
    )
    relevance_level = models.PositiveSmallIntegerField(default=1)
    price_per_judgement = models.DecimalField(max_digits=8, decimal_places=2, default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # Which BLIND_ORDER_KEY drew the items' blind order: a fingerprint of it (`pool_build.blind_order_id`),
    # never the key. A build under another key redraws the whole pool's order, so that no topic's order
    # mixes two keys.
    blind_order_id = models.CharField(max_length=16, blank=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    built_at = models.DateTimeField(null=True, blank=True)
    managers = managers_field(
        related_name="managed_pools",
        help_text="Who may see this pool's judgements, scores and releases, and change it (admins may).",
    )

    objects = PoolQuerySet.as_manager()

    @property
    def adaptive(self) -> bool:
        return self.strategy != self.Strategy.DEPTH

    def topics(self) -> list[Topic]:
        """The pool's topics: its collection's, those in its segment if it has one, by qid (`topics_of`)."""
        return Pool.topics_of([self])[0]

    @staticmethod
    def topics_of(pools: Iterable[Pool]) -> list[list[Topic]]:
        """`topics` of each of `pools`, in their order: one query over their collections' topics."""
        pools = list(pools)
        by_collection: dict[int, list[Topic]] = {pool.collection_id: [] for pool in pools}
        if by_collection:
            for topic in Topic.objects.filter(collection__in=list(by_collection)).order_by(
                "collection", "qid"
            ):
                by_collection[topic.collection_id].append(topic)
        return [
            tagged(by_collection[pool.collection_id], pool.segment)
            if pool.segment
            else list(by_collection[pool.collection_id])
            for pool in pools
        ]


class PoolRun(models.Model):
    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="pool_runs", db_index=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "run"], name="poolrun_unique")]

    def __str__(self) -> str:
        return f"{self.pool_id}:{self.run_id}"


# The rules of an item's judging, each written once here: as a Q (for filters and aggregates; the database
# stores LEASABLE on the row as the column `PoolItem.leasable`, which SQL and the progress tallies'
# triggers read), and as an instance method:
#
# - an item is JUDGED when it has the judgements it needs;
# - an item NEEDS A JUDGEMENT when it is gold (served to every rater) or its judgements plus its live
#   leases are fewer than it needs; a selected item that needs one is LEASABLE (may be leased to one more
#   rater), and the rater loop's walk in blind order reads an index of leasable items only (`PoolItem`);
# - an item is OPEN FOR a rater (needs one more judgement, from them) when it is leasable and the rater
#   neither holds, skipped nor judged it (an expired lease of theirs does not count).
#   `PoolItem.objects.open_for(rater)`; OPEN_FOR_SQL with the rater as `%(rater)s` (for a walk that stops
#   at the first open item: two index probes an item); OPEN_FOR_JOINED_SQL, the same rule in a query
#   that has joined the item's assignment `a` and judgement `j` of the rater (for a count over a whole
#   pool: one pass, where the probes of OPEN_FOR_SQL cost 100 ms on 21,000 items). It reads the judging
#   app's assignments and judgements through their relations to the item (nothing is imported from an
#   app after this one). tests/judgements/test_open_for.py holds the three to one answer;
#   tests/pooling/test_item_rules.py the Q, the column and the method to one.
# - an item LACKS judgements when its judgements plus its live leases are fewer than it needs (`LACKING`:
#   NEEDS_JUDGEMENT less the gold rule, for a gold item that has its judgements is served on but lacks none);
# - an item is STRANDED when it is selected and lacks more judgements than the pool's current raters
#   (`Judging.raters`) can still give it: a rater can when they neither hold, skipped nor judged it (OPEN
#   FOR's test of the rater; an expired lease of theirs does not count). The rater loop offers it to
#   nobody else, so it stays unfinished until the pool gets raters (or the item needs fewer judgements).
#   A rater excluded from the pool's releases (`judgements.exclusions`) still leases and judges, and their
#   judgements count in `num_judgements`: they count here too. `PoolItem.objects.stranded(pool)`;
#   tests/judgements/test_stranded_items.py.
# - an item's NEED is the judgements its pool's progress counts it for: its `required_judgements`, and for
#   a gold item at least one from every rater of its pool (`gold_need`, which `judgements.membership`
#   keeps), since every rater is served it. A judgement of a gold item then moves the progress bars as any
#   other does, up to the pool's raters: were it counted for its required judgements only, a rater alone on
#   a pool could tell a gold item by the bars standing still after judging it. The database stores NEED on
#   the row (`PoolItem.need`), which the progress statements, their tallies' triggers and the statistics
#   read. JUDGED and LACKING stay with `required_judgements`: a gold item is judged (for the qrels, the
#   statistics' judged items and the stranded) by its required judgements, as any other.
JUDGED = Q(num_judgements__gte=F("required_judgements"))
LACKING = Q(required_judgements__gt=F("num_judgements") + F("active_leases"))
NEEDS_JUDGEMENT = Q(gold=True) | LACKING
LEASABLE = Q(selected=True) & NEEDS_JUDGEMENT
NEED = Greatest(F("required_judgements"), F("gold_need"))
OPEN_FOR_SQL = """(pi.leasable
  AND NOT EXISTS (SELECT 1 FROM judgements_assignment a
                  WHERE a.item_id = pi.id AND a.rater_id = %(rater)s AND a.state <> 'expired')
  AND NOT EXISTS (SELECT 1 FROM judgements_judgement j WHERE j.item_id = pi.id AND j.rater_id = %(rater)s))"""
OPEN_FOR_JOINED_SQL = """(pi.leasable
  AND (a.id IS NULL OR a.state = 'expired') AND j.id IS NULL)"""
# STRANDED, the ids of the pool `%s` (four times) in one pass: the raters' (item, rater) pairs that take a
# rater out for an item, from the pool's assignments not expired and its people's judgements (UNION: a
# judged item's lease ended `done`, and the rater counts once), counted per item and joined to the items
# (hash joins over the pool's rows: 0.16 s on 100,000 items, where a subquery per item took 0.4 s, and
# 1.7 s with PostgreSQL's JIT). Portable SQL (SQLite runs it too).
STRANDED_SQL = """WITH raters AS (
  SELECT jr.user_id FROM judgements_judging_raters jr
  JOIN judgements_judging jg ON jg.id = jr.judging_id WHERE jg.pool_id = %s
), taken AS (
  SELECT t.item_id, COUNT(*) AS n FROM (
    SELECT a.item_id, a.rater_id FROM judgements_assignment a
    WHERE a.pool_id = %s AND a.state <> 'expired' AND a.rater_id IN (SELECT user_id FROM raters)
    UNION
    SELECT j.item_id, j.rater_id FROM judgements_judgement j JOIN pooling_poolitem ji ON ji.id = j.item_id
    WHERE ji.pool_id = %s AND j.kind = 'human' AND j.rater_id IN (SELECT user_id FROM raters)
  ) t GROUP BY t.item_id
)
SELECT pi.id FROM pooling_poolitem pi LEFT JOIN taken ON taken.item_id = pi.id
WHERE pi.pool_id = %s AND pi.selected AND pi.required_judgements > pi.num_judgements + pi.active_leases
  AND pi.required_judgements - pi.num_judgements - pi.active_leases
      > (SELECT COUNT(*) FROM raters) - COALESCE(taken.n, 0)"""


class PoolItemQuerySet(models.QuerySet["PoolItem"]):
    def selected(self) -> PoolItemQuerySet:
        """Items raters judge: every item of a depth pool; those chosen so far in an adaptive pool."""
        return self.filter(selected=True)

    def judged(self) -> PoolItemQuerySet:
        """Selected items that have every judgement they need (`JUDGED`)."""
        return self.filter(JUDGED, selected=True)

    def needing_judgement(self) -> PoolItemQuerySet:
        """Selected items that may be leased to one more rater (`LEASABLE`)."""
        return self.filter(leasable=True)

    def open_for(self, rater: Any) -> PoolItemQuerySet:
        """Items that need one more judgement and may be given to `rater` (OPEN FOR, above): selected,
        needing a judgement, not held, skipped or judged by them."""
        assignments = PoolItem._meta.get_field("assignments").related_model
        judgements = PoolItem._meta.get_field("judgements").related_model
        taken = assignments._default_manager.filter(item=OuterRef("pk"), rater=rater).exclude(state="expired")
        judged = judgements._default_manager.filter(item=OuterRef("pk"), rater=rater)
        return self.needing_judgement().exclude(Exists(taken)).exclude(Exists(judged))

    def stranded(self, pool: Pool) -> PoolItemQuerySet:
        """Items of `pool` that its current raters can no longer complete (STRANDED, above): selected,
        lacking judgements, and fewer raters left who could give one than it lacks. STRANDED_SQL, one
        statement whatever the pool's size."""
        ids = RawSQL(STRANDED_SQL, [pool.pk] * 4)  # noqa: S611 (a constant statement; the id is a parameter)
        return self.filter(pool=pool, pk__in=ids)


class PoolItem(models.Model):
    """A (topic, document) of a pool. Its provenance rows say which runs put it in, at which rank.

    `blind_key` is a keyed hash of the docid: the order raters see within a topic, which says nothing
    about runs or ranks. `num_judgements` and `active_leases` are kept by the judging services on the row
    itself, so that `SELECT ... FOR UPDATE SKIP LOCKED` re-checks them when a concurrent lease commits
    (and removing a run never deletes an item that has a judgement). `gold` items are served to every
    rater, unannounced. In an adaptive pool, `selected` marks the candidates the strategy has
    chosen for judging, in the order `selected_order`; the others stay `unpooled`.

    The foreign keys carry no database constraint (the pool services are the only writers; deleting a
    pool, topic or document cascades through Django's collector), and `pool` has no index of its own: the
    unique index (pool, topic, document) and the blind-order index both lead with it.
    """

    pool = unchecked_key(Pool, related_name="items")
    # No index of their own: the (pool, topic, ...) keys serve every read; only deleting a topic or a
    # document looks items up by them, and that is rare enough to scan for.
    topic = unchecked_key(Topic)
    document = unchecked_key(Document)
    blind_key = models.BigIntegerField(default=0)
    required_judgements = models.PositiveSmallIntegerField(default=1)
    num_judgements = models.PositiveIntegerField(default=0)
    active_leases = models.PositiveIntegerField(default=0, db_default=0)
    gold = models.BooleanField(default=False, db_default=False)
    selected = models.BooleanField(default=True)
    selected_order = models.PositiveIntegerField(null=True, blank=True)
    added_at = models.DateTimeField(default=timezone.now)
    # `LEASABLE`, kept by the database as the counters change. The blind order's index holds only these
    # rows: a lease walks it to the first item open for the rater without stepping over the judged and
    # fully leased ones before it (their number grows with the campaign's progress). An update of the
    # counters that leaves `leasable` as it was is still a HOT update (no index entry written).
    leasable = models.GeneratedField(
        expression=ExpressionWrapper(LEASABLE, output_field=models.BooleanField()),
        output_field=models.BooleanField(),
        db_persist=True,
    )
    # A gold item's raters (every rater of its pool is served it); 0 for any other item. Written by
    # `judgements.membership.count_gold_need` whenever gold labels or raters change (and 0 again by
    # `judgements.adjudication.remove_gold`).
    gold_need = models.PositiveIntegerField(default=0, db_default=0)
    # `NEED`, kept by the database: what the progress figures count the item for.
    need = models.GeneratedField(expression=NEED, output_field=models.PositiveIntegerField(), db_persist=True)

    objects = PoolItemQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["pool", "topic", "document"], name="poolitem_unique"),
        ]
        indexes = [
            models.Index(
                fields=["pool", "topic", "blind_key"],
                condition=Q(leasable=True),
                name="poolitem_leasable_order",
            )
        ]

    def __str__(self) -> str:
        return f"{self.pool.name}: {self.topic.qid}/{self.document.docid}"

    def needs_judgement(self) -> bool:
        """`NEEDS_JUDGEMENT` of this row as loaded."""
        return self.gold or self.num_judgements + self.active_leases < self.required_judgements


class Provenance(models.Model):
    """One (run, rank ≤ depth) that put an item in its pool.

    The key is (item, run), a composite primary key (migration 0017): nothing looks a row up by any other
    id. It is the only index (migration 0018): a pool build writes a quarter of a million of these rows,
    and each index more is an entry more per row. Every read goes from the pool's items to their
    provenance by the key (statistics, export, removing a run from a pool, adaptive selection,
    evaluation); only deleting a run looks provenance up by run alone, and scans for it (a rare
    operation, against the cost of every build). No database constraints on the foreign keys (written only
    by the pool services; cascades go through Django's collector).
    """

    pk = models.CompositePrimaryKey("item", "run")
    item = unchecked_key(PoolItem, related_name="provenance")
    run = unchecked_key(Run)
    rank = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"item {self.item_id} run {self.run_id} rank {self.rank}"

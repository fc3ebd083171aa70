"""Read-only figures about judging: per-rater statistics, accuracy against gold, and pool progress.

Nothing here writes; every function takes a pool (and a rater where it is about one rater) and answers with
plain dataclasses that views, the API and templates read.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import Count

from judgements import membership, rater_quality
from judgements.models import Assignment, GoldLabel, Judgement, Judging
from judgements.rater_quality import GoldAccuracy, known_seconds
from pooling.models import Pool, PoolItem

#: Who a row of a pool's table of raters is (`standing`).
Standing = Literal["rater", "crowd worker", "removed"]


def standing(*, member: bool, crowd_worker: bool) -> Standing:
    """Who a row of a pool's table of raters (the statistics page and API, the dashboard) is: ``rater``, a
    rater of the pool now (`Judging.raters`, as its judging page lists and counts them, a crowd worker made
    one among them); else ``crowd worker``, a crowd worker's account (`membership.crowd_worker_ids`), whose
    labels a crowd import brought without making them a rater; else ``removed``, one who judged the pool
    and is not a rater of it: a rater taken off it (`membership.remove_rater`), whose judgements stay."""
    if member:
        return "rater"
    return "crowd worker" if crowd_worker else "removed"


class Listed(Protocol):
    """A row of a table of raters: it has a `standing`."""

    @property
    def standing(self) -> Standing: ...


@dataclass(frozen=True)
class Headcount:
    """How many of each `standing` a pool's table of raters lists: what its header says, in one wording
    for every page (``5 raters, 2 crowd workers``; the raters always, the others when there are any)."""

    raters: int = 0
    crowd_workers: int = 0
    removed: int = 0

    def __str__(self) -> str:
        parts = [f"{self.raters} rater{'' if self.raters == 1 else 's'}"]
        if self.crowd_workers:
            parts.append(f"{self.crowd_workers} crowd worker{'' if self.crowd_workers == 1 else 's'}")
        if self.removed:
            parts.append(f"{self.removed} removed rater{'' if self.removed == 1 else 's'}")
        return ", ".join(parts)


def headcount(rows: Iterable[Listed]) -> Headcount:
    """The `Headcount` of a table's rows (`RaterStats`, the dashboard's `RaterLine`)."""
    counts = {"rater": 0, "crowd worker": 0, "removed": 0}
    for row in rows:
        counts[row.standing] += 1
    return Headcount(raters=counts["rater"], crowd_workers=counts["crowd worker"], removed=counts["removed"])


@dataclass
class RaterStats:
    """One rater's work in one pool.

    - `judgements`: the rater's current judgements in the pool (imported ones included);
    - `median_seconds`: the median of the judgements' known times (`rater_quality.known_seconds`: a
      label imported without a time, or given without one, is left out); None when there are none;
    - `grades`: grade value → how many of the rater's judgements carry it, highest grade first (every
      grade of the pool's rubric is present, with 0 when unused);
    - `unrateable`: how many judgements said "unrateable"; `unrateable_share` = unrateable / judgements;
    - `skips`: items the rater skipped in this pool;
    - `gold`: accuracy against the pool's gold labels (`gold_accuracy`);
    - `member`: whether the rater is still a rater of the pool (removed raters keep their judgements);
      `crowd_worker`: whether the account is a crowd worker's; `standing` says which of these the row is.
    """

    rater_id: int
    username: str
    member: bool
    crowd_worker: bool = False
    judgements: int = 0
    median_seconds: float | None = None
    grades: dict[int, int] = field(default_factory=dict)
    unrateable: int = 0
    skips: int = 0
    gold: GoldAccuracy = field(default_factory=GoldAccuracy)

    @property
    def unrateable_share(self) -> float | None:
        return self.unrateable / self.judgements if self.judgements else None

    @property
    def standing(self) -> Standing:
        return standing(member=self.member, crowd_worker=self.crowd_worker)

    def as_dict(self) -> dict[str, Any]:
        """The rater as the API and the pages show them (`RaterStatsBody`)."""
        return asdict(
            RaterStatsBody(
                rater=self.username,
                member=self.member,
                standing=self.standing,
                judgements=self.judgements,
                median_seconds=self.median_seconds,
                grades={str(grade): count for grade, count in sorted(self.grades.items())},
                unrateable=self.unrateable,
                unrateable_share=self.unrateable_share,
                skips=self.skips,
                gold=self.gold,
            )
        )


@dataclass(frozen=True)
class RaterStatsBody:
    """One rater's work in one pool (`RaterStats`, which defines each figure): `grades` by grade (every
    grade of the rubric, lowest first, 0 when unused); `median_seconds` and `unrateable_share` null while
    undefined; `member` whether the rater still rates the pool; `standing` who the row is (`standing`:
    ``rater``, ``crowd worker`` or ``removed``), as the pages label it."""

    rater: str
    member: bool
    standing: Standing
    judgements: int
    median_seconds: float | None
    grades: dict[str, int]
    unrateable: int
    unrateable_share: float | None
    skips: int
    gold: GoldAccuracy


def gold_accuracy(*, pool: Pool, rater: User | None = None) -> dict[int, GoldAccuracy]:
    """rater id → accuracy against the gold labels of `pool` (only raters who answered a gold item), by
    the one rule (`rater_quality.gold_accuracy`: every answer counts in `n`, an unrateable one is a miss),
    as the quality report's gold column gives it.

    A judgement counts when its item has a gold label now; the grade compared is the judgement's current
    grade (after revisions). `gold_accuracy_of` reads many pools at once."""
    return gold_accuracy_of(pools=[pool], rater=rater)[pool.pk]


def gold_accuracy_of(
    *, pools: Iterable[Pool], rater: User | None = None
) -> dict[int, dict[int, GoldAccuracy]]:
    """`gold_accuracy` of each of `pools`, by pool id: one query whatever their number."""
    pools = list(pools)
    rows = Judgement.objects.filter(item__pool__in=pools, item__gold_label__isnull=False)
    if rater is not None:
        rows = rows.filter(rater=rater)
    answers: dict[int, dict[int, list[tuple[int, int | None]]]] = {
        pool.pk: defaultdict(list) for pool in pools
    }
    for pool_id, rater_id, grade, unrateable, gold in rows.values_list(
        "item__pool_id", "rater_id", "grade", "unrateable", "item__gold_label__grade"
    ):
        answers[pool_id][rater_id].append((gold, None if unrateable else grade))
    return {
        pool_id: {rater_id: rater_quality.gold_accuracy(mine) for rater_id, mine in by_rater.items()}
        for pool_id, by_rater in answers.items()
    }


def rater_statistics(*, pool: Pool) -> list[RaterStats]:
    """Per-rater statistics (see `RaterStats`) for every current rater of the pool and every user who
    has a judgement in it, ordered by username."""
    judging = Judging.objects.select_related("rubric").filter(pool=pool).first()
    labels = judging.rubric.labels if judging else []
    members = set(judging.raters.values_list("pk", flat=True)) if judging else set()
    judged = set(Judgement.objects.filter(item__pool=pool).values_list("rater_id", flat=True).distinct())
    users = get_user_model().objects.filter(pk__in=members | judged).order_by("username")
    crowd = membership.crowd_worker_ids(members | judged)
    table = {
        user.pk: RaterStats(
            rater_id=user.pk,
            username=user.get_username(),
            member=user.pk in members,
            crowd_worker=user.pk in crowd,
            grades=dict.fromkeys(sorted(labels, reverse=True), 0),
        )
        for user in users
    }
    seconds: dict[int, list[float]] = defaultdict(list)
    for rater_id, grade, unrateable, spent in Judgement.objects.filter(item__pool=pool).values_list(
        "rater_id", "grade", "unrateable", "seconds"
    ):
        entry = table[rater_id]
        entry.judgements += 1
        if unrateable:
            entry.unrateable += 1
        elif grade is not None:
            entry.grades[grade] = entry.grades.get(grade, 0) + 1
        if (known := known_seconds(spent)) is not None:
            seconds[rater_id].append(known)
    for rater_id, values in seconds.items():
        table[rater_id].median_seconds = float(statistics.median(values))
    for rater_id, skips in (
        Assignment.objects.filter(item__pool=pool, state=Assignment.State.SKIPPED)
        .values_list("rater_id")
        .annotate(n=Count("id"))
    ):
        if rater_id in table:
            table[rater_id].skips = skips
    for rater_id, accuracy in gold_accuracy(pool=pool).items():
        table[rater_id].gold = accuracy
    return list(table.values())


@dataclass
class QueueJudgement:
    """One rater's label on an item in the adjudication queue (what the adjudicator reads)."""

    judgement_id: int
    rater: str
    grade: int | None
    unrateable: bool
    facets: dict[str, Any]
    note: str
    seconds: float
    updated_at: datetime


@dataclass
class QueueEntry:
    """An item of the adjudication queue with every grade, note and rater, and its gold grade if any."""

    item_id: int
    qid: str
    query: str
    docid: str
    title: str
    spread: int
    unrateable_votes: int
    gold: int | None
    judgements: list[QueueJudgement]


def queue_entries(rows: Iterable[dict[str, Any]]) -> list[QueueEntry]:
    """The details of some rows of `adjudication.queue_rows` (a page of them, or all), in their order:
    three queries, whatever the length of the queue they come from."""
    queue = list(rows)
    ids = [row["item_id"] for row in queue]
    items = PoolItem.objects.select_related("topic", "document").in_bulk(ids)
    gold = dict(GoldLabel.objects.filter(item_id__in=ids).values_list("item_id", "grade"))
    labels: dict[int, list[QueueJudgement]] = defaultdict(list)
    for judgement in (
        Judgement.objects.filter(item_id__in=ids)
        .select_related("rater")
        .order_by("item_id", "created_at", "id")
    ):
        labels[judgement.item_id].append(
            QueueJudgement(
                judgement_id=judgement.pk,
                rater=judgement.rater.get_username(),
                grade=judgement.grade,
                unrateable=judgement.unrateable,
                facets=judgement.facets,
                note=judgement.note,
                seconds=judgement.seconds,
                updated_at=judgement.updated_at,
            )
        )
    return [
        QueueEntry(
            item_id=row["item_id"],
            qid=items[row["item_id"]].topic.qid,
            query=items[row["item_id"]].topic.query,
            docid=items[row["item_id"]].document.docid,
            title=items[row["item_id"]].document.title,
            spread=row["spread"],
            unrateable_votes=row["unrateable_votes"],
            gold=gold.get(row["item_id"]),
            judgements=labels[row["item_id"]],
        )
        for row in queue
    ]

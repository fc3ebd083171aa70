"""The manager's dashboard: for every pool a user manages, how far judging has come (per topic and per
rater), the pace and when it will end at that pace, money spent against the estimate, who is working,
and what needs the manager (items the raters cannot complete, disputes to adjudicate, leases about to
expire, answers that miss the gold).

Every figure is read for all the manager's pools at once (`_boards`), by the batch form of its one-pool
rule (`judgement_totals_of`, `pool_shares`, `stranded_of`, `queue_counts_of`, `gold_accuracy_of`,
`pace_of`, `topic_counts_of`) or in one query grouped by pool: the page's queries do not grow with the
number of pools, and one pool's board (`pool_dashboard`) is the same reading of one pool.

Definitions:

- **done / needed**: judgements done, as the judging page's pool bar and the API's `progress` count them
  (`judgements.progress.pool_share`, of every pool at once `pool_shares`: over selected items, an item
  counting at most its need, `pooling.models.NEED`, so an item judged beyond it does not fill what another
  item lacks, and a gold item needs a judgement of every rater) / judgements required
  (`pooling.pool_reads.judgements_required`, as the statistics and the API's `progress.required` give
  them: an adaptive pool needs what its selected items need plus its plan, the expected judgements per
  item, for the rest of its budget); per topic, judged items / selected items.
- **pace**: judgements made in the last `PACE_WINDOW` divided by the hours from the first of them to now
  (at least `MIN_SPAN`, so one judgement a minute ago is not "3,600 an hour"); None without any.
- **stranded**: selected items that lack more judgements than the pool's current raters can still give
  them (the raters who have not judged such an item skipped it, or are too few: `PoolItem.objects.stranded`,
  where the rule is written), and the judgements they lack (`stranded_judgements`). Only a pool with
  judging set up has any (without, the attention says that no rater can start).
- **ETA**: now + (needed − done) / pace; None when nothing is left or there is no pace, and None while
  items are stranded: the work cannot finish with the current raters, whatever the pace. **ETA of the
  rest**: when the items that can be completed will be, now + (needed − done − stranded_judgements) / pace
  (None as the ETA); the page shows it beside the stranded items, so a manager who adds raters knows when
  the rest will be done.
- **spent**: judgements made (every one, each paid: `judgement_totals`' `judgements_done`) × price per
  judgement; **estimate**: judgement_totals' `cost` (judgements needed × price).
- **active raters**: raters of the pool with a live lease or a judgement in the last `ACTIVE_WINDOW` (an
  imported one makes no one active), of the pool's raters (its judging page's count).
- **per rater**: everyone with a judgement in the pool and every rater of it, each with their `standing`
  (`judgements.stats.standing`: a rater, a crowd worker, a removed rater; counted by `stats.headcount`, in
  the words of the statistics page) and their last judgement, imported ones included (a crowd worker's
  only judgements are imported: their last is when the import stored it).
- **attention**: stranded items (with the remedy: add raters; a built pool's judgements per item are
  fixed, so lowering them is not offered); the adjudication queue; live leases expiring within
  `EXPIRING_WITHIN`; judgements of gold items more than one grade from the gold grade (or unrateable), per
  rater.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, Max, Min, Q, Sum
from django.utils import timezone

from judgements import membership
from judgements.adjudication import queue_counts_of
from judgements.models import Assignment, Judgement, Judging
from judgements.progress import pool_shares
from judgements.stats import Headcount, Standing, gold_accuracy_of, headcount, standing
from pooling import stats
from pooling.models import Pool, PoolItem

PACE_WINDOW = timedelta(hours=24)
MIN_SPAN = timedelta(minutes=10)
ACTIVE_WINDOW = timedelta(minutes=30)
EXPIRING_WITHIN = timedelta(minutes=2)


@dataclass
class RaterLine:
    """One line of a pool's raters: `last`, their last judgement in the pool (imported ones included);
    `member`, a rater of the pool now; `crowd_worker`, a crowd worker's account (`standing` of the two)."""

    username: str
    judgements: int
    last: datetime | None
    active: bool
    gold_misses: int = 0
    member: bool = True
    crowd_worker: bool = False

    @property
    def standing(self) -> Standing:
        return standing(member=self.member, crowd_worker=self.crowd_worker)


@dataclass
class PoolDashboard:
    pool: Pool
    judging: bool
    done: int
    needed: int
    items_judged: int
    items_selected: int
    topics: list[stats.TopicCount]
    raters: list[RaterLine]
    pace: float | None
    eta: datetime | None
    spent: float
    estimate: float
    active_raters: int
    adjudication: int
    expiring_leases: int
    gold_misses: int
    stranded: int = 0
    stranded_judgements: int = 0
    eta_rest: datetime | None = None
    attention: list[str] = field(default_factory=list)

    @property
    def headcount(self) -> Headcount:
        """Who `raters` lists, counted as the statistics page counts them (`stats.headcount`)."""
        return headcount(self.raters)

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.needed) if self.needed else 0

    @property
    def left(self) -> int:
        return max(self.needed - self.done, 0)


def pace_per_hour(*, pool: Pool, now: datetime) -> float | None:
    """Judgements per hour over the last `PACE_WINDOW` (module docstring); None without any."""
    return pace_of(pools=[pool], now=now)[pool.pk]


def pace_of(*, pools: Iterable[Pool], now: datetime) -> dict[int, float | None]:
    """`pace_per_hour` of each of `pools`, by pool id: one GROUP BY over their recent judgements."""
    pools = list(pools)
    out: dict[int, float | None] = dict.fromkeys((pool.pk for pool in pools), None)
    window = Judgement.objects.filter(item__pool__in=pools, created_at__gte=now - PACE_WINDOW, imported=False)
    for recent in window.values("item__pool_id").annotate(n=Count("id"), first=Min("created_at")).order_by():
        span = max(now - recent["first"], MIN_SPAN)
        out[recent["item__pool_id"]] = recent["n"] / (span.total_seconds() / 3600)
    return out


def stranded(*, pool: Pool) -> dict[str, int]:
    """The pool's stranded items (`items`) and the judgements they lack (`judgements`, net of live
    leases), in one aggregate over `PoolItem.objects.stranded` (module docstring)."""
    return stranded_of(pools=[pool])[pool.pk]


#: Pools a statement of `stranded_of` reads at most (SQLite's compound SELECT has at most 500 terms).
STRANDED_CHUNK = 200


def stranded_of(*, pools: Iterable[Pool]) -> dict[int, dict[str, int]]:
    """`stranded` of each of `pools`, by pool id: one statement for up to `STRANDED_CHUNK` pools, a UNION
    ALL of each pool's aggregate over `PoolItem.objects.stranded` (where the rule is written), as the
    judging API's list of pools reads them."""
    pools = list(pools)
    out = {pool.pk: {"items": 0, "judgements": 0} for pool in pools}
    lacking = F("required_judgements") - F("num_judgements") - F("active_leases")
    for start in range(0, len(pools), STRANDED_CHUNK):
        first, *rest = [
            PoolItem.objects.stranded(pool)
            .values("pool_id")
            .annotate(n=Count("pk"), lacking=Sum(lacking))
            .order_by()
            for pool in pools[start : start + STRANDED_CHUNK]
        ]
        for row in first.union(*rest, all=True) if rest else first:
            out[row["pool_id"]] = {"items": row["n"], "judgements": int(row["lacking"] or 0)}
    return out


def pool_dashboard(*, pool: Pool, now: datetime | None = None) -> PoolDashboard:
    """Everything the dashboard shows for one pool (module docstring): `manager_dashboard`'s reading of
    one pool."""
    return _boards([pool], now or timezone.now())[0]


def _boards(pools: list[Pool], now: datetime) -> list[PoolDashboard]:
    """The `PoolDashboard` of each of `pools`, in their order: a dozen aggregate queries whatever their
    number, each grouped by pool (the batch forms of the one-pool rules)."""
    if not pools:
        return []
    totals = stats.judgement_totals_of(pools)
    shares = pool_shares(pool_ids=[pool.pk for pool in pools])
    # the pools with judging set up, with their raters (a row without any for a judging without raters)
    members: dict[int, dict[int, str]] = {}
    for pool_id, pk, username in Judging.objects.filter(pool__in=pools).values_list(
        "pool_id", "raters__id", "raters__username"
    ):
        members.setdefault(pool_id, {})
        if pk is not None:
            members[pool_id][pk] = username
    judged = [pool for pool in pools if pool.pk in members]
    leasing: dict[int, set[int]] = defaultdict(set)
    expiring: dict[int, int] = defaultdict(int)
    for lease in (
        Assignment.objects.filter(pool__in=pools, state=Assignment.State.ACTIVE, expires_at__gt=now)
        .values("pool_id", "rater_id")
        .annotate(expiring=Count("id", filter=Q(expires_at__lte=now + EXPIRING_WITHIN)))
        .order_by()
    ):
        leasing[lease["pool_id"]].add(lease["rater_id"])
        expiring[lease["pool_id"]] += lease["expiring"]
    per_rater: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for judged_by in (
        Judgement.objects.filter(item__pool__in=pools)
        .values("item__pool_id", "rater_id", "rater__username")
        # imported judgements count, but were not made here: they make no rater active, as no pace
        .annotate(n=Count("id"), last=Max("created_at"), here=Max("created_at", filter=Q(imported=False)))
        .order_by()
    ):
        per_rater[judged_by["item__pool_id"]].append(dict(judged_by))
    crowd = membership.crowd_worker_ids(
        {row["rater_id"] for rows in per_rater.values() for row in rows}
        | {pk for raters in members.values() for pk in raters}
    )
    gold = gold_accuracy_of(pools=pools)
    paces = pace_of(pools=pools, now=now)
    stuck_of = stranded_of(pools=judged)
    queues = queue_counts_of(pools=judged)
    topics = stats.topic_counts_of(pools)
    boards = []
    for pool in pools:
        live = leasing[pool.pk]
        misses = {rater: acc.n - acc.within_one for rater, acc in gold[pool.pk].items()}
        raters_now = members.get(pool.pk, {})
        lines: dict[int, RaterLine] = {}
        for row in per_rater[pool.pk]:
            pk = row["rater_id"]
            active = pk in live or (row["here"] is not None and row["here"] >= now - ACTIVE_WINDOW)
            lines[pk] = RaterLine(
                row["rater__username"], row["n"], row["last"], active, misses.get(pk, 0),
                member=pk in raters_now, crowd_worker=pk in crowd,
            )  # fmt: skip
        for pk, username in raters_now.items():
            lines.setdefault(pk, RaterLine(username, 0, None, pk in live, crowd_worker=pk in crowd))
        raters = sorted(lines.values(), key=lambda line: line.username)
        done, needed = shares[pool.pk]["done"], totals[pool.pk]["judgements_required"]
        pace = paces[pool.pk]
        left = max(needed - done, 0)
        stuck = stuck_of.get(pool.pk, {"items": 0, "judgements": 0})
        rest = max(left - stuck["judgements"], 0)
        eta_rest = now + timedelta(hours=rest / pace) if pace and rest else None
        board = PoolDashboard(
            pool=pool,
            judging=pool.pk in members,
            done=done,
            needed=needed,
            items_judged=totals[pool.pk]["judged"],
            items_selected=totals[pool.pk]["selected"],
            topics=topics[pool.pk],
            raters=raters,
            pace=pace,
            eta=None if stuck["items"] else eta_rest,
            spent=round(totals[pool.pk]["judgements_done"] * float(pool.price_per_judgement), 2),
            estimate=totals[pool.pk]["cost"],
            active_raters=sum(1 for line in raters if line.active and line.standing == "rater"),
            adjudication=queues.get(pool.pk, 0),
            expiring_leases=expiring[pool.pk],
            gold_misses=sum(misses.values()),
            stranded=stuck["items"],
            stranded_judgements=stuck["judgements"],
            eta_rest=eta_rest,
        )
        board.attention = _attention(board)
        boards.append(board)
    return boards


def _attention(board: PoolDashboard) -> list[str]:
    notes = []
    if board.pool.status != Pool.Status.BUILT:
        notes.append(f"the pool is {board.pool.status}: build it before judging")
    elif not board.judging:
        notes.append("judging is not set up: no rater can start")
    if board.stranded:
        n = board.stranded
        notes.append(
            f"{n} item{'s' if n != 1 else ''} cannot be completed by the current raters (skipped or "
            "already judged by all of them): add raters"
        )
    if board.adjudication:
        notes.append(f"{board.adjudication} item{'s' if board.adjudication != 1 else ''} to adjudicate")
    if board.expiring_leases:
        n = board.expiring_leases
        notes.append(
            f"{n} lease{'s' if n != 1 else ''} expiring within {EXPIRING_WITHIN.seconds // 60} minutes"
        )
    if board.gold_misses:
        n = board.gold_misses
        notes.append(f"{n} gold answer{'s' if n != 1 else ''} more than one grade off")
    if board.spent > board.estimate:
        notes.append("spent more than the estimate")
    return notes


def manager_dashboard(*, user: Any, now: datetime | None = None) -> list[PoolDashboard]:
    """The dashboard of every pool `user` manages (`Pool.objects.managed_by`), by name: the same dozen
    aggregate queries whatever the number of pools (`_boards`)."""
    now = now or timezone.now()
    pools = Pool.objects.managed_by(user).select_related("collection").order_by("name")
    return _boards(list(pools), now)

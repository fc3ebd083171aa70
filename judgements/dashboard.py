"""The manager's dashboard: for every pool a user manages, how far judging has come (per topic and per
rater), the pace and when it will end at that pace, money spent against the estimate, who is working,
and what needs the manager (items the raters cannot complete, disputes to adjudicate, leases about to
expire, answers that miss the gold).

Definitions:

- **done / needed**: judgements done, as the judging page's pool bar and the API's `progress` count them
  (`judgements.progress.pool_share`: over selected items, an item counting at most its required
  judgements, so a gold item judged by every rater or an item judged beyond its need does not fill what
  another item lacks) / judgements required (`pooling.pool_reads.judgements_required`, as the statistics
  and the API's `progress.required` give them: an adaptive pool needs what its selected items need plus
  its plan, the expected judgements per item, for the rest of its budget); per topic, judged items /
  selected items.
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
- **active raters**: raters with a live lease or a judgement in the last `ACTIVE_WINDOW`.
- **attention**: stranded items (with the remedy: add raters; a built pool's judgements per item are
  fixed, so lowering them is not offered); the adjudication queue; live leases expiring within
  `EXPIRING_WITHIN`; judgements of gold items more than one grade from the gold grade (or unrateable), per
  rater.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, F, Max, Min, Q, Sum
from django.utils import timezone

from judgements.adjudication import queue_rows
from judgements.models import Assignment, Judgement, Judging
from judgements.progress import pool_share
from judgements.stats import gold_accuracy
from pooling import stats
from pooling.models import Pool, PoolItem

PACE_WINDOW = timedelta(hours=24)
MIN_SPAN = timedelta(minutes=10)
ACTIVE_WINDOW = timedelta(minutes=30)
EXPIRING_WITHIN = timedelta(minutes=2)


@dataclass
class RaterLine:
    username: str
    judgements: int
    last: datetime | None
    active: bool
    gold_misses: int = 0


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
    def percent(self) -> int:
        return round(100 * self.done / self.needed) if self.needed else 0

    @property
    def left(self) -> int:
        return max(self.needed - self.done, 0)


def pace_per_hour(*, pool: Pool, now: datetime) -> float | None:
    """Judgements per hour over the last `PACE_WINDOW` (module docstring); None without any."""
    window = Judgement.objects.filter(item__pool=pool, created_at__gte=now - PACE_WINDOW, imported=False)
    recent = window.aggregate(n=Count("id"), first=Min("created_at"))
    if not recent["n"]:
        return None
    span = max(now - recent["first"], MIN_SPAN)
    return recent["n"] / (span.total_seconds() / 3600)


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
    """Everything the dashboard shows for one pool (module docstring), in a dozen aggregate queries."""
    now = now or timezone.now()
    totals = stats.judgement_totals(pool)
    price = float(pool.price_per_judgement)
    judging = Judging.objects.filter(pool=pool).first()
    live = Assignment.objects.filter(pool=pool, state=Assignment.State.ACTIVE, expires_at__gt=now)
    leasing = set(live.values_list("rater_id", flat=True))
    per_rater = (
        Judgement.objects.filter(item__pool=pool)
        .values("rater_id", "rater__username")
        # imported judgements count, but were not made here: they make no rater active, as no pace
        .annotate(n=Count("id"), last=Max("created_at", filter=Q(imported=False)))
        .order_by("rater__username")
    )
    members = dict(judging.raters.values_list("pk", "username")) if judging else {}
    misses = {rater: acc.n - acc.within_one for rater, acc in gold_accuracy(pool=pool).items()}
    lines: dict[int, RaterLine] = {}
    for row in per_rater:
        active = row["rater_id"] in leasing or (
            row["last"] is not None and row["last"] >= now - ACTIVE_WINDOW
        )
        lines[row["rater_id"]] = RaterLine(
            row["rater__username"], row["n"], row["last"], active, misses.get(row["rater_id"], 0)
        )
    for pk, username in members.items():
        lines.setdefault(pk, RaterLine(username, 0, None, pk in leasing))
    raters = sorted(lines.values(), key=lambda line: line.username)
    done, needed = pool_share(pool_id=pool.pk)["done"], totals["judgements_required"]
    pace = pace_per_hour(pool=pool, now=now)
    left = max(needed - done, 0)
    stuck = stranded(pool=pool) if judging else {"items": 0, "judgements": 0}
    rest = max(left - stuck["judgements"], 0)
    eta_rest = now + timedelta(hours=rest / pace) if pace and rest else None
    eta = None if stuck["items"] else eta_rest
    queue = queue_rows(pool=pool).count() if judging else 0
    expiring = live.filter(expires_at__lte=now + EXPIRING_WITHIN).count()
    gold_misses = sum(misses.values())
    board = PoolDashboard(
        pool=pool,
        judging=judging is not None,
        done=done,
        needed=needed,
        items_judged=totals["judged"],
        items_selected=totals["selected"],
        topics=stats.topic_counts(pool),
        raters=raters,
        pace=pace,
        eta=eta,
        spent=round(totals["judgements_done"] * price, 2),
        estimate=totals["cost"],
        active_raters=sum(1 for line in raters if line.active),
        adjudication=queue,
        expiring_leases=expiring,
        gold_misses=gold_misses,
        stranded=stuck["items"],
        stranded_judgements=stuck["judgements"],
        eta_rest=eta_rest,
    )
    board.attention = _attention(board)
    return board


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
    """The dashboard of every pool `user` manages (`Pool.objects.managed_by`), by name."""
    now = now or timezone.now()
    pools = Pool.objects.managed_by(user).select_related("collection").order_by("name")
    return [pool_dashboard(pool=pool, now=now) for pool in pools]

"""The judging API's progress of a pool (`GET /api/judging/`, `GET /api/judging/<pool>/`: `progress`): the
pool's figures as its page, the manager's dashboard and the judging page show them, and the requesting
user's own when they rate the pool. Every figure is read from the function that computes it for those
pages: `judgements.progress` (the bar: `done` of `need`, and the rater's counts) and
`pooling.stats.judgement_totals_of` (items, complete items, judgements made)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from django.contrib.auth.models import User

from judgements.models import Judging
from judgements.progress import progress_of
from pooling import stats as pool_stats


@dataclass
class Progress:
    """How far a pool's judging has come, overall and, for a rater of the pool, for the requesting user.

    - `items`: items selected for judging; `complete`: those with at least their required judgements;
    - `required`: the pool's judgements required (`pooling.pool_reads.judgements_required`: the sum of
      the selected items' need, `pooling.models.NEED`, which for a gold item is one judgement from every
      rater of the pool, and an adaptive pool's plan for the rest of its budget);
    - `judgements`: every judgement made in the pool (the pool page's "Judgements made"), an item judged
      beyond its need included;
    - `done`: the judgements that count toward `required`, an item counting at most its need (an item a
      crowd import judged once more than it needs does not fill what another item lacks; a gold item
      counts the judgement of every rater, so judging it moves the bar as judging any other item does):
      the "done" of the manager's dashboard, the judging page and the home page
      (`judgements.progress.pool_share`);
    - `fraction`: `done` / `required` (0 while none is required): their bars;
    - `mine`: the items of the pool the user has judged; null when the user is not a rater of the pool;
    - `left_for_me`: items the user could still be given now: selected, not judged or skipped by them, and
      gold or still short of judgements counting live leases; plus their own live lease (an adaptive pool
      may select more items later); null when the user is not a rater of the pool.
    """

    items: int
    complete: int
    required: int
    judgements: int
    done: int
    fraction: float
    mine: int | None
    left_for_me: int | None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": round(self.fraction, 4)}


def pool_progress(*, judging: Judging, user: User) -> Progress:
    """The `Progress` of the pool `judging` sets up, as `user` asks for it (`pool_progress_of`)."""
    return pool_progress_of(judgings=[judging], user=user)[judging.pool_id]


def pool_progress_of(*, judgings: Iterable[Judging], user: User) -> dict[int, Progress]:
    """`pool_progress` of each of `judgings` (with their pools loaded), by pool id, in three statements
    whatever their number: the bar and the rater's counts (`progress.progress_of`, a pass over their items
    as `progress.progress` with `tallied=False`), the items, complete items and judgements made
    (`pooling.stats.judgement_totals_of`), and the pools `user` rates (`Judging.objects.for_rater`),
    whose `mine` and `left_for_me` are the user's; null elsewhere."""
    judgings = list(judgings)
    pools = [judging.pool for judging in judgings]
    counts = progress_of(pool_ids=[pool.pk for pool in pools], user=user)
    totals = pool_stats.judgement_totals_of(pools)
    rated = set(
        Judging.objects.for_rater(user)
        .filter(pk__in=[judging.pk for judging in judgings])
        .values_list("pool_id", flat=True)
    )
    return {
        pool.pk: Progress(
            items=totals[pool.pk]["selected"],
            complete=totals[pool.pk]["judged"],
            required=counts[pool.pk]["need"],
            judgements=totals[pool.pk]["judgements_done"],
            done=counts[pool.pk]["done"],
            fraction=counts[pool.pk]["fraction"],
            mine=counts[pool.pk]["mine"] if pool.pk in rated else None,
            left_for_me=counts[pool.pk]["left"] if pool.pk in rated else None,
        )
        for pool in pools
    }

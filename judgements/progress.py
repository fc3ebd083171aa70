"""The rater's progress in a pool, as the judging page and the rater's home page show it (hand-written SQL:
the same aggregate through the ORM cost more to compile than to run).

On PostgreSQL one prepared statement (`_TALLIED_SQL`) reads the pool's figures from its tallies
(`ProgressTally`, which triggers keep on every change of an item) and the rater's from their own
assignments and judgements: its cost follows the pool's topics and the rater's work, not the pool's
items (a pass over 21,000 items took 17-40 ms, on each rater's refresh every 5 s). Elsewhere, one pass
over the pool's selected items (`_PROGRESS_SQL`), which tests compare the tallied figures with, and which
reads many pools at once (`progress_of`). Either reads the pool's plan in the same statement: the
pool's judgements required (`need`) are `pooling.pool_reads.judgements_required` of its selected items
(`selected`) and, for an adaptive pool, its plan for the rest of its budget, as its statistics and the
manager's dashboard say."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.utils import timezone

from judgements import leasing
from judgements.models import Judging
from judgements.prepared import PAGES_SQL, one_row
from pooling.models import OPEN_FOR_JOINED_SQL, Pool
from pooling.pool_reads import items_to_select, judgements_required

# The pool's plan, which an adaptive pool's judgements required read (`pool_reads.judgements_required`),
# read once per pool: its own fields, and its candidates (its items), counted for an adaptive pool only
# (`Pool.adaptive`: a depth pool's figure does not read them); `{cap}` is where the tallied statement caps
# that count (`_TALLIED_PLAN_SQL`).
_PLAN_SQL = """p.strategy, p.budget, p.judgements_per_item, p.double_judge_fraction,
  CASE WHEN p.strategy <> '{depth}'
       THEN (SELECT COUNT(*) FROM (SELECT 1 FROM pooling_poolitem c WHERE c.pool_id = p.id{cap}) c)
       ELSE 0 END""".replace("{depth}", Pool.Strategy.DEPTH.value)  # `Pool.adaptive`
# The pool's figures and the rater's of `progress`, of each pool `{pools}`, in one pass over their selected
# items (a pool without any still has its row).
_PROGRESS_SQL = """
SELECT
  p.id,
  SUM(pi.need),
  SUM(CASE WHEN pi.num_judgements < pi.need THEN pi.num_judgements
           ELSE pi.need END),
  SUM(CASE WHEN pi.topic_id = %(topic)s THEN pi.need ELSE 0 END),
  SUM(CASE WHEN pi.topic_id = %(topic)s THEN
        CASE WHEN pi.num_judgements < pi.need THEN pi.num_judgements
             ELSE pi.need END
      ELSE 0 END),
  COUNT(j.id),
  COUNT(CASE WHEN pi.topic_id = %(topic)s THEN j.id END),
  COUNT(CASE WHEN a.state = 'active' AND a.expires_at > %(now)s THEN 1 END),
  COUNT(CASE WHEN {open_for_joined} THEN 1 END),
  COUNT(pi.id),
  {plan}
FROM pooling_pool p
LEFT JOIN pooling_poolitem pi ON pi.pool_id = p.id AND pi.selected
LEFT JOIN judgements_assignment a ON a.item_id = pi.id AND a.rater_id = %(rater)s
LEFT JOIN judgements_judgement j ON j.item_id = pi.id AND j.rater_id = %(rater)s
WHERE p.id IN ({pools})
GROUP BY p.id, p.strategy, p.budget, p.judgements_per_item, p.double_judge_fraction
""".replace("{open_for_joined}", OPEN_FOR_JOINED_SQL).replace("{plan}", _PLAN_SQL.replace("{cap}", ""))
_PROGRESS_KEYS = (
    "need", "done", "topic_need", "topic_done", "mine", "mine_topic", "live", "open", "selected",
)  # fmt: skip
# The same counts: the pool's from its tallies (summed over the sessions' slots), the rater's from their
# judgements (`mine`) and their assignments not expired (`held`) on the pool's selected items. `open` is
# the items needing a judgement less those the rater holds, skipped or judged (OPEN_FOR_JOINED_SQL's
# complement among them: (item, rater) is unique for assignments and for judgements).
_TALLIED = """
WITH {ctes}mine AS (
  SELECT pi.id, pi.topic_id, pi.leasable AS needs
  FROM judgements_judgement j JOIN pooling_poolitem pi ON pi.id = j.item_id
  WHERE j.rater_id = %(rater)s AND pi.pool_id = {pool} AND pi.selected
),
held AS (
  SELECT pi.id, a.state, a.expires_at, pi.leasable AS needs
  FROM judgements_assignment a JOIN pooling_poolitem pi ON pi.id = a.item_id
  WHERE a.rater_id = %(rater)s AND pi.pool_id = {pool} AND pi.selected AND a.state <> 'expired'
),
tally AS (
  SELECT SUM(t.need) AS need, SUM(t.done) AS done,
    SUM(t.need) FILTER (WHERE t.topic_id = {topic}) AS topic_need,
    SUM(t.done) FILTER (WHERE t.topic_id = {topic}) AS topic_done, SUM(t.needing) AS needing,
    SUM(t.items) AS items
  FROM judgements_progresstally t WHERE t.pool_id = {pool}
),
plan AS (SELECT {plan} FROM pooling_pool p WHERE p.id = {pool})
SELECT tally.need, tally.done, tally.topic_need, tally.topic_done,
  (SELECT count(*) FROM mine), (SELECT count(*) FROM mine WHERE topic_id = {topic}),
  (SELECT count(*) FROM held WHERE state = 'active' AND expires_at > %(now)s),
  COALESCE(tally.needing, 0)
    - (SELECT count(*) FROM (SELECT id FROM mine WHERE needs UNION SELECT id FROM held WHERE needs) x),
  tally.items,
  plan.*,
  {columns}{pages}
FROM tally LEFT JOIN plan ON TRUE{where}
"""
# Here the candidates are counted up to the budget (when it has one): the plan takes at most `budget` of
# them, so its figure is the same, and an adaptive pool's refresh reads at most `budget` index entries.
_TALLIED_PLAN_SQL = _PLAN_SQL.replace("{cap}", " LIMIT NULLIF(p.budget, 0)")


def _tallied(*, ctes: str = "", pool: str, topic: str, columns: str = "", where: str = "") -> str:
    return (
        _TALLIED.replace("{ctes}", ctes).replace("{pool}", pool)
        .replace("{topic}", topic).replace("{columns}", columns).replace("{pages}", PAGES_SQL)
        .replace("{where}", where).replace("{plan}", _TALLIED_PLAN_SQL)
    )  # fmt: skip


_TALLIED_SQL = _tallied(pool="%(pool)s", topic="%(topic)s")
# The same for the page's refresh after a key press (`live_progress`): the pool by its name if the user
# rates it (no row otherwise), on the topic of their live lease (-1: none), which comes back as a column.
_LIVE_SQL = _tallied(
    ctes=f"""rated AS (SELECT p.id AS pool_id, {leasing.LIVE_ID_SQL} AS live_id
  {leasing.RATED_POOL_SQL.replace("{pool}", "p.name = %(pool_name)s")}
),
live AS (
  SELECT COALESCE((SELECT pi.topic_id FROM judgements_assignment a
                   JOIN pooling_poolitem pi ON pi.id = a.item_id
                   WHERE a.id = (SELECT live_id FROM rated)), -1) AS topic_id
),
""",
    pool="(SELECT pool_id FROM rated)",
    topic="(SELECT topic_id FROM live)",
    columns="(SELECT topic_id FROM live),\n  ",
    where="\nWHERE EXISTS (SELECT 1 FROM rated)",
)


def progress(*, judging: Judging, user: Any, topic_id: int | None, tallied: bool = True) -> dict[str, Any]:
    """Counts for the progress bars, in one query (see the module's docstring; `tallied=False` for the
    pass over the items on PostgreSQL too).

    - `done`/`need`: judgements made in the pool, where an item counts at most its need
      (`pooling.models.NEED`: its required judgements, a gold item's at least one from every rater of the
      pool, whom it is served to; so a judgement of a gold item moves the bars as any other's does, and a
      rater cannot tell a gold item by the bars) / the pool's judgements required
      (`judgements_required`: the selected items' need, and an adaptive pool's plan for the rest of its
      budget); `selected`: the pool's selected items;
      `topic_done`/`topic_need` within `topic_id`, over its selected items; `fraction` = done / need (0
      while nothing is needed), `percent`/`topic_percent` in whole percent.
    - `mine`: items this user has judged in the pool; `mine_topic` within the topic.
    - `live`: the user's live leases; `open`: items open for them (`PoolItem.objects.open_for`, as
      OPEN_FOR_JOINED_SQL over the joins below), which `lease_next` could still lease them; `left` =
      `open` + `live`; `to_select`: the items an adaptive pool's strategy has yet to select
      (`pool_reads.items_to_select`), which `lease_next` asks it for when nothing selected is open.

    The joins are one row per item: (item, rater) is unique for assignments and for judgements."""
    return _progress(pool_id=judging.pool_id, rater_id=user.pk, topic_id=topic_id, tallied=tallied)


#: The pool's own figures of `progress`: its bar, whoever reads it.
POOL_KEYS = ("need", "done", "fraction", "percent")


def pool_share(*, pool_id: int, tallied: bool = True) -> dict[str, Any]:
    """The pool's bar of `progress` (`need`, `done`, `fraction`, `percent`), read for no rater by the same
    statement: judgements made over selected items, an item counting at most its need
    (`pooling.models.NEED`: an item judged beyond it does not overfill the bar, and an unselected item of
    an adaptive pool counts nothing), of the pool's judgements required (`judgements_required`). What the
    manager's dashboard shows as judgements done (`pool_shares`, the same figures of many pools in one
    pass), as the judging page and the API's `progress.done` and `progress.fraction` do
    (`judgements.pool_progress`)."""
    counts = _progress(pool_id=pool_id, rater_id=_NO_RATER, topic_id=None, tallied=tallied)
    return {key: counts[key] for key in POOL_KEYS}


def pool_shares(*, pool_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """`pool_share` of each pool of `pool_ids`, by pool id: one pass over their selected items, in one
    statement whatever their number (the figures of `pool_share` with `tallied=False`, which the tallied
    ones equal)."""
    passes = _passes(pool_ids=list(pool_ids), rater_id=_NO_RATER, topic_id=None)
    return {pool_id: {key: counts[key] for key in POOL_KEYS} for pool_id, counts in passes.items()}


_NO_RATER = -1  # no account has this id: the rater's counts of `progress` are then zero


def _progress(*, pool_id: int, rater_id: int, topic_id: int | None, tallied: bool) -> dict[str, Any]:
    params: dict[str, Any] = {
        "pool": pool_id,
        "rater": rater_id,
        "topic": topic_id if topic_id is not None else -1,
        "now": timezone.now(),
    }
    if tallied and connection.vendor == "postgresql":
        return _counts(one_row(_TALLIED_SQL, params))
    return _passes(pool_ids=[pool_id], rater_id=rater_id, topic_id=topic_id)[pool_id]


def progress_of(*, pool_ids: Iterable[int], user: Any) -> dict[int, dict[str, Any]]:
    """`progress` of each pool of `pool_ids` for `user` (no topic), by pool id: one pass over their
    selected items, in one statement whatever their number (the judging API's list of pools; the same
    figures as `progress` with `tallied=False`, which reads one pool so)."""
    return _passes(pool_ids=list(pool_ids), rater_id=user.pk, topic_id=None)


def _passes(*, pool_ids: list[int], rater_id: int, topic_id: int | None) -> dict[int, dict[str, Any]]:
    out = {pool_id: _counts(_NOTHING) for pool_id in pool_ids}  # no such pool: nothing, as no item
    if not pool_ids:
        return out
    params: dict[str, Any] = {
        "rater": rater_id,
        "topic": topic_id if topic_id is not None else -1,
        "now": connection.ops.adapt_datetimefield_value(timezone.now()),
    }
    pools = ", ".join(str(int(pool_id)) for pool_id in pool_ids)
    with connection.cursor() as cursor:
        cursor.execute(_PROGRESS_SQL.replace("{pools}", pools), params)
        for row in cursor.fetchall():
            out[int(row[0])] = _counts(row[1:])
    return out


def live_progress(*, pool_name: str, user: Any, tallied: bool = True) -> dict[str, Any] | None:
    """`progress` as the judging page refreshes it after a key press: in the pool named `pool_name` if
    `user` rates it (`Judging.objects.for_rater`; None otherwise), on the topic of their live lease
    (`leasing.current_topic_id`), whose id comes back as `topic_id` (None: no live lease). On PostgreSQL
    the three are one prepared statement (`_LIVE_SQL`: the refresh follows nearly every key press of a
    rater who reads what they judge); elsewhere, or with `tallied=False`, three steps."""
    if not tallied or connection.vendor != "postgresql":
        judging = Judging.objects.for_rater(user).select_related("pool").filter(pool__name=pool_name).first()
        if judging is None:
            return None
        topic_id = leasing.current_topic_id(pool=judging.pool, rater=user)
        counts = progress(judging=judging, user=user, topic_id=topic_id, tallied=tallied)
        return {**counts, "topic_id": topic_id}
    row = one_row(_LIVE_SQL, {"pool_name": pool_name, "rater": user.pk, "now": timezone.now()})
    if row is None:
        return None
    topic_id = int(row[-1])
    return {**_counts(row[:-1]), "topic_id": None if topic_id == -1 else topic_id}


_NOTHING = (0,) * len(_PROGRESS_KEYS) + (None,) * 5


def _counts(row: Any) -> dict[str, Any]:
    """The counts of `_PROGRESS_KEYS` in `row`, followed by the pool's plan (`_PLAN_SQL`), whose
    judgements required (`judgements_required`) `need` then is."""
    keys = len(_PROGRESS_KEYS)
    counts: dict[str, Any] = {
        key: int(value or 0) for key, value in zip(_PROGRESS_KEYS, row[:keys], strict=True)
    }
    strategy, budget, per_item, fraction, candidates = row[keys:]
    counts["to_select"] = 0
    if strategy is not None:  # (None: no such pool)
        plan = Pool(
            strategy=strategy, budget=budget, judgements_per_item=per_item, double_judge_fraction=fraction
        )
        counts["need"] = judgements_required(
            pool=plan,
            candidates=int(candidates or 0),
            selected_need=counts["need"],
            selected_items=counts["selected"],
        )
        counts["to_select"] = items_to_select(
            pool=plan, candidates=int(candidates or 0), selected_items=counts["selected"]
        )
    counts["left"] = counts["open"] + counts["live"]
    counts["fraction"] = counts["done"] / counts["need"] if counts["need"] else 0.0
    counts["percent"] = round(100 * counts["fraction"])
    topic_need = counts["topic_need"]
    counts["topic_percent"] = round(100 * counts["topic_done"] / topic_need) if topic_need else 0
    return counts

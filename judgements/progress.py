"""The rater's progress in a pool, as the judging page and the rater's home page show it: one query over the
pool's selected items (hand-written SQL: the same aggregate through the ORM cost more to compile than to
run, on every key press)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.utils import timezone

from judgements.models import Judging
from pooling.models import OPEN_FOR_JOINED_SQL

_PROGRESS_SQL = """
SELECT
  SUM(pi.required_judgements),
  SUM(CASE WHEN pi.num_judgements < pi.required_judgements THEN pi.num_judgements
           ELSE pi.required_judgements END),
  SUM(CASE WHEN pi.topic_id = %(topic)s THEN pi.required_judgements ELSE 0 END),
  SUM(CASE WHEN pi.topic_id = %(topic)s THEN
        CASE WHEN pi.num_judgements < pi.required_judgements THEN pi.num_judgements
             ELSE pi.required_judgements END
      ELSE 0 END),
  COUNT(j.id),
  COUNT(CASE WHEN pi.topic_id = %(topic)s THEN j.id END),
  COUNT(CASE WHEN a.state = 'active' AND a.expires_at > %(now)s THEN 1 END),
  COUNT(CASE WHEN {open_for_joined} THEN 1 END)
FROM pooling_poolitem pi
LEFT JOIN judgements_assignment a ON a.item_id = pi.id AND a.rater_id = %(rater)s
LEFT JOIN judgements_judgement j ON j.item_id = pi.id AND j.rater_id = %(rater)s
WHERE pi.pool_id = %(pool)s AND pi.selected
""".replace("{open_for_joined}", OPEN_FOR_JOINED_SQL)
_PROGRESS_KEYS = ("need", "done", "topic_need", "topic_done", "mine", "mine_topic", "live", "open")


def progress(*, judging: Judging, user: Any, topic_id: int | None) -> dict[str, Any]:
    """Counts for the progress bars, in one query over the pool's selected items (hand-written SQL:
    the same aggregate through the ORM cost more to compile than to run, on every key press).

    - `done`/`need`: judgements made / needed in the pool, where an item counts at most its
      `required_judgements` (a gold item shown to everyone does not overfill the bar); `topic_done`/
      `topic_need` the same within `topic_id`; `percent`/`topic_percent` rounded.
    - `mine`: items this user has judged in the pool; `mine_topic` within the topic.
    - `live`: the user's live leases; `open`: items open for them (`PoolItem.objects.open_for`, as
      OPEN_FOR_JOINED_SQL over the joins below), which `lease_next` could still lease them; `left` =
      `open` + `live`.

    The joins are one row per item: (item, rater) is unique for assignments and for judgements."""
    params = {
        "pool": judging.pool_id,
        "rater": user.pk,
        "topic": topic_id if topic_id is not None else -1,
        "now": connection.ops.adapt_datetimefield_value(timezone.now()),
    }
    with connection.cursor() as cursor:
        cursor.execute(_PROGRESS_SQL, params)
        row = cursor.fetchone()
    counts: dict[str, Any] = {key: int(value or 0) for key, value in zip(_PROGRESS_KEYS, row, strict=True)}
    counts["left"] = counts["open"] + counts["live"]
    counts["percent"] = round(100 * counts["done"] / counts["need"]) if counts["need"] else 100
    counts["topic_percent"] = (
        round(100 * counts["topic_done"] / counts["topic_need"]) if counts["topic_need"] else 100
    )
    return counts

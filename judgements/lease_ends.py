"""How a lease ends other than by a judgement (`submission.submit_label` ends it so): given back by its
rater (`skip_item`), or past its time (`sweep_expired_leases` for every pool, the periodic task and the
admin's action; `expire_lapsed` for one rater's, before their next lease)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from judgements.errors import JudgingError
from judgements.models import Assignment
from pooling.models import Pool, PoolItem


def expire_lapsed(*, pool: Pool, rater: User) -> None:
    """End the rater's leases in `pool` that are past their time but not yet swept."""
    with transaction.atomic():
        for assignment in Assignment.objects.select_for_update().filter(
            pool=pool, rater=rater, state=Assignment.State.ACTIVE, expires_at__lte=timezone.now()
        ):
            end_lease(assignment, Assignment.State.EXPIRED)


def end_lease(assignment: Assignment, state: str) -> None:
    """End a lease (the assignment locked by the caller) in `state`: a live one gives its item's lease
    back."""
    if assignment.state == Assignment.State.ACTIVE:
        PoolItem.objects.filter(pk=assignment.item_id).update(active_leases=F("active_leases") - 1)
    assignment.state = state
    assignment.save(update_fields=["state"])


def skip_item(*, assignment: Assignment) -> None:
    """Give an item back: the lease ends and this rater is not offered it again."""
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
        if locked.state != Assignment.State.ACTIVE:
            raise JudgingError("this item is no longer leased to you")
        end_lease(locked, Assignment.State.SKIPPED)


def sweep_expired_leases(*, now: Any = None, pools: Any = None) -> int:
    """Expire leases past their time and give their items back: of every pool, or of `pools` (a Pool
    queryset: the admin's action sweeps the pools its user manages). Returns how many expired."""
    now = now or timezone.now()
    leases = Assignment.objects.filter(state=Assignment.State.ACTIVE, expires_at__lte=now)
    if pools is not None:
        leases = leases.filter(pool__in=pools.values("pk"))
    with transaction.atomic():
        expired = list(leases.select_for_update(skip_locked=True).values_list("id", "item_id"))
        if not expired:
            return 0
        Assignment.objects.filter(pk__in=[pk for pk, _ in expired]).update(state=Assignment.State.EXPIRED)
        per_item = Counter(item_id for _, item_id in expired)
        by_count: dict[int, list[int]] = {}
        for item_id, count in per_item.items():
            by_count.setdefault(count, []).append(item_id)
        for count, item_ids in by_count.items():
            PoolItem.objects.filter(pk__in=item_ids).update(active_leases=F("active_leases") - count)
    return len(expired)

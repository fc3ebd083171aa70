"""Excluding a rater's labels from a pool's releases, and restoring them: one click, recorded, reversible.

An active exclusion removes the rater's judgements from what every release, the current qrels, the
agreement summary of a release and the noise floor read (`release_rows.stream_items` is the one reader,
and leaves them out there); the judgements themselves stay, so restoring brings them back unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from judgements.errors import JudgingError
from judgements.models import Judgement, RaterExclusion
from pooling.models import Pool


@dataclass(frozen=True)
class ExclusionRecord:
    """An exclusion of a rater's labels from a pool's releases: who excluded them, when and why, who
    restored them and when (null while it stands), and whether it stands now (`active`)."""

    rater: str
    reason: str
    excluded_by: str | None
    excluded_at: datetime
    restored_by: str | None
    restored_at: datetime | None
    active: bool


def exclusion_record(row: RaterExclusion) -> dict[str, Any]:
    """An exclusion as the API answers it (`ExclusionRecord`); an account since deleted is null."""
    return asdict(
        ExclusionRecord(
            rater=row.rater.username,
            reason=row.reason,
            excluded_by=row.excluded_by.username if row.excluded_by else None,
            excluded_at=row.excluded_at,
            restored_by=row.restored_by.username if row.restored_by else None,
            restored_at=row.restored_at,
            active=row.active,
        )
    )


def pool_raters(*, pool: Pool) -> QuerySet[User]:
    """The accounts a pool's managers may exclude or restore: those with a judgement in the pool or an
    exclusion from it. Every page and API call that names a rater to exclude or restore (by username or
    by id) finds them here, so anyone else is not found, as if no such account existed."""
    judged = Judgement.objects.filter(item__pool=pool, rater=OuterRef("pk"))
    excluded = RaterExclusion.objects.filter(pool=pool, rater=OuterRef("pk"))
    return User.objects.filter(Exists(judged) | Exists(excluded))


def excluded_rater_ids(*, pool: Pool) -> set[int]:
    """The raters whose labels the pool's releases leave out right now."""
    return set(_excluded(pool).values_list("rater_id", flat=True))


def counted_judgements(*, pool: Pool) -> QuerySet[Judgement]:
    """The judgements of `pool` that count: people's (`Judgement.objects`) of raters not excluded now, as a
    release reads them (`release_rows.current_judgements_join` is this rule in SQL, for its readers):
    `counted_judgements_of` one pool."""
    return counted_judgements_of(pools=[pool])


def counted_judgements_of(*, pools: Iterable[Pool]) -> QuerySet[Judgement]:
    """`counted_judgements` of all of `pools` in one query set: each pool's judgements but those of the
    raters excluded from that pool now (the manager's dashboard counts every pool's disputes so)."""
    excluded = _excluded_now().filter(pool_id=OuterRef("item__pool_id"), rater_id=OuterRef("rater_id"))
    return Judgement.objects.filter(item__pool__in=list(pools)).exclude(Exists(excluded))


def _excluded(pool: Pool) -> QuerySet[RaterExclusion]:
    return _excluded_now().filter(pool=pool)


def _excluded_now() -> QuerySet[RaterExclusion]:
    """The exclusions in force: not restored."""
    return RaterExclusion.objects.filter(restored_at__isnull=True)


@transaction.atomic
def exclude_rater(*, pool: Pool, rater: User, by: User | None, reason: str = "") -> RaterExclusion:
    """Leave `rater`'s labels out of `pool`'s releases from now on (refused if they have no judgement in
    the pool, or are excluded already)."""
    if not Judgement.objects.filter(item__pool=pool, rater=rater).exists():
        raise JudgingError(f"{rater.username} has no judgement in {pool.name}")
    try:
        with transaction.atomic():
            return RaterExclusion.objects.create(pool=pool, rater=rater, excluded_by=by, reason=reason[:500])
    except IntegrityError:
        raise JudgingError(f"{rater.username} is excluded from {pool.name} already") from None


@transaction.atomic
def restore_rater(*, pool: Pool, rater: User, by: User | None) -> RaterExclusion:
    """Count `rater`'s labels in `pool`'s releases again (refused if they are not excluded)."""
    exclusion = (
        RaterExclusion.objects.select_for_update()
        .filter(pool=pool, rater=rater, restored_at__isnull=True)
        .first()
    )
    if exclusion is None:
        raise JudgingError(f"{rater.username} is not excluded from {pool.name}")
    exclusion.restored_at = timezone.now()
    exclusion.restored_by = by
    exclusion.save(update_fields=["restored_at", "restored_by"])
    return exclusion

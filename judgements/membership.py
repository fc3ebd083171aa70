"""Who judges a pool: its judging set-up (rubric, lease length, adjudication gap) and its raters."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from judgements.leasing import end_lease
from judgements.models import (
    Assignment,
    Judging,
    Rubric,
)
from judgements.rubrics import default_rubric
from pooling.models import Pool


def setup_judging(
    *,
    pool: Pool,
    rubric: Rubric | None = None,
    raters: Iterable[AbstractBaseUser] = (),
    lease_minutes: int | None = None,
    adjudication_gap: int | None = None,
) -> Judging:
    """Give a pool its rubric and raters (idempotent: updates an existing setup, adds raters)."""
    from django.conf import settings

    judging, _ = Judging.objects.get_or_create(
        pool=pool,
        defaults={
            "rubric": rubric or default_rubric(),
            "lease_minutes": lease_minutes or settings.LEASE_MINUTES,
            "adjudication_gap": 2 if adjudication_gap is None else adjudication_gap,
        },
    )
    changed = False
    if rubric is not None and judging.rubric_id != rubric.id:
        judging.rubric = rubric
        changed = True
    if lease_minutes is not None and judging.lease_minutes != lease_minutes:
        judging.lease_minutes = lease_minutes
        changed = True
    if adjudication_gap is not None and judging.adjudication_gap != adjudication_gap:
        judging.adjudication_gap = adjudication_gap
        changed = True
    if changed:
        judging.save()
    raters = list(raters)
    if raters:
        judging.raters.add(*raters)
    return judging


def remove_rater(*, pool: Pool, rater: AbstractBaseUser) -> None:
    """Take a rater off a pool: their live leases are released, their judgements stay."""
    with transaction.atomic():
        judging = Judging.objects.get(pool=pool)
        judging.raters.remove(rater)
        for assignment in Assignment.objects.filter(
            item__pool=pool, rater=rater, state=Assignment.State.ACTIVE
        ).select_for_update():
            end_lease(assignment, Assignment.State.EXPIRED)

"""Who judges a pool: its judging set-up (rubric, lease length, adjudication gap) and its raters."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from judgements.errors import JudgingError
from judgements.lease_ends import end_lease
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
    raters: Iterable[User] = (),
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


def remove_rater(*, pool: Pool, rater: User) -> None:
    """Take a rater off a pool: their live leases are released, their judgements stay."""
    with transaction.atomic():
        judging = Judging.objects.get(pool=pool)
        judging.raters.remove(rater)
        for assignment in Assignment.objects.filter(
            item__pool=pool, rater=rater, state=Assignment.State.ACTIVE
        ).select_for_update():
            end_lease(assignment, Assignment.State.EXPIRED)


def create_rater_account(*, username: str, password: str | None) -> User:
    """Create the account of a rater (no role: a rater is any user added to a pool's raters).

    The password must pass the project's password validators; None gives the account no usable password
    (an admin or the password-reset page sets one). Refused (JudgingError) for a taken username."""
    users = get_user_model()
    username = username.strip()
    if not username:
        raise JudgingError("a username is needed")
    if users.objects.filter(username=username).exists():
        raise JudgingError(f"a user named {username!r} exists already: add them as an existing user")
    user = users(username=username)
    if password is None:
        user.set_unusable_password()
    else:
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise JudgingError(f"password refused for {username!r}: {' '.join(exc.messages)}") from None
        user.set_password(password)
    user.save()
    return user

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


class AccountRefused(JudgingError):
    """A new account was refused; `field` names what is wrong (``username`` or ``password``: the form's
    field, the API's 400). Nothing was created."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


def check_username(username: str) -> str:
    """The username a new account gets for `username`, if Django's own rules take it: stripped and
    NFKC-normalised (as `create_user` and the login form do, so the rater can log in with it), then the
    user model's username field validators (letters, digits and ``@.+-_`` only) and its max_length (150).
    AccountRefused naming the field otherwise.

    The one rule for every account the judging app makes (the judging page, ``add_raters --create``, a
    crowd import's new workers): a name outside it (``a/b``, ``sp ace``, ``<b>x</b>``) cannot be put in the
    URLs of the pages that list raters."""
    users = get_user_model()
    name = users.normalize_username(username.strip())
    if not name:
        raise AccountRefused("username", "a username is needed")
    field = users._meta.get_field(users.USERNAME_FIELD)
    try:
        field.run_validators(name)  # type: ignore[union-attr]  # a model field, not a relation
    except ValidationError as exc:
        shown = name if len(name) <= 40 else f"{name[:40]}…"
        raise AccountRefused("username", f"username {shown!r} refused: {' '.join(exc.messages)}") from None
    return name


def create_rater_account(*, username: str, password: str | None) -> User:
    """Create the account of a rater (no role: a rater is any user added to a pool's raters).

    The username must pass :func:`check_username` (it is stored as that returns it); the password must
    pass the project's password validators; None gives the account no usable password (an admin or the
    password-reset page sets one). Refused (AccountRefused, naming the field; nothing created) otherwise,
    and for a taken username."""
    users = get_user_model()
    username = check_username(username)
    if users.objects.filter(username=username).exists():
        raise AccountRefused(
            "username", f"a user named {username!r} exists already: add them as an existing user"
        )
    user = users(username=username)
    if password is None:
        user.set_unusable_password()
    else:
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise AccountRefused(
                "password", f"password refused for {username!r}: {' '.join(exc.messages)}"
            ) from None
        user.set_password(password)
    user.save()
    return user

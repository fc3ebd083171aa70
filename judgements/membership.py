"""Who judges a pool: its judging set-up (rubric, lease length, adjudication gap) and its raters; the
accounts made for them (a person's, `create_rater_account`; a crowd worker's, `create_worker_account`)."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet

from judgements.errors import JudgingError
from judgements.lease_ends import end_lease
from judgements.models import (
    Adjudication,
    Assignment,
    CrowdWorker,
    GoldLabel,
    Judgement,
    Judging,
    Rubric,
)
from judgements.rubrics import default_rubric, widest_gap_of
from pooling.models import Pool, PoolItem, column_problems


def may_rate() -> QuerySet[User]:
    """The accounts that may be a pool's raters: active ones (a model judge's account never is), but a
    crowd worker's (`create_worker_account`: it never logs in, and a rater who cannot would leave the gold
    items and the items only they could finish waiting for them). `setup_judging` refuses anyone else,
    whoever asks."""
    return get_user_model().objects.filter(is_active=True, crowd_worker__isnull=True)


def managers_may_add() -> QuerySet[User]:
    """The accounts a manager may add as raters, on the page and through the API: those that may rate, but
    admins (who see every pool's sources and ranks; an admin who wants to rate is made a rater from the
    command line, `add_raters`, or by the service)."""
    return may_rate().filter(is_superuser=False)


def setup_judging(
    *,
    pool: Pool,
    rubric: Rubric | None = None,
    raters: Iterable[User] = (),
    lease_minutes: int | None = None,
    adjudication_gap: int | None = None,
) -> Judging:
    """Give a pool its rubric and raters (idempotent: updates an existing setup, adds raters). Moving a pool
    to a rubric that lacks a grade its judgements, gold labels or decisions carry is refused
    (`grades_outside`): every reader of them (agreement, rater quality, releases) takes the rubric's
    labels as the full set. An adjudication gap wider than the rubric's grades can differ by is refused
    (`check_adjudication_gap`), whether the gap is given or the rubric is changed under the pool's gap: the
    refusal names ``adjudication_gap``, to be lowered with the rubric. A new setup given no gap takes
    `default_adjudication_gap` of its rubric."""
    from django.conf import settings

    for name, value in (("lease_minutes", lease_minutes), ("adjudication_gap", adjudication_gap)):
        # the column's bounds (`Judging.MAX_*`), for every caller
        if value is not None and (messages := column_problems(Judging, name, value)):
            raise JudgingError("; ".join(messages), field=name)
    current = Judging.objects.filter(pool=pool).select_related("rubric").first()
    chosen = rubric or (current.rubric if current is not None else default_rubric())
    if adjudication_gap is not None:
        gap = adjudication_gap
    else:
        gap = current.adjudication_gap if current is not None else default_adjudication_gap(chosen)
    moved = current is not None and current.rubric_id != chosen.id
    if moved and (missing := grades_outside(pool=pool, rubric=chosen)):
        raise JudgingError(
            f"{chosen} has no grade {', '.join(map(str, missing))}, which this pool's labels carry",
            field="rubric",
        )
    if adjudication_gap is not None or current is None or moved:
        # only when the gap or the rubric is set: adding raters is never refused for an old gap
        check_adjudication_gap(rubric=chosen, gap=gap, kept=adjudication_gap is None)
    judging = current
    if judging is None:
        defaults = {"rubric": chosen, "lease_minutes": lease_minutes or settings.LEASE_MINUTES}
        judging, _ = Judging.objects.get_or_create(pool=pool, defaults={**defaults, "adjudication_gap": gap})
    changed = False
    if rubric is not None and judging.rubric_id != rubric.id:  # checked above (`grades_outside`)
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
        allowed = set(may_rate().filter(pk__in=[rater.pk for rater in raters]).values_list("pk", flat=True))
        if barred := [rater.get_username() for rater in raters if rater.pk not in allowed]:
            raise JudgingError(
                f"{', '.join(map(repr, barred))} cannot rate: an inactive account (a model judge's is one)"
                " or a crowd worker's (who never logs in)",
                field="raters",
            )
        judging.raters.add(*raters)
        count_gold_need(pool_id=pool.pk)
    return judging


def count_gold_need(*, pool_id: int) -> None:
    """Give each gold item of the pool `pool_id` the pool's number of raters as its `gold_need` (every
    rater is served a gold item, so the progress bars count it for each: `pooling.models.NEED`). Called
    whenever a gold label is set and whenever raters join or leave; `adjudication.remove_gold` gives the
    item it takes the label from 0 again, in the statement that unmarks it."""
    raters = Judging.raters.through.objects.filter(judging__pool_id=pool_id).count()
    PoolItem.objects.filter(pool_id=pool_id, gold=True).exclude(gold_need=raters).update(gold_need=raters)


@dataclass(frozen=True)
class RatersAdded:
    """What `add_raters` did: `added`, the accounts it made raters of the pool; `already`, those that were
    raters of it before (left as they were); each in the order given."""

    judging: Judging
    added: list[User]
    already: list[User]


def add_raters(*, pool: Pool, raters: Iterable[User]) -> RatersAdded:
    """Make `raters` raters of `pool` by `setup_judging` (its refusals; judging set up with the default
    rubric if the pool has none), and say which of them were raters of it already: what the judging page
    and ``add_raters`` tell the manager, who would otherwise read "added" for someone already there."""
    wanted = list({rater.pk: rater for rater in raters}.values())
    with transaction.atomic():
        current = Judging.objects.filter(pool=pool).first()
        before = (
            set(current.raters.filter(pk__in=[rater.pk for rater in wanted]).values_list("pk", flat=True))
            if current is not None
            else set()
        )
        judging = setup_judging(pool=pool, raters=wanted)
    return RatersAdded(
        judging=judging,
        added=[rater for rater in wanted if rater.pk not in before],
        already=[rater for rater in wanted if rater.pk in before],
    )


#: The adjudication gap of a new setup given none (lowered to what its rubric allows: `widest_gap`).
DEFAULT_ADJUDICATION_GAP = 2


def widest_gap(rubric: Rubric) -> int:
    """The widest adjudication gap `rubric` allows (`rubrics.widest_gap_of` its grades)."""
    return widest_gap_of(rubric.labels)


def default_adjudication_gap(rubric: Rubric) -> int:
    """The gap a new setup with `rubric` takes when given none (and the set-up page offers): 2, or
    `widest_gap` when that is smaller (1 for a two-grade rubric)."""
    return min(DEFAULT_ADJUDICATION_GAP, widest_gap(rubric))


def check_adjudication_gap(*, rubric: Rubric, gap: int, kept: bool = False) -> None:
    """JudgingError naming ``adjudication_gap`` when `gap` is wider than `rubric` allows (`widest_gap`):
    no two grades would ever differ by it, and no item would go to adjudication for its grades. `kept`: the
    gap is the pool's, not given with `rubric` (the message says to lower it with the rubric)."""
    widest = widest_gap(rubric)
    if gap <= widest:
        return
    labels = rubric.labels
    span = f"its grades run from {labels[0]} to {labels[-1]}" if labels else "it has no grades"
    if kept:
        message = (
            f"this pool's gap, {gap}, is wider than rubric {rubric} allows ({span}): set a gap of at most "
            f"{widest} with the rubric"
        )
    else:
        message = (
            f"at most {widest} with rubric {rubric} ({span}): a gap of {gap} would never send an item "
            "to adjudication"
        )
    raise JudgingError(message, field="adjudication_gap")


def grades_outside(*, pool: Pool, rubric: Rubric) -> list[int]:
    """The grades that `pool`'s judgements (of every kind), gold labels or decisions carry and `rubric`
    lacks, lowest first."""
    used: set[int] = set()
    for rows in (
        Judgement.all_kinds.filter(item__pool=pool),
        GoldLabel.objects.filter(item__pool=pool),
        Adjudication.objects.filter(item__pool=pool),
    ):
        used.update(grade for grade in rows.values_list("grade", flat=True).distinct() if grade is not None)
    return sorted(used - set(rubric.labels))


def remove_rater(*, pool: Pool, rater: User) -> None:
    """Take a rater off a pool: their live leases are released, their judgements stay."""
    with transaction.atomic():
        judging = Judging.objects.get(pool=pool)
        judging.raters.remove(rater)
        count_gold_need(pool_id=pool.pk)
        for assignment in Assignment.objects.filter(
            item__pool=pool, rater=rater, state=Assignment.State.ACTIVE
        ).select_for_update():
            end_lease(assignment, Assignment.State.EXPIRED)


class AccountRefused(JudgingError):
    """A new account was refused; `field` names what is wrong (``username`` or ``password``: the form's
    field, the API's 400). Nothing was created."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


#: Names a URL path segment cannot carry: dot segments, resolved away before a request is sent.
DOT_SEGMENTS = frozenset({".", ".."})


def check_username(username: str) -> str:
    """The username a new account gets for `username`, if Django's own rules take it: stripped and
    NFKC-normalised (as `create_user` and the login form do, so the rater can log in with it), then the
    user model's username field validators (letters, digits and ``@.+-_`` only) and its max_length (150).
    AccountRefused naming the field otherwise.

    The one rule for every account the judging app makes (the judging page, ``add_raters --create``, a
    crowd import's new workers): a name outside it (``a/b``, ``sp ace``, ``<b>x</b>``) cannot be put in the
    URLs of the pages that list raters. Nor can ``.`` and ``..``, which the validators let through: in a
    URL they are dot segments, which browsers and HTTP clients resolve away (RFC 3986, 5.2.4)."""
    users = get_user_model()
    name = users.normalize_username(username.strip())
    if not name:
        raise AccountRefused("username", "a username is needed")
    if messages := column_problems(users, users.USERNAME_FIELD, name):
        shown = name if len(name) <= 40 else f"{name[:40]}…"
        raise AccountRefused("username", f"username {shown!r} refused: {' '.join(messages)}")
    if name in DOT_SEGMENTS:
        raise AccountRefused(
            "username", f"username {name!r} refused: a URL cannot carry it (browsers drop '.' and '..')"
        )
    return name


def create_rater_account(*, username: str, password: str | None) -> User:
    """Create the account of a rater (no role: a rater is any user added to a pool's raters).

    The username must pass :func:`check_username` (it is stored as that returns it); the password must
    pass the project's password validators; None gives the account no usable password (an admin or the
    password-reset page sets one). Refused (AccountRefused, naming the field; nothing created) otherwise,
    and for a username taken, ignoring case (as Django's own UserCreationForm refuses it): the login is
    case-sensitive (ModelBackend), so ``Admin1`` beside ``admin1`` would be two accounts one typo apart.
    (The database folds the case: PostgreSQL every letter, SQLite only A to Z, so ``Émile`` beside
    ``émile`` is refused on PostgreSQL only.) Two managers making ``Alice`` and ``alice`` at once take
    turns (`_one_name_at_a_time`): the second finds the first's account and is refused."""
    users = get_user_model()
    username = check_username(username)
    with transaction.atomic():
        _one_name_at_a_time(username)
        return _new_account(users, username, password)


def _one_name_at_a_time(username: str) -> None:
    """Until the transaction ends, hold a lock on `username` as the case check folds it: on PostgreSQL,
    the production database, an advisory lock on its upper case (what `iexact` compares). The unique index
    of usernames tells ``Alice`` from ``alice``, so it cannot refuse the second. (The embedded SQLite is
    one process's database, not one for managers at work at once.)"""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(UPPER(%s)))", [username])


def _new_account(users: type[User], username: str, password: str | None) -> User:
    taken = sorted(users.objects.filter(username__iexact=username).values_list("username", flat=True))
    if username in taken:
        raise AccountRefused(
            "username", f"a user named {username!r} exists already: add them as an existing user"
        )
    if taken:
        raise AccountRefused(
            "username",
            f"a user named {taken[0]!r} exists already, which differs from {username!r} only in case: add "
            "them as an existing user, or choose another name",
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


#: The start of a crowd worker's account name when their id is another account's name already.
WORKER_PREFIX = "crowd-"


def worker_accounts(worker_ids: Collection[str]) -> dict[str, User]:
    """Worker id → the account of that crowd worker (`CrowdWorker`), for the ids that have one. The one
    reader of who a crowd file's worker is: never a person's or a model judge's account that happens to
    bear the worker's id as its username."""
    rows = CrowdWorker.objects.filter(worker_id__in=list(worker_ids)).select_related("user")
    return {row.worker_id: row.user for row in rows}


def crowd_worker_ids(user_ids: Iterable[int]) -> set[int]:
    """The ids among `user_ids` of crowd workers' accounts (`CrowdWorker`): `worker_accounts` read by
    account, for the pages and the API that tell a crowd worker from a rater."""
    return set(CrowdWorker.objects.filter(user_id__in=list(user_ids)).values_list("user_id", flat=True))


def check_worker_id(worker_id: str) -> None:
    """A new crowd worker's id must be a username as it stands (`check_username`, not changed by it), so
    that their account can be named by it; AccountRefused naming ``username`` otherwise."""
    name = check_username(worker_id)
    if name != worker_id:
        raise AccountRefused("username", f"it would be stored as {name!r}")


def numbered_names(base: str) -> Iterator[str]:
    """`base`, then ``<base>-2``, ``<base>-3``, … (`base` shortened to keep each within 150 characters):
    the names a machine-made account may take when the one it wants is another account's."""
    for n in itertools.count(1):
        suffix = "" if n == 1 else f"-{n}"
        yield f"{base[: 150 - len(suffix)]}{suffix}"


def unused_username(names: Iterable[str]) -> str:
    """The first of `names` that no account has (a machine-made account's name: a crowd worker's, a model
    judge's); the caller creates the account in a transaction, and a concurrent taker makes it fail."""
    users = get_user_model()
    return next(name for name in names if not users.objects.filter(username=name).exists())


def _worker_names(worker_id: str) -> Iterator[str]:
    """The names a worker's account may take, in order of preference: their id, then ``crowd-<id>``,
    ``crowd-<id>-2``, … (the id shortened to keep each within 150 characters)."""
    yield worker_id
    yield from numbered_names(f"{WORKER_PREFIX}{worker_id}")


def create_worker_account(*, worker_id: str) -> User:
    """The account of crowd worker `worker_id`, made now if they have none: no usable password (they never
    log in), marked as the worker's (`CrowdWorker`), so every later import, into any pool, finds it by the
    worker id (`worker_accounts`). It is named `worker_id`, which must be a username as it stands
    (`check_username`; AccountRefused otherwise); when another account (a person's, a model judge's, a
    worker's named otherwise) has that name, ``crowd-<id>`` (then ``crowd-<id>-2``, …): the worker never
    takes that account's judgements, nor gives it theirs. Safe beside an import making the same worker."""
    check_worker_id(worker_id)
    found = worker_accounts([worker_id]).get(worker_id)
    if found is not None:
        return found
    users = get_user_model()
    username = unused_username(_worker_names(worker_id))
    try:
        with transaction.atomic():
            user = users(username=username)
            user.set_unusable_password()
            user.save()
            CrowdWorker.objects.create(worker_id=worker_id, user=user)
    except IntegrityError:  # the same worker (or the name) made by a concurrent import: theirs is the one
        found = worker_accounts([worker_id]).get(worker_id)
        if found is None:
            raise
        return found
    return user

"""Logging back what a searcher was shown and clicked in an interleaving experiment: each impression checked
against the list `online.serving` serves that searcher for that query, credited (`online.interleaving`),
and stored once per `query_id` however often a front end retries. What it adds up to is
`online.experiments`'s (`compute_result`).

Refusals are Django ``ValidationError``s keyed by the field at fault (the API answers them 400 naming the
field); a `query_id` logged before with other content is an `ImpressionConflict` (409).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from online import serving
from online.experiment_models import QUERY_ID_LENGTH, InterleavedImpression, InterleavingExperiment


@dataclass(frozen=True)
class Shown:
    """What a front end logs back for one impression (see `log_impressions`): `query_id` is the id it made
    for the search (UBI's `query_id`, one per search shown), None if it sends none."""

    qid: str
    user: str
    docids: Sequence[str]
    teams: Sequence[str] | str
    clicks: Sequence[int]
    session: str = ""
    query_id: str | None = None


class ImpressionConflict(ValidationError):
    """An impression given with a `query_id` that an impression of the experiment has already, with other
    content: refused on each field that differs (the API answers it 409, not 400: the body is valid, the
    id is taken)."""


@dataclass(frozen=True)
class Logged:
    """An impression `log_impressions` was given: its stored row, and whether this call stored it (False:
    a repeat of a `query_id` logged before with the same content, counted once)."""

    impression: InterleavedImpression
    created: bool


#: What a repeat of a `query_id` must hold as the impression logged with it holds (the stored forms: the
#: teams one string, each clicked position once, in order).
CONTENT = ("qid", "user", "session", "docids", "teams", "clicks")


def _content(shown: Shown) -> dict[str, Any]:
    return {
        "qid": shown.qid,
        "user": shown.user,
        "session": shown.session,
        "docids": list(shown.docids),
        "teams": "".join(shown.teams),
        "clicks": sorted(set(shown.clicks)),
    }


def _same(stored: InterleavedImpression, content: dict[str, Any]) -> None:
    """Nothing if `content` is the impression `stored` (a repeat); an ImpressionConflict naming each field
    that differs else."""
    differ = [field for field in CONTENT if getattr(stored, field) != content[field]]
    if differ:
        raise ImpressionConflict(
            {
                field: [
                    f"an impression with query_id {stored.query_id!r} was logged with another {field}: a "
                    "retry sends the same impression, another impression a new query_id"
                ]
                for field in differ
            }
        )


def _checked(experiment: InterleavingExperiment, shown: Shown) -> InterleavedImpression:
    if shown.query_id is not None and not 1 <= len(shown.query_id) <= QUERY_ID_LENGTH:
        raise ValidationError({"query_id": [f"a query_id of 1 to {QUERY_ID_LENGTH} characters, or none"]})
    serving.check_query(experiment, shown.qid, shown.user)
    served = serving.serve(experiment=experiment, qid=shown.qid, user=shown.user)
    if list(shown.docids) != list(served.docids):
        raise ValidationError({"docids": ["not the list served to this searcher for this query"]})
    if list(shown.teams) != list(served.teams):
        raise ValidationError({"teams": ["not the teams served to this searcher for this query"]})
    if len(shown.session) > 200:
        raise ValidationError({"session": ["at most 200 characters"]})
    try:
        outcome = served.credit(shown.clicks)
    except ValueError as exc:
        raise ValidationError({"clicks": [str(exc)]}) from None
    return InterleavedImpression(
        experiment=experiment,
        query_id=shown.query_id,
        qid=shown.qid,
        user=shown.user,
        session=shown.session,
        docids=list(served.docids),
        teams="".join(served.teams),
        clicks=sorted(set(shown.clicks)),
        outcome=outcome,
    )


def log_impressions(*, experiment: InterleavingExperiment, shown: Iterable[Shown]) -> list[Logged]:
    """Store what searchers were shown and clicked, each with its credited outcome, all or nothing; one
    `Logged` per impression given, in order. Each list and its teams must be the ones `serve` gives that
    searcher for that query (a front end that logs something else would credit the wrong ranker): refused
    otherwise, naming the field.

    An impression with a `query_id` is stored once per experiment however often it is given (a front
    end's retry after a timeout, a repeat within one call, two posts at once): a repeat with the same
    content is the impression stored (`created` False, not checked against `serve` again: it was when
    stored), one with other content an `ImpressionConflict` naming the fields that differ. Without a
    `query_id` each impression given is stored and counted: a front end that retries must send one.
    Of two callers storing one `query_id` at once, the unique constraint (experiment, query_id) lets one
    insert; the other's insert fails in its savepoint and it reads the row stored instead."""
    given = list(shown)
    ids = {one.query_id for one in given if one.query_id is not None}
    stored = InterleavedImpression.objects.filter(experiment=experiment, query_id__in=ids) if ids else []
    known = {row.query_id: row for row in stored}
    rows: list[InterleavedImpression | None] = []  # None: a repeat of a query_id in `known`
    for one in given:
        if one.query_id is not None and one.query_id in known:
            _same(known[one.query_id], _content(one))
            rows.append(None)
        else:
            new = _checked(experiment, one)
            if new.query_id is not None:
                known[new.query_id] = new
            rows.append(new)
    with transaction.atomic():
        unnamed = [row for row in rows if row is not None and row.query_id is None]
        InterleavedImpression.objects.bulk_create(unnamed, batch_size=2000)
        for row in rows:
            if row is not None and row.query_id is not None:
                known[row.query_id] = _insert_once(row)
    logged = []
    for one, row in zip(given, rows, strict=True):
        if one.query_id is None and row is not None:  # (a row of its own: stored above)
            logged.append(Logged(row, created=True))
        else:  # this one stored it, or it was stored before (by an earlier call, a concurrent one, or above)
            first = known[str(one.query_id)]
            logged.append(Logged(first, created=first is row))
    return logged


def _insert_once(row: InterleavedImpression) -> InterleavedImpression:
    """`row` (which has a query_id) inserted; or, when another caller stored an impression of its
    experiment with its query_id first, that one, if it is the same impression (`_same`)."""
    try:
        with transaction.atomic():
            row.save(force_insert=True)
        return row
    except IntegrityError:
        # read in a statement of its own: under READ COMMITTED it sees the row the other caller committed
        first = InterleavedImpression.objects.filter(
            experiment_id=row.experiment_id, query_id=row.query_id
        ).first()
        if first is None:
            raise  # another constraint than the query_id's
        _same(first, {field: getattr(row, field) for field in CONTENT})
        return first


def log_impression(*, experiment: InterleavingExperiment, **shown: Any) -> InterleavedImpression:
    """One impression (`log_impressions` of one `Shown(**shown)`): the row stored, or for a repeat of a
    `query_id` the one stored before."""
    (logged,) = log_impressions(experiment=experiment, shown=[Shown(**shown)])
    return logged.impression


@dataclass(frozen=True)
class ImpressionLogged:
    """An impression logged back, as the API answers it: its id, the front end's `query_id` (null if it
    sent none) and the outcome credited to it (`A`, `B`, `tie`, or `none`: no click)."""

    id: int
    query_id: str | None
    outcome: str


def impression_logged(impression: InterleavedImpression) -> dict[str, Any]:
    """A logged impression as the API answers it (`ImpressionLogged`)."""
    return asdict(
        ImpressionLogged(id=impression.pk, query_id=impression.query_id, outcome=impression.outcome)
    )

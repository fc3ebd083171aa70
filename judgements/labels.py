"""A label checked against its rubric, and a recorded label revised (with its revision row)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from judgements.errors import JudgingError
from judgements.models import (
    Judgement,
    JudgementRevision,
    Rubric,
)

#: The longest note a rater or an adjudicator may write: the judging page, its form, the API's
#: serializers and the services all take this one limit.
NOTE_MAX_LENGTH = 10_000
#: The longest time a judgement may report, in seconds: the judging page's form and the services clamp a
#: rater's time to it, and a crowd import refuses a row beyond it.
MAX_SECONDS = 24 * 3600.0

#: What a label is, the fields of a judgement a revision keeps the old and the new value of (its
#: `old_<field>` and `new_<field>`).
LABEL_FIELDS = ("grade", "unrateable", "facets", "note")


def clean_note(note: str) -> str:
    """The note as stored (surrounding whitespace dropped); JudgingError if it is over the limit."""
    note = note.strip()
    if len(note) > NOTE_MAX_LENGTH:
        raise JudgingError(f"a note may have at most {NOTE_MAX_LENGTH} characters", field="note")
    return note


def validate_label(
    rubric: Rubric,
    grade: int | None,
    unrateable: bool,
    facets: dict[str, Any] | None,
    *,
    require_facets: bool = True,
) -> dict[str, Any]:
    if unrateable:
        if not rubric.allow_unrateable:
            raise JudgingError("this rubric has no 'unrateable' choice", field="unrateable")
        if grade is not None:
            raise JudgingError("an unrateable judgement has no grade", field="grade")
    else:
        if grade is None:
            raise JudgingError("choose a grade", field="grade")
        if grade not in rubric.labels:
            raise JudgingError(
                f"grade {grade} is not on the rubric ({', '.join(map(str, rubric.labels))})", field="grade"
            )
    facets = dict(facets or {})
    known = {facet.name: facet for facet in rubric.facets.all()}
    unknown = sorted(set(facets) - set(known))
    if unknown:
        raise JudgingError(f"unknown facets: {', '.join(unknown)}", field="facets")
    for name, facet in known.items():
        value = facets.get(name)
        if value in (None, ""):
            if facet.required and not unrateable and require_facets:
                raise JudgingError(f"facet {facet.label!r} is required", field="facets")
            facets.pop(name, None)
        elif facet.choices and value not in facet.choices:
            raise JudgingError(f"{value!r} is not a choice of facet {facet.label!r}", field="facets")
    return facets


def revise_judgement(
    *,
    judgement: Judgement,
    by: User,
    grade: int | None,
    unrateable: bool = False,
    facets: dict[str, Any] | None = None,
    note: str | None = None,
) -> Judgement:
    """Change a judgement, keeping the old and new label as a revision (who, when, old, new). Facets and
    note left as None keep their current values."""
    with transaction.atomic():
        locked = (
            Judgement.objects.select_for_update(of=("self",)).select_related("rubric").get(pk=judgement.pk)
        )
        current = locked.facets if facets is None else facets
        facets = validate_label(locked.rubric, grade, unrateable, current)
        old = {field: getattr(locked, field) for field in LABEL_FIELDS}
        new = {
            "grade": None if unrateable else grade,
            "unrateable": unrateable,
            "facets": facets,
            "note": locked.note if note is None else clean_note(note),
        }
        if new == old:
            return locked
        JudgementRevision.objects.create(
            judgement=locked,
            changed_by=by,
            **{f"old_{field}": value for field, value in old.items()},
            **{f"new_{field}": value for field, value in new.items()},
        )
        for field, value in new.items():
            setattr(locked, field, value)
        locked.updated_at = timezone.now()
        locked.save()
    return locked

"""Rubrics: the grade scale and facets a pool is judged on, their versions, and the values raters see."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from django.db import transaction

from judgements.errors import JudgingError
from judgements.models import (
    Facet,
    Grade,
    Judging,
    Rubric,
)

DEFAULT_GRADES: list[dict[str, Any]] = [
    {"value": 3, "label": "Perfect", "key": "3",
     "description": "Highly relevant: answers the question fully; the document a searcher hoped for."},
    {"value": 2, "label": "Good", "key": "2",
     "description": "Relevant: answers a substantial part of the question, or answers it less directly."},
    {"value": 1, "label": "Marginal", "key": "1",
     "description": "On the topic but barely useful: mentions the subject without answering the question."},
    {"value": 0, "label": "Not relevant", "key": "0",
     "description": "Does not help with the question at all."},
]  # fmt: skip


#: The highest grade value a rubric may have: relevance scales are small, and `--gain exp` (2^grade - 1)
#: must stay a finite float (a grade is also a 32-bit column).
MAX_GRADE = 100


#: The keys the judging page keeps for its own actions (static/js/judge.js), each with its action. The
#: page reads every key in either case, so no grade key and no unrateable key may be one of them in any
#: case. (Facets have no keys of their own: the page hands their choices the keys left free.)
RESERVED_KEYS: dict[str, str] = {"u": "revise", "s": "skip", "n": "note"}


def create_rubric(
    *,
    name: str,
    grades: Sequence[Mapping[str, Any]] = DEFAULT_GRADES,
    facets: Sequence[Mapping[str, Any]] = (),
    description: str = "",
    allow_unrateable: bool = True,
    unrateable_key: str = "x",
) -> Rubric:
    """Create version 1 of a rubric (or the next version if the name exists). Grades need distinct
    values and distinct one-character keys; the unrateable key may not clash with a grade key, and no key
    may be one the judging page keeps (`RESERVED_KEYS`); keys are compared ignoring case."""
    _check_grades(grades, allow_unrateable=allow_unrateable, unrateable_key=unrateable_key)
    with transaction.atomic():
        latest = Rubric.objects.filter(name=name).order_by("-version").first()
        rubric = Rubric.objects.create(
            name=name,
            version=(latest.version + 1) if latest else 1,
            description=description,
            allow_unrateable=allow_unrateable,
            unrateable_key=unrateable_key,
        )
        Grade.objects.bulk_create(
            Grade(
                rubric=rubric,
                value=int(g["value"]),
                label=str(g["label"]),
                description=str(g.get("description", "")),
                key=str(g["key"]),
            )
            for g in grades
        )
        Facet.objects.bulk_create(
            Facet(
                rubric=rubric,
                name=str(f["name"]),
                label=str(f.get("label", f["name"])),
                choices=list(f.get("choices", [])),
                required=bool(f.get("required", False)),
            )
            for f in facets
        )
    return rubric


def _check_grades(
    grades: Sequence[Mapping[str, Any]], *, allow_unrateable: bool, unrateable_key: str
) -> None:
    if not grades:
        raise JudgingError("a rubric needs at least one grade", field="grades")
    raw_values = [g.get("value") for g in grades]
    keys = [str(g.get("key", "")) for g in grades]
    if any(not isinstance(v, int) or isinstance(v, bool) for v in raw_values):
        raise JudgingError("grade values must be integers", field="grades")
    values = cast(list[int], raw_values)  # all int: checked just above
    if any(v < 0 for v in values):
        raise JudgingError(
            "grade values must be 0 or more (negative labels mean 'unjudged' in qrels)", field="grades"
        )
    if any(v > MAX_GRADE for v in values):
        raise JudgingError(f"grade values must be at most {MAX_GRADE}", field="grades")
    if len(set(values)) != len(values):
        raise JudgingError("grade values must be distinct", field="grades")
    _check_keys(keys, unrateable_key if allow_unrateable else None)


def _reserved(what: str, key: str) -> str:
    """What is wrong with `what` (e.g. "grade key 'U'") being the reserved `key`."""
    return f"{what} {key!r} is the judging page's {key.lower()} ({RESERVED_KEYS[key.lower()]})"


_RESERVED_RULE = f"keys {', '.join(RESERVED_KEYS)} are reserved, in either case"


def _check_keys(keys: Sequence[str], unrateable_key: str | None) -> None:
    """JudgingError naming the field at fault unless every grade key is one character, none is reserved
    (`RESERVED_KEYS`) and no two are the same key, and the unrateable key (None: raters may not mark a
    document unrateable, so the page gives it no key) is neither reserved nor a grade's key: all compared
    ignoring case, as the judging page reads keys."""
    if any(len(k) != 1 for k in keys):
        raise JudgingError("every grade needs its own one-character key", field="grades")
    reserved = [_reserved("grade key", k) for k in keys if k.lower() in RESERVED_KEYS]
    if reserved:
        raise JudgingError(f"{'; '.join(reserved)}: {_RESERVED_RULE}", field="grades")
    seen: dict[str, str] = {}  # each grade key by its lower case
    for key in keys:
        first = seen.get(key.lower())
        if first is not None:
            twice = f"grade key {key!r} is given twice"
            same = f"grade keys {first!r} and {key!r} are the same key (case is ignored)"
            raise JudgingError(
                f"{twice if first == key else same}: every grade needs its own one-character key",
                field="grades",
            )
        seen[key.lower()] = key
    if unrateable_key is None:
        return
    if unrateable_key.lower() in RESERVED_KEYS:
        raise JudgingError(
            f"{_reserved('the unrateable key', unrateable_key)}: {_RESERVED_RULE}", field="unrateable_key"
        )
    grade_key = seen.get(unrateable_key.lower())
    if grade_key is not None:
        which = "a grade key" if grade_key == unrateable_key else f"grade key {grade_key!r} (case is ignored)"
        raise JudgingError(f"the unrateable key {unrateable_key!r} is also {which}", field="grades")


def widest_gap_of(values: Sequence[int]) -> int:
    """The widest adjudication gap grades `values` allow: the highest minus the lowest, the largest spread
    two raters' grades can have; 1 (the column's least) for one grade, whose raters can differ only by
    unrateable beside a grade, which disputes an item at any gap (`adjudication.queue_rows`)."""
    return max(max(values) - min(values), 1) if values else 1


def check_pools_gaps(rubric: Rubric, grades: Sequence[Mapping[str, Any]]) -> None:
    """JudgingError naming ``grades`` when `grades`, put in place of `rubric`'s, would leave a pool judged on
    it with an adjudication gap wider than they allow (`widest_gap_of`): no item of that pool would go to
    adjudication for its grades. The pool's gap is lowered on its set-up first (the rule a set-up's change
    of rubric or gap meets: `membership.check_adjudication_gap`)."""
    if rubric.pk is None:
        return
    widest = widest_gap_of([int(g["value"]) for g in grades])
    wide = Judging.objects.filter(rubric=rubric, adjudication_gap__gt=widest).select_related("pool")
    names = [f"{judging.pool.name} ({judging.adjudication_gap})" for judging in wide.order_by("pool__name")]
    if names:
        raise JudgingError(
            f"these grades allow an adjudication gap of at most {widest}, and pools judged on {rubric} have "
            f"wider ones: {', '.join(names)}; lower their gap on their judging set-up first",
            field="grades",
        )


def default_rubric() -> Rubric:
    """The four-grade TREC scale (3 perfect … 0 not relevant), created on first use."""
    rubric = Rubric.objects.filter(name="relevance-4").order_by("-version").first()
    return rubric or create_rubric(name="relevance-4", description="The classic four-grade relevance scale.")


def update_rubric(
    *,
    rubric: Rubric,
    grades: Sequence[Mapping[str, Any]] | None = None,
    facets: Sequence[Mapping[str, Any]] | None = None,
    description: str | None = None,
    allow_unrateable: bool | None = None,
) -> Rubric:
    """Change a rubric. One that has judgements is never edited in place: a new version is made (pools
    keep the version their judgements were made under until moved on purpose). Returns the rubric to use."""
    new_grades = (
        grades if grades is not None else list(rubric.grades.values("value", "label", "description", "key"))
    )
    new_facets = (
        facets if facets is not None else list(rubric.facets.values("name", "label", "choices", "required"))
    )
    allow = rubric.allow_unrateable if allow_unrateable is None else allow_unrateable
    _check_grades(new_grades, allow_unrateable=allow, unrateable_key=rubric.unrateable_key)
    if rubric.has_judgements():
        return create_rubric(
            name=rubric.name,
            grades=new_grades,
            facets=new_facets,
            description=rubric.description if description is None else description,
            allow_unrateable=allow,
            unrateable_key=rubric.unrateable_key,
        )
    if grades is not None:
        check_pools_gaps(rubric, grades)
    with transaction.atomic():
        if description is not None:
            rubric.description = description
        rubric.allow_unrateable = allow
        rubric.save()
        if grades is not None:
            rubric.grades.all().delete()
            Grade.objects.bulk_create(
                Grade(rubric=rubric, value=int(g["value"]), label=g["label"],
                      description=g.get("description", ""), key=g["key"])
                for g in grades
            )  # fmt: skip
        if facets is not None:
            rubric.facets.all().delete()
            Facet.objects.bulk_create(
                Facet(rubric=rubric, name=f["name"], label=f.get("label", f["name"]),
                      choices=list(f.get("choices", [])), required=bool(f.get("required", False)))
                for f in facets
            )  # fmt: skip
    return rubric


def rubric_values_from_row(rubric_row: Sequence[Any]) -> dict[str, Any]:
    """The rubric as the rater API shows it (`RubricForRaterSerializer`'s values) from `_LEASE_SQL`."""
    rubric_id, name, version, description, allow_unrateable, key, grades, facets = rubric_row
    return {
        "id": rubric_id,
        "name": name,
        "version": version,
        "description": description,
        "allow_unrateable": allow_unrateable,
        "unrateable_key": key,
        # The types the serializer's fields give (a facet's choices come from JSON, whatever was stored).
        "grades": [
            {"value": int(value), "label": str(label), "description": str(text), "key": str(grade_key)}
            for value, label, text, grade_key in grades or ()
        ],
        "facets": [
            {"name": str(facet), "label": str(label),
             "choices": [None if c is None else str(c) for c in choices or ()], "required": bool(required)}
            for facet, label, choices, required in facets or ()
        ],
    }  # fmt: skip


def rubric_values(rubric: Rubric) -> dict[str, Any]:
    """`rubric_values_from_row` read through the ORM (the general path)."""
    grades = [
        tuple(g) for g in rubric.grades.order_by("-value").values_list("value", "label", "description", "key")
    ]
    facets = [
        tuple(f) for f in rubric.facets.order_by("id").values_list("name", "label", "choices", "required")
    ]
    return rubric_values_from_row(
        (rubric.id, rubric.name, rubric.version, rubric.description, rubric.allow_unrateable,
         rubric.unrateable_key, grades, facets)
    )  # fmt: skip

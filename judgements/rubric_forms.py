"""The manager's rubric form: grades and facets written one a line, read into the items the API takes,
and validated by the API's own serializer (`RubricSerializer`, which creates through
`rubrics.create_rubric`): the page refuses what the API refuses, with the same messages, beside the field
they are about.

The line syntax (each line a grade or a facet; blank lines are skipped, but still counted in line numbers):

- a grade: ``VALUE KEY LABEL: DESCRIPTION`` — ``3 h Highly relevant: the whole answer`` is value 3, key
  ``h``, label "Highly relevant", description "the whole answer". The description is optional (no colon:
  all of the rest is the label); a label holds no colon, a description may.
- a facet: ``NAME (LABEL): CHOICE, CHOICE, ... (required)`` — ``freshness: current, dated, unknown
  (required)``. The label is optional (the name is used), so is ``(required)``; a choice holds no comma.

Only the syntax of a line is this module's to check; every rule on the values (ranges, lengths, distinct
keys and names, reserved keys) is the serializer's and the service's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms

from judgements.models import Rubric
from judgements.rubrics import DEFAULT_GRADES
from judgements.serializers import RubricSerializer

GRADE_SYNTAX = "VALUE KEY LABEL: description"
GRADE_EXAMPLE = "3 h Highly relevant: the whole answer"
FACET_SYNTAX = "NAME (Label): choice, choice, ... (required)"
FACET_EXAMPLE = "freshness: current, dated, unknown (required)"
_REQUIRED = "(required)"
_FACET_HEAD = re.compile(r"(?P<name>[^(]*?)\s*(?:\((?P<label>[^)]*)\))?\s*")


class LineError(ValueError):
    """A line that does not follow the syntax; the message starts `line N:`."""


def _lines(text: str) -> list[tuple[int, str]]:
    """The non-blank lines of `text`, stripped, with their 1-based line numbers."""
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if line.strip()]


def parse_grades(text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The grades written in `text` (``VALUE KEY LABEL: description`` a line) as the API's items, and the
    line number of each. The value stays the text written: the serializer says whether it is a grade."""
    grades, numbers = [], []
    for number, line in _lines(text):
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise LineError(
                f"line {number}: write a grade as {GRADE_SYNTAX} (e.g. {GRADE_EXAMPLE}), not {line!r}"
            )
        value, key, rest = parts
        label, _, description = rest.partition(":")
        grades.append(
            {"value": value, "key": key, "label": label.strip(), "description": description.strip()}
        )
        numbers.append(number)
    return grades, numbers


def parse_facets(text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The facets written in `text` (``NAME (Label): choice, choice (required)`` a line) as the API's
    items, and the line number of each."""
    facets, numbers = [], []
    for number, line in _lines(text):
        head, colon, tail = line.partition(":")
        if not colon:
            raise LineError(
                f"line {number}: write a facet as {FACET_SYNTAX} (e.g. {FACET_EXAMPLE}), not {line!r}"
            )
        tail = tail.strip()
        required = tail.lower().endswith(_REQUIRED)
        if required:
            tail = tail[: -len(_REQUIRED)].strip()
        match = _FACET_HEAD.fullmatch(head.strip())
        name, label = (match["name"], match["label"]) if match else (head.strip(), None)
        facet: dict[str, Any] = {
            "name": name,
            "choices": [choice.strip() for choice in tail.split(",")] if tail else [],
            "required": required,
        }
        if label is not None:
            facet["label"] = label.strip()
        facets.append(facet)
        numbers.append(number)
    return facets, numbers


def grades_text(grades: Sequence[Mapping[str, Any]]) -> str:
    """Grades written back in the page's syntax (highest first), e.g. to start from an existing scale."""
    rows = sorted(grades, key=lambda g: -int(g["value"]))
    return "\n".join(
        f"{g['value']} {g['key']} {g['label']}" + (f": {g['description']}" if g.get("description") else "")
        for g in rows
    )


def facets_text(facets: Sequence[Mapping[str, Any]]) -> str:
    """Facets written back in the page's syntax."""
    lines = []
    for f in facets:
        label = f" ({f['label']})" if f.get("label") and f["label"] != f["name"] else ""
        choices = ", ".join(str(c) for c in f.get("choices") or ())
        lines.append(f"{f['name']}{label}: {choices}{' ' + _REQUIRED if f.get('required') else ''}".rstrip())
    return "\n".join(lines)


def _messages(detail: Any) -> list[str]:
    """The messages of one error value of a serializer: a list of strings, or nested by index or field."""
    if isinstance(detail, Mapping):
        out = []
        for key, inner in detail.items():
            prefix = f"choice {int(key) + 1}" if str(key).isdigit() else str(key)
            out += [f"{prefix}: {message}" for message in _messages(inner)]
        return out
    if isinstance(detail, list | tuple):
        return [message for inner in detail for message in _messages(inner)]
    return [str(detail)]


def _item_messages(detail: Any, numbers: Sequence[int]) -> list[str]:
    """The messages about a list of items, each naming the line the item was written on (a message about
    the list as a whole, e.g. 'facet names must be distinct', as it is)."""
    if isinstance(detail, list) and any(isinstance(item, Mapping) for item in detail):
        detail = {index: item for index, item in enumerate(detail) if item}
    if isinstance(detail, Mapping) and all(str(index).isdigit() for index in detail):
        return [
            f"line {numbers[int(index)]}: {message}"
            for index, item in detail.items()
            for message in _messages(item)
        ]
    return _messages(detail)


class RubricForm(forms.Form):
    """A new rubric (or the next version of one, under an existing name). `clean` reads the two textareas
    and runs everything through `RubricSerializer`; a valid form's `serializer` is ready to `save()` (which
    may still raise the service's `JudgingError`: show it with `add_to`)."""

    # No bounds here: the serializer's are the rules (a second copy would drift).
    name = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"required": True}),
        help_text="An existing name makes that rubric's next version.",
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    allow_unrateable = forms.BooleanField(
        required=False, initial=True, help_text="Raters may mark a document they cannot judge."
    )
    unrateable_key = forms.CharField(required=False, initial="x", help_text="The key for 'unrateable'.")
    grades = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        initial=grades_text(DEFAULT_GRADES),
        help_text=(
            f"One grade a line: {GRADE_SYNTAX} (the description is optional), e.g. “{GRADE_EXAMPLE}”. "
            "Values 0 and up, distinct; one-character keys, distinct (u, s and n are the judging page's). "
            "Left empty: the default four-grade scale, as in the API."
        ),
    )
    facets = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text=(
            f"Optional questions beside the grade, one a line: {FACET_SYNTAX} (the label and “(required)” "
            f"are optional), e.g. “{FACET_EXAMPLE}”. A name is a slug (letters, digits, - and _)."
        ),
    )

    serializer: RubricSerializer | None = None

    @classmethod
    def initial_from(cls, rubric: Rubric) -> dict[str, Any]:
        """The form's initial values for the next version of `rubric`."""
        return {
            "name": rubric.name,
            "description": rubric.description,
            "allow_unrateable": rubric.allow_unrateable,
            "unrateable_key": rubric.unrateable_key,
            "grades": grades_text(list(rubric.grades.values("value", "key", "label", "description"))),
            "facets": facets_text(list(rubric.facets.values("name", "label", "choices", "required"))),
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        numbers: dict[str, list[int]] = {}
        items: dict[str, list[dict[str, Any]]] = {}
        for field, parse in (("grades", parse_grades), ("facets", parse_facets)):
            try:
                items[field], numbers[field] = parse(data.get(field) or "")
            except LineError as exc:
                self.add_error(field, str(exc))
                items[field] = []  # the other fields are still checked, so every error shows at once
        body = {
            "name": data.get("name") or "",
            "description": data.get("description") or "",
            "allow_unrateable": bool(data.get("allow_unrateable")),
            "grades": items["grades"],
            "facets": items["facets"],
        }
        if data.get("unrateable_key"):  # left empty: the API's default, as when a client leaves it out
            body["unrateable_key"] = data["unrateable_key"]
        serializer = RubricSerializer(data=body)
        if serializer.is_valid():
            if not self.errors:
                self.serializer = serializer
            return data
        for field, detail in serializer.errors.items():
            if field in items and field not in numbers:
                continue  # its lines could not be read: that error is the one to fix first
            messages = _item_messages(detail, numbers[field]) if field in numbers else _messages(detail)
            for message in messages:
                self.add_error(field if field in self.fields else None, message)
        return data

r"""The manager's rubric form: grades and facets written one a line, read into the items the API takes,
and validated by the API's own serializer (`RubricSerializer`, which creates through
`rubrics.create_rubric`): the page refuses what the API refuses, with the same messages, beside the field
they are about.

The line syntax (each line a grade or a facet; blank lines are skipped, but still counted in line numbers):

- a grade: ``VALUE KEY LABEL: DESCRIPTION`` — ``3 h Highly relevant: the whole answer`` is value 3, key
  ``h``, label "Highly relevant", description "the whole answer". The description is optional (no colon:
  all of the rest is the label); the first colon ends the label, so a colon in a label is written ``\:``;
  the description may hold colons as they are.
- a facet: ``NAME (LABEL): CHOICE, CHOICE, ... (required)`` — ``freshness: current, dated, unknown
  (required)``. The label is optional (the name is used), so is ``(required)``. A comma in a choice is
  written ``\,``, a colon in the label ``\:``; a last choice that itself ends in "(required)" is written
  ``... \(required)``.

The escapes, the same in every label, description and choice: a backslash before ``:``, ``,``, ``(``,
``)`` or another backslash stands for that character (``\\`` is one backslash); a backslash before
anything else is kept as it is (``C:\temp`` in a description is read as written). The page writes a
rubric back this way (`grades_text`, `facets_text`: every backslash doubled, every colon of a label and
comma of a choice escaped), so a rubric made through the API, which takes any text, starts its next
version here unchanged. A line break cannot be written in a line.

Only the syntax of a line is this module's to check; every rule on the values (ranges, lengths, distinct
keys and names, reserved keys) is the serializer's and the service's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django import forms

from judgements.models import Rubric
from judgements.rubrics import DEFAULT_GRADES, RESERVED_KEYS
from judgements.serializers import RubricSerializer

GRADE_SYNTAX = "VALUE KEY LABEL: description"
GRADE_EXAMPLE = "3 h Highly relevant: the whole answer"
FACET_SYNTAX = "NAME (Label): choice, choice, ... (required)"
FACET_EXAMPLE = "freshness: current, dated, unknown (required)"
_REQUIRED = "(required)"
#: The judging page's own keys, as the help texts name them ("u, s, n").
_RESERVED = ", ".join(RESERVED_KEYS)
#: The characters a backslash stands for (before any other, a backslash is itself).
_ESCAPABLE = frozenset("\\:,()")

#: A line's text as read: each character, and whether a backslash escaped it (so it is never syntax).
_Marked = list[tuple[str, bool]]


class LineError(ValueError):
    """A line that does not follow the syntax; the message starts `line N:`."""


def _lines(text: str) -> list[tuple[int, str]]:
    """The non-blank lines of `text`, stripped, with their 1-based line numbers."""
    return [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1) if line.strip()]


def _read(text: str) -> _Marked:
    """`text` with its escapes read: ``\\X`` for X in `_ESCAPABLE` is X, marked escaped."""
    marked: _Marked = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in _ESCAPABLE:
            marked.append((text[index + 1], True))
            index += 2
        else:
            marked.append((char, False))
            index += 1
    return marked


def _find(marked: _Marked, syntax: str) -> int:
    """The index of the first `syntax` character not escaped, -1 if none."""
    return next((i for i, (char, escaped) in enumerate(marked) if char == syntax and not escaped), -1)


def _split(marked: _Marked, syntax: str) -> list[_Marked]:
    """`marked` cut at every `syntax` character not escaped."""
    parts: list[_Marked] = [[]]
    for char, escaped in marked:
        if char == syntax and not escaped:
            parts.append([])
        else:
            parts[-1].append((char, escaped))
    return parts


def _text(marked: _Marked) -> str:
    return "".join(char for char, _ in marked).strip()


def _strip(marked: _Marked) -> _Marked:
    """`marked` without the white space at either end (never escaped: a backslash does not escape it)."""
    start, end = 0, len(marked)
    while start < end and marked[start][0].isspace():
        start += 1
    while end > start and marked[end - 1][0].isspace():
        end -= 1
    return marked[start:end]


def _escape(text: str, syntax: str = "") -> str:
    """`text` written so that `_read` gives it back: every backslash doubled, every `syntax` character
    escaped."""
    return "".join(f"\\{char}" if char == "\\" or char in syntax else char for char in text)


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
        marked = _read(rest)
        colon = _find(marked, ":")
        label, description = (marked, []) if colon < 0 else (marked[:colon], marked[colon + 1 :])
        grades.append({"value": value, "key": key, "label": _text(label), "description": _text(description)})
        numbers.append(number)
    return grades, numbers


def parse_facets(text: str) -> tuple[list[dict[str, Any]], list[int]]:
    """The facets written in `text` (``NAME (Label): choice, choice (required)`` a line) as the API's
    items, and the line number of each."""
    facets, numbers = [], []
    for number, line in _lines(text):
        marked = _read(line)
        colon = _find(marked, ":")
        if colon < 0:
            raise LineError(
                f"line {number}: write a facet as {FACET_SYNTAX} (e.g. {FACET_EXAMPLE}), not {line!r}"
            )
        head, tail = _strip(marked[:colon]), _strip(marked[colon + 1 :])
        ending = tail[-len(_REQUIRED) :]
        required = len(ending) == len(_REQUIRED) and not any(escaped for _, escaped in ending)
        required = required and "".join(char for char, _ in ending).lower() == _REQUIRED
        if required:
            tail = _strip(tail[: -len(_REQUIRED)])
        opening = _find(head, "(")
        labelled = opening >= 0 and head[-1] == (")", False)
        facet: dict[str, Any] = {
            "name": _text(head[:opening] if labelled else head),
            "choices": [_text(choice) for choice in _split(tail, ",")] if tail else [],
            "required": required,
        }
        if labelled:
            facet["label"] = _text(head[opening + 1 : -1])
        facets.append(facet)
        numbers.append(number)
    return facets, numbers


def grades_text(grades: Sequence[Mapping[str, Any]]) -> str:
    """Grades written back in the page's syntax (highest first), e.g. to start from an existing scale."""
    rows = sorted(grades, key=lambda g: -int(g["value"]))
    return "\n".join(
        f"{g['value']} {g['key']} {_escape(str(g['label']), ':')}"
        # an empty label keeps its colon: without, the line would lack one of its three parts
        + (f": {_escape(str(g['description']))}" if g.get("description") or not g["label"] else "")
        for g in rows
    )


def facets_text(facets: Sequence[Mapping[str, Any]]) -> str:
    """Facets written back in the page's syntax."""
    lines = []
    for f in facets:
        given = f.get("label")  # none given, or the name itself: the name is the label
        label = f" ({_escape(str(given), ':')})" if given is not None and given != f["name"] else ""
        choices = ", ".join(_escape(str(c), ",") for c in f.get("choices") or ())
        if choices.lower().endswith(_REQUIRED):  # the last choice's own text, not the flag
            choices = f"{choices[: -len(_REQUIRED)]}\\{choices[-len(_REQUIRED) :]}"
        required = f" {_REQUIRED}" if f.get("required") else ""
        lines.append(f"{_escape(str(f['name']), ':(')}{label}: {choices}{required}".rstrip())
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
    unrateable_key = forms.CharField(
        required=False,
        initial="x",
        help_text=f"The key for 'unrateable': not a grade's key, nor one of {_RESERVED}, in either case.",
    )
    grades = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
        initial=grades_text(DEFAULT_GRADES),
        help_text=(
            f"One grade a line: {GRADE_SYNTAX} (the description is optional), e.g. “{GRADE_EXAMPLE}”. "
            "The first colon ends the label: write a colon in a label as “\\:”, a backslash as “\\\\”. "
            "Values 0 and up, distinct; one-character keys, distinct whatever their case "
            f"({_RESERVED}, in either case, are the judging page's). "
            "Left empty: the default four-grade scale, as in the API."
        ),
    )
    facets = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text=(
            f"Optional questions beside the grade, one a line: {FACET_SYNTAX} (the label and “(required)” "
            f"are optional), e.g. “{FACET_EXAMPLE}”. A name is a slug (letters, digits, - and _). "
            "Write a comma in a choice as “\\,”, a colon in a label as “\\:”, a backslash as “\\\\”, "
            "and a last choice that ends in “(required)” as “… \\(required)”."
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

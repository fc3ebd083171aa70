"""Forms of the rater pages: a label (grade or unrateable, facets, note) for an assignment or a revision.

The forms only parse and check what the browser sent against the pool's rubric, so that a bad request is a
400 with a message and stores nothing; the services check the same rules again for every other caller.
"""

from __future__ import annotations

import math
from typing import Any

from django import forms

from judgements.labels import MAX_SECONDS, NOTE_MAX_LENGTH
from judgements.models import Facet, Grade, Rubric
from judgements.rubrics import RESERVED_KEYS

#: Keys handed out to facet choices, in order, skipping any the rubric already uses.
FACET_KEY_SEQUENCE = "qwertyiopadfghjklzcvbm"


class RubricView:
    """A rubric with its grades and facets loaded once (two queries), and the key of every choice.

    Facet choices get one key each from `FACET_KEY_SEQUENCE`, in facet order then choice order, skipping
    the grade keys, the unrateable key and the action keys (u revise, s skip, n note)."""

    def __init__(self, rubric: Rubric) -> None:
        self.rubric = rubric
        self.grades: list[Grade] = list(rubric.grades.all())
        self.facets: list[Facet] = list(rubric.facets.all())
        used = {grade.key.lower() for grade in self.grades} | set(RESERVED_KEYS)
        if rubric.allow_unrateable:
            used.add(rubric.unrateable_key.lower())
        free = [key for key in FACET_KEY_SEQUENCE if key not in used]
        self.facet_keys: list[dict[str, Any]] = []
        for facet in self.facets:
            choices = []
            for choice in facet.choices:
                key = free.pop(0) if free else ""
                choices.append({"value": str(choice), "key": key})
            self.facet_keys.append({"facet": facet, "choices": choices})

    def label_of(self, *, grade: int | None, unrateable: bool) -> str:
        """The label a rater reads for a grade value (or 'Unrateable')."""
        if unrateable:
            return "Unrateable"
        for g in self.grades:
            if g.value == grade:
                return g.label
        return str(grade)

    def config(self) -> dict[str, Any]:
        """What the page script needs to map keys to actions (no item data)."""
        return {
            "grades": {g.key: {"value": g.value, "label": g.label} for g in self.grades},
            "unrateable": self.rubric.unrateable_key if self.rubric.allow_unrateable else None,
            "facets": {
                choice["key"]: {"facet": entry["facet"].name, "value": choice["value"]}
                for entry in self.facet_keys
                for choice in entry["choices"]
                if choice["key"]
            },
            # each facet's choices as stored (a choice may be a number): the script sends them as such
            "choices": {facet.name: list(facet.choices) for facet in self.facets},
            "required": [
                {"name": entry["facet"].name, "label": entry["facet"].label}
                for entry in self.facet_keys
                if entry["facet"].required
            ],
        }


class LabelForm(forms.Form):
    """A grade or 'unrateable', the facets and a note, checked against the rubric.

    `cleaned_data` then holds `grade` (int or None), `unrateable` (bool), `facets` (facet name → the
    choice as stored in the rubric, e.g. an int stays an int) and `note`."""

    grade = forms.IntegerField(required=False)
    unrateable = forms.BooleanField(required=False)
    note = forms.CharField(required=False, max_length=NOTE_MAX_LENGTH, strip=True)

    def __init__(self, *args: Any, rubric: RubricView, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rubric = rubric
        for facet in rubric.facets:
            self.fields[f"facet_{facet.name}"] = forms.ChoiceField(
                required=False, choices=[("", "")] + [(str(c), str(c)) for c in facet.choices]
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        grade, unrateable = data.get("grade"), bool(data.get("unrateable"))
        rubric = self.rubric.rubric
        if unrateable:
            if not rubric.allow_unrateable:
                raise forms.ValidationError("This rubric has no 'unrateable' choice.")
            if grade is not None:
                raise forms.ValidationError("Choose a grade or 'unrateable', not both.")
        elif grade is None:
            raise forms.ValidationError("Choose a grade.")
        elif grade not in {g.value for g in self.rubric.grades}:
            labels = ", ".join(f"{g.value} {g.label}" for g in self.rubric.grades)
            raise forms.ValidationError(f"Grade {grade} is not on the rubric ({labels}).")
        facets: dict[str, Any] = {}
        for facet in self.rubric.facets:
            raw = data.get(f"facet_{facet.name}") or ""
            if raw:
                facets[facet.name] = next(c for c in facet.choices if str(c) == raw)
            elif facet.required and not unrateable:
                raise forms.ValidationError(f"Choose {facet.label} first: it is required.")
        data["facets"] = facets
        data["unrateable"] = unrateable
        data["note"] = data.get("note") or ""
        return data


class JudgeForm(LabelForm):
    """A label for the rater's leased item (named by the view from `assignment`), with the seconds
    measured in the browser."""

    seconds = forms.CharField(required=False)

    def clean_seconds(self) -> float | None:
        """Seconds from the page script, clamped to [0, MAX_SECONDS]; None when absent or not a finite
        number (the view then uses the time since the lease began): a bad clock never loses a label."""
        try:
            seconds = float(self.cleaned_data.get("seconds") or "")
        except ValueError:
            return None
        if not math.isfinite(seconds):
            return None
        return max(0.0, min(seconds, MAX_SECONDS))


class ReviseForm(LabelForm):
    """A new label for one of the rater's own judgements (named by the view from `judgement`)."""


def first_error(form: forms.Form) -> str:
    """The form's first error as one sentence a rater can act on."""
    for field, errors in form.errors.items():
        if field == "__all__":
            return str(errors[0])
        return f"{field.replace('_', ' ')}: {errors[0]}"
    return "The request was not understood."

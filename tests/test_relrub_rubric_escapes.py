"""The rubric page's line syntax escapes what would be syntax (`rubric_forms`: ``\\:`` in a label, ``\\,`` in
a choice, ``\\\\`` for a backslash): what the page writes back (`grades_text`, `facets_text`) reads back
as the same items, so the next version of a rubric made through the API, whose labels hold colons and
whose choices hold commas, is that rubric again."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, assume, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from judgements import rubrics
from judgements.models import Rubric
from judgements.rubric_forms import LineError, facets_text, grades_text, parse_facets, parse_grades
from tests.conftest import client_for
from tests.factories import make_manager

NEW = "/rubrics/new/"

#: Any text of one line, the syntax's characters and backslashes often (no line break: a line holds none).
LINE_CHARS = st.one_of(
    st.sampled_from(list(":,()\\ ")), st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"))
)
line_text = st.text(LINE_CHARS, max_size=30)
key_char = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Zs"))
#: A value as the API keeps it: white space at either end trimmed (DRF's CharField), not empty.
value_text = st.builds(
    lambda first, rest: (first + rest).strip(), st.one_of(st.sampled_from(":,()\\"), key_char), line_text
)
PROPERTY = hypothesis_settings(
    max_examples=300,
    derandomize=True,  # fixed seeds: the same cases on every run
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@st.composite
def grade_items(draw: Any) -> list[dict[str, Any]]:
    values = draw(st.lists(st.integers(0, 10), min_size=1, max_size=5, unique=True))
    return [
        {
            "value": str(value),
            "key": draw(key_char),
            "label": draw(value_text),
            "description": draw(st.one_of(st.just(""), value_text)),
        }
        for value in sorted(values, reverse=True)  # the page writes the highest first
    ]


@st.composite
def facet_items(draw: Any) -> list[dict[str, Any]]:
    facets = []
    for _ in range(draw(st.integers(1, 4))):
        facet: dict[str, Any] = {
            "name": draw(value_text),
            "choices": draw(st.lists(value_text, max_size=4)),
            "required": draw(st.booleans()),
        }
        label = draw(st.one_of(st.none(), value_text))
        if label is not None and label != facet["name"]:  # a label that is the name is written as none
            facet["label"] = label
        facets.append(facet)
    return facets


@PROPERTY
@given(grade_items())
def test_grades_written_by_the_page_read_back_as_the_same_items(grades):
    assert parse_grades(grades_text(grades))[0] == grades


@PROPERTY
@given(facet_items())
def test_facets_written_by_the_page_read_back_as_the_same_items(facets):
    assert parse_facets(facets_text(facets))[0] == facets


@PROPERTY
@given(st.lists(st.tuples(key_char, line_text), min_size=1, max_size=5))
def test_grade_lines_read_written_and_read_again_give_the_same_items(lines):
    text = "\n".join(f"{len(lines) - i} {key} {rest}" for i, (key, rest) in enumerate(lines))
    assume(all(rest.strip() for _, rest in lines))  # else the line lacks its label: refused
    items = parse_grades(text)[0]
    assert parse_grades(grades_text(items))[0] == items


def without_label_as_name(facets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A facet whose label is its name has none (what the service stores for both)."""
    return [{k: v for k, v in f.items() if not (k == "label" and v == f["name"])} for f in facets]


@PROPERTY
@given(st.lists(st.tuples(line_text, line_text), min_size=1, max_size=4))
def test_facet_lines_read_written_and_read_again_give_the_same_items(lines):
    try:
        items = parse_facets("\n".join(f"{head}:{tail}" for head, tail in lines))[0]
    except LineError:  # a head ending in a backslash escapes the colon: no facet line, refused
        assume(False)
    assert parse_facets(facets_text(items))[0] == without_label_as_name(items)


def test_it_reads_the_escapes_and_keeps_a_backslash_before_anything_else():
    grades, _ = parse_grades("2 g Good\\: mostly: parts: all\n1 b C:\\temp\\\\: a\\b")
    assert grades == [
        {"value": "2", "key": "g", "label": "Good: mostly", "description": "parts: all"},
        {"value": "1", "key": "b", "label": "C", "description": "\\temp\\: a\\b"},
    ]
    facets, _ = parse_facets("kind (Kind\\: main): news\\, local, a\\\\b, x \\(required) (required)")
    assert facets == [
        {"name": "kind", "label": "Kind: main", "choices": ["news, local", "a\\b", "x (required)"],
         "required": True},
    ]  # fmt: skip
    assert grades_text(grades) == "2 g Good\\: mostly: parts: all\n1 b C: \\\\temp\\\\: a\\\\b"
    assert facets_text(facets) == "kind (Kind\\: main): news\\, local, a\\\\b, x \\(required) (required)"


def test_the_form_explains_the_escapes():
    from judgements.rubric_forms import RubricForm

    form = RubricForm()
    assert "“\\:”" in str(form.fields["grades"].help_text)
    assert "“\\,”" in str(form.fields["facets"].help_text) and "“\\\\”" in str(
        form.fields["facets"].help_text
    )


@pytest.mark.django_db
def test_the_next_version_of_an_api_rubric_with_colons_and_commas_is_that_rubric():
    manager = make_manager("escapes-manager")
    body = {
        "name": "tricky",
        "grades": [
            {"value": 2, "key": "h", "label": "Relevant: fully", "description": "answers it: all of it"},
            {"value": 1, "key": "\\", "label": "Part\\ly", "description": "C:\\docs, \\\\share"},
            {"value": 0, "key": ":", "label": "No", "description": ""},
        ],
        "facets": [
            {"name": "source", "label": "Source: where from", "required": True,
             "choices": ["news, local", "blog\\", "wiki (required)"]},
            {"name": "tone", "choices": ["calm", "loud, angry"]},
        ],
    }  # fmt: skip
    made = client_for(manager).post("/api/rubrics/", body, format="json")
    assert made.status_code == 201, made.json()
    first = Rubric.objects.get(pk=made.json()["id"])
    client = Client()
    client.force_login(manager)
    form = client.get(f"{NEW}?from={first.pk}").context["form"]
    data = {
        name: form[name].value() for name in ("name", "description", "grades", "facets", "unrateable_key")
    }
    response = client.post(NEW, {**data, "allow_unrateable": "on"})
    second = Rubric.objects.get(name="tricky", version=2)
    assert response.status_code == 302
    parts = ("grades", "facets")
    assert {k: rubrics.rubric_values(second)[k] for k in parts} == {
        k: rubrics.rubric_values(first)[k] for k in parts
    }

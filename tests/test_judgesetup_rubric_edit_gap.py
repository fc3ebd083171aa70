"""A rubric nobody has judged is edited in place (the API's PATCH, the admin's form); its grades may not
shrink under a pool judged on it so far that the pool's adjudication gap is wider than the new grades allow
(the rule a set-up's own change of rubric or gap meets): the edit is refused naming the grades and the pool,
and nothing changes. A rubric with judgements is never edited in place (a new version), so no pool is
moved under a narrower scale by it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from judgements import membership, rubrics
from judgements.errors import JudgingError
from judgements.models import Judging, Rubric
from pooling.models import Pool
from tests.conftest import client_for
from tests.factories import make_manager, make_pool

pytestmark = pytest.mark.django_db

BINARY = [{"value": 0, "label": "No", "key": "0"}, {"value": 1, "label": "Yes", "key": "1"}]


@pytest.fixture
def owner() -> User:
    return make_manager("owner")


@pytest.fixture
def scale() -> Rubric:
    """An unjudged four-grade rubric (0 to 3) of its own."""
    return rubrics.create_rubric(name="scale")


@pytest.fixture
def pool(owner: User, scale: Rubric) -> Pool:
    """A pool judged on `scale` with a gap of 3 (what 0 to 3 allows at most)."""
    pool = make_pool(name="wide", managers=[owner])
    membership.setup_judging(pool=pool, rubric=scale, adjudication_gap=3)
    return pool


def test_the_service_refuses_grades_narrower_than_a_pools_gap_and_keeps_the_rubric(
    pool: Pool, scale: Rubric
) -> None:
    with pytest.raises(JudgingError) as refused:
        rubrics.update_rubric(rubric=scale, grades=BINARY)
    assert refused.value.field == "grades"
    assert "wide (3)" in str(refused.value) and "at most 1" in str(refused.value)
    assert scale.labels == [0, 1, 2, 3]


def test_grades_that_still_allow_the_gap_are_edited_in_place(pool: Pool, scale: Rubric) -> None:
    wider = [*BINARY, {"value": 4, "label": "Best", "key": "4"}]
    assert rubrics.update_rubric(rubric=scale, grades=wider).pk == scale.pk
    assert scale.labels == [0, 1, 4]


def test_a_lowered_gap_lets_the_grades_narrow(pool: Pool, scale: Rubric) -> None:
    membership.setup_judging(pool=pool, adjudication_gap=1)
    rubrics.update_rubric(rubric=scale, grades=BINARY)
    assert scale.labels == [0, 1] and Judging.objects.get(pool=pool).adjudication_gap == 1


def test_the_api_answers_400_on_the_grades_and_changes_nothing(
    owner: User, pool: Pool, scale: Rubric
) -> None:
    answer = client_for(owner).patch(f"/api/rubrics/{scale.pk}/", {"grades": BINARY}, format="json")
    assert answer.status_code == 400, answer.content
    assert "grades" in answer.json() and "wide (3)" in str(answer.json()["grades"])
    assert scale.labels == [0, 1, 2, 3]


def test_the_admins_form_refuses_it_beside_the_grades(admin_user: User, pool: Pool, scale: Rubric) -> None:
    client = Client()
    client.force_login(admin_user)
    grades = list(scale.grades.order_by("value"))
    data = {
        "name": "scale",
        "description": "",
        "allow_unrateable": "on",
        "unrateable_key": "x",
        "grades-TOTAL_FORMS": str(len(grades)),
        "grades-INITIAL_FORMS": str(len(grades)),
        "facets-TOTAL_FORMS": "0",
        "facets-INITIAL_FORMS": "0",
    }
    for n, grade in enumerate(grades):  # the form as the admin shows it, grades 2 and 3 marked for deletion
        data.update({f"grades-{n}-id": str(grade.pk), f"grades-{n}-rubric": str(scale.pk)})
        data.update({f"grades-{n}-value": str(grade.value), f"grades-{n}-label": grade.label})
        data.update({f"grades-{n}-key": grade.key, f"grades-{n}-description": grade.description})
        if grade.value > 1:
            data[f"grades-{n}-DELETE"] = "on"
    response = client.post(f"/admin/judgements/rubric/{scale.pk}/change/", data)
    assert response.status_code == 200
    assert "wide (3)" in response.content.decode()
    assert scale.labels == [0, 1, 2, 3]

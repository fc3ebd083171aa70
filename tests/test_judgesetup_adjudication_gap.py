"""The adjudication gap is at most what the pool's rubric allows (its highest grade minus its lowest):
a wider gap never sends an item to adjudication, so it is refused — by the service, beside the field on the
set-up page, as a 400 on the field in the API — and so is a rubric change that would leave the pool's gap
wider than the new rubric allows (the refusal names the gap). A new setup given no gap takes 2, or less
when its rubric allows less. Tried by the pool's manager; the page and the API stay closed to others."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from judgements import membership
from judgements.errors import JudgingError
from judgements.models import Judging, Rubric
from judgements.rubrics import create_rubric, default_rubric
from pooling.models import Pool
from tests.conftest import client_for
from tests.factories import make_manager, make_pool, make_user


@pytest.fixture
def owner(db: None) -> User:
    return make_manager("owner")


@pytest.fixture
def pool(owner: User) -> Pool:
    """A built pool of `owner`, judged on the default rubric (grades 0 to 3), gap 2."""
    return make_pool(name="gaps", managers=[owner])


def make_binary() -> Rubric:
    return create_rubric(
        name="binary",
        grades=[{"value": 0, "label": "No", "key": "0"}, {"value": 1, "label": "Yes", "key": "1"}],
    )


def judging_of(pool: Pool) -> Judging:
    return Judging.objects.select_related("rubric").get(pool=pool)


def page_post(user: User, pool: Pool, **fields: Any) -> Any:
    client = Client()
    client.force_login(user)
    data = {"action": "setup", "rubric": judging_of(pool).rubric_id, "judgements_per_item": 1}
    data.update({"lease_minutes": 10, "adjudication_gap": 2, **fields})
    return client.post(reverse("judging-setup:judging", kwargs={"name": pool.name}), data)


# ------------------------------------------------------------------------------------------- the service


def test_it_refuses_a_gap_wider_than_the_rubric_allows_naming_the_field(pool: Pool) -> None:
    with pytest.raises(JudgingError) as refused:
        membership.setup_judging(pool=pool, adjudication_gap=99)
    assert refused.value.field == "adjudication_gap"
    assert "at most 3" in refused.value.message and "0 to 3" in refused.value.message
    assert judging_of(pool).adjudication_gap == 2
    # the widest gap the rubric allows is taken: two grades 0 and 3 still reach it
    assert membership.setup_judging(pool=pool, adjudication_gap=3).adjudication_gap == 3


def test_it_refuses_a_rubric_narrower_than_the_pools_gap_naming_the_gap(pool: Pool) -> None:
    binary = make_binary()
    with pytest.raises(JudgingError) as refused:
        membership.setup_judging(pool=pool, rubric=binary)
    assert refused.value.field == "adjudication_gap"
    assert "this pool's gap, 2" in refused.value.message
    assert judging_of(pool).rubric == default_rubric()
    judging = membership.setup_judging(pool=pool, rubric=binary, adjudication_gap=1)
    assert (judging.rubric, judging.adjudication_gap) == (binary, 1)


def test_a_new_setup_given_no_gap_takes_what_its_rubric_allows(owner: User) -> None:
    binary = make_binary()
    pool = make_pool(name="fresh", managers=[owner])
    Judging.objects.filter(pool=pool).delete()
    assert membership.setup_judging(pool=pool, rubric=binary).adjudication_gap == 1
    other = make_pool(name="fresh-4", managers=[owner])
    assert judging_of(other).adjudication_gap == 2  # the default rubric allows 3


def test_a_one_grade_rubric_takes_the_least_gap(pool: Pool) -> None:
    """No two grades of it differ; unrateable beside its grade is a dispute at any gap."""
    one = create_rubric(name="seen", grades=[{"value": 1, "label": "Seen", "key": "1"}])
    assert membership.setup_judging(pool=pool, rubric=one, adjudication_gap=1).adjudication_gap == 1
    with pytest.raises(JudgingError):
        membership.setup_judging(pool=pool, adjudication_gap=2)


def test_adding_raters_is_not_refused_for_a_gap_set_before_the_rule(pool: Pool) -> None:
    Judging.objects.filter(pool=pool).update(adjudication_gap=99)
    rater = make_user("late-rater")
    judging = membership.setup_judging(pool=pool, raters=[rater])
    assert list(judging.raters.all()) == [rater] and judging.adjudication_gap == 99


# -------------------------------------------------------------------------------------------- the page


def test_the_page_shows_a_too_wide_gap_beside_the_field_and_keeps_nothing(owner: User, pool: Pool) -> None:
    response = page_post(owner, pool, adjudication_gap=99, lease_minutes=30)
    assert response.status_code == 200
    errors = response.context["setup"].errors
    assert list(errors) == ["adjudication_gap"] and "at most 3" in errors["adjudication_gap"][0]
    judging = judging_of(pool)
    assert (judging.adjudication_gap, judging.lease_minutes) == (2, 10)  # nothing of the post kept


def test_the_page_refuses_a_narrower_rubric_beside_the_gap(owner: User, pool: Pool) -> None:
    binary = make_binary()
    response = page_post(owner, pool, rubric=binary.pk, adjudication_gap=2)
    assert response.status_code == 200
    assert "at most 1 with rubric binary v1" in response.context["setup"].errors["adjudication_gap"][0]
    assert judging_of(pool).rubric == default_rubric()
    saved = page_post(owner, pool, rubric=binary.pk, adjudication_gap=1)
    assert saved.status_code == 302
    assert (judging_of(pool).rubric, judging_of(pool).adjudication_gap) == (binary, 1)


def test_the_page_offers_a_new_setup_the_gap_its_rubric_allows(owner: User) -> None:
    binary = make_binary()
    pool = make_pool(name="fresh", managers=[owner])
    Judging.objects.filter(pool=pool).delete()
    client = Client()
    client.force_login(owner)
    url = reverse("judging-setup:judging", kwargs={"name": pool.name})
    assert client.get(url, {"rubric": binary.pk}).context["setup"].initial["adjudication_gap"] == 1
    assert client.get(url).context["setup"].initial["adjudication_gap"] == 2


def test_only_the_pools_manager_may_post_the_set_up(owner: User, pool: Pool) -> None:
    other = make_manager("other")
    assert page_post(other, pool, adjudication_gap=99).status_code == 404
    assert page_post(make_user("a-rater"), pool, adjudication_gap=99).status_code == 403


# --------------------------------------------------------------------------------------------- the API


def test_the_api_answers_a_too_wide_gap_on_the_field(owner: User, pool: Pool) -> None:
    api = client_for(owner)
    patched = api.patch(f"/api/judging/{pool.name}/", {"adjudication_gap": 99}, format="json")
    assert patched.status_code == 400 and list(patched.json()) == ["adjudication_gap"]
    assert "at most 3" in patched.json()["adjudication_gap"][0]
    created = api.post("/api/judging/", {"pool": pool.name, "adjudication_gap": 4}, format="json")
    assert created.status_code == 400 and list(created.json()) == ["adjudication_gap"]
    assert judging_of(pool).adjudication_gap == 2
    assert api.patch(f"/api/judging/{pool.name}/", {"adjudication_gap": 3}, format="json").status_code == 200


def test_the_api_refuses_a_narrower_rubric_naming_the_gap(owner: User, pool: Pool) -> None:
    binary = make_binary()
    api = client_for(owner)
    url = f"/api/judging/{pool.name}/"
    refused = api.patch(url, {"rubric": binary.pk}, format="json")
    assert refused.status_code == 400 and list(refused.json()) == ["adjudication_gap"]
    assert judging_of(pool).rubric == default_rubric()
    both = api.patch(url, {"rubric": binary.pk, "adjudication_gap": 1}, format="json")
    assert both.status_code == 200 and both.json()["adjudication_gap"] == 1


def test_the_api_gives_a_new_setup_the_gap_its_rubric_allows(owner: User) -> None:
    binary = make_binary()
    pool = make_pool(name="fresh", managers=[owner])
    Judging.objects.filter(pool=pool).delete()
    created = client_for(owner).post("/api/judging/", {"pool": pool.name, "rubric": binary.pk}, format="json")
    assert created.status_code == 201 and created.json()["adjudication_gap"] == 1


def test_only_the_pools_manager_may_patch_the_gap(owner: User, pool: Pool) -> None:
    url = f"/api/judging/{pool.name}/"
    assert client_for(make_manager("other")).patch(url, {"adjudication_gap": 99}).status_code == 404
    assert client_for(make_user("a-rater")).patch(url, {"adjudication_gap": 99}).status_code == 403

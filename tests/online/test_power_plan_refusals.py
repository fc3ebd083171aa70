"""The power planner's refusal (`preference.PlanError`) is a `Refused` like every service's: the
interleaving page shows it beside the field it names (`Refused.add_to` on the planner's form), the API
answers 400 on that field (`Refused.as_data`), the command says it; nothing answers 500."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from online import experiments, preference
from online.forms import PowerPlanForm
from pooling.errors import Refused
from tests.conftest import client_for
from tests.factories import make_collection, make_run

CASES = [
    ({"delta": "0"}, "delta"),
    ({"delta": "0.3", "tie_share": "0.5"}, "delta"),  # too large for the tie share
    ({"delta": "0.1", "tie_share": "1"}, "tie_share"),
    ({"delta": "0.05", "click_rate": "5e-324"}, "click_rate"),
    ({"delta": "0.05", "click_rate": "0"}, "click_rate"),
]


def refusal(params: dict[str, str]) -> preference.PlanError:
    shares = {k: float(v) for k, v in params.items()}
    with pytest.raises(preference.PlanError) as refused:
        preference.plan_power(
            shares["delta"],
            tie_share=shares.get("tie_share", 0.0),
            click_rate=shares.get("click_rate", 1.0),
        )
    return refused.value


@pytest.fixture
def page(db, manager) -> Client:
    collection = make_collection(name="news", managers=[manager])
    for name in ("a", "b"):
        make_run(collection=collection, name=name, lists={"q1": ["d001", "d002"]})
    experiments.create_experiment(name="ab", collection=collection, run_a="a", run_b="b")
    client = Client()
    client.force_login(manager)
    return client


@pytest.mark.parametrize(("params", "field"), CASES)
def test_a_plan_error_is_a_refused_naming_its_field(params, field) -> None:
    exc = refusal(params)
    assert isinstance(exc, Refused) and isinstance(exc, ValueError)
    assert exc.field == field and exc.as_data() == {field: [str(exc)]}
    form = PowerPlanForm({"delta": "0.02", "tie_share": "0", "click_rate": "1", **params})
    assert form.plan() is None
    assert form.errors == {field: [str(exc)]}


@pytest.mark.parametrize(("params", "field"), CASES)
def test_the_page_shows_the_refusal_beside_its_field(page, params, field) -> None:
    message = str(refusal(params))
    shown = page.get("/online/interleaving/ab/", params)
    assert shown.status_code == 200
    form = shown.context["plan_form"]
    assert form.errors == {field: [message]} and shown.context["plan"] is None
    html = shown.content.decode()
    assert f'name="{field}"' in html and message.replace("'", "&#x27;") in html
    assert html.index(f'name="{field}"') < html.index(message) < html.index('type="submit">Plan')


def test_the_page_says_what_it_cannot_read_as_a_number_instead_of_planning_a_default(page) -> None:
    shown = page.get("/online/interleaving/ab/", {"delta": "much", "click_rate": "0.5"})
    assert shown.status_code == 200 and shown.context["plan"] is None
    assert list(shown.context["plan_form"].errors) == ["delta"]


def test_the_page_plans_with_its_defaults_and_what_is_given(page) -> None:
    shown = page.get("/online/interleaving/ab/", {"delta": "0.05"})
    plan = shown.context["plan"]
    assert plan == preference.plan_power(0.05, tie_share=0.0, click_rate=1.0)
    assert f"{plan.impressions} impressions" in shown.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(("params", "field"), CASES)
def test_the_api_answers_400_naming_the_field(manager, params, field) -> None:
    answer = client_for(manager).get("/api/interleaving/power/", params)
    assert answer.status_code == 400 and answer.json() == {field: [str(refusal(params))]}


@pytest.mark.django_db
@pytest.mark.parametrize(("params", "field"), CASES)
def test_the_command_says_the_refusal(params, field) -> None:
    argv = [f"--{k.replace('_', '-')}={v}" for k, v in params.items()]
    with pytest.raises(CommandError) as refused:
        call_command("plan_interleaving", *argv, stdout=io.StringIO())
    assert str(refused.value) == str(refusal(params))

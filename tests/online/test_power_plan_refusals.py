"""The power planner's refusal (`preference.PlanError`) is a `Refused` like every service's: the
interleaving page shows it beside the field it names (`Refused.add_to` on the planner's form), the API
answers 400 on that field (`Refused.as_data`), the command says it; nothing answers 500."""

from __future__ import annotations

import dataclasses
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
    ({"delta": "0.05", "alpha": "1"}, "alpha"),
    ({"delta": "0.05", "power": "0"}, "power"),
]


def refusal(params: dict[str, str]) -> preference.PlanError:
    shares = {k: float(v) for k, v in params.items()}
    with pytest.raises(preference.PlanError) as refused:
        preference.plan_power(
            shares["delta"],
            tie_share=shares.get("tie_share", 0.0),
            click_rate=shares.get("click_rate", 1.0),
            alpha=shares.get("alpha", preference.ALPHA),
            power=shares.get("power", preference.POWER),
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
    numbers = {"delta": "0.02", "tie_share": "0", "click_rate": "1", "alpha": "0.05", "power": "0.8"}
    form = PowerPlanForm({**numbers, **params})
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


def test_the_page_plans_at_the_level_and_power_given_as_the_api_and_the_command_do(page, manager) -> None:
    """α and power are the page's to set too (the API's and the command's were): the same plan from all
    three, and not the defaults' (which the page shows in its fields when none is given)."""
    params = {"delta": "0.03", "tie_share": "0.2", "click_rate": "0.4", "alpha": "0.01", "power": "0.9"}
    shown = page.get("/online/interleaving/ab/", params)
    plan = shown.context["plan"]
    assert plan is not None and (plan.alpha, plan.power) == (0.01, 0.9)
    assert plan != preference.plan_power(0.03, tie_share=0.2, click_rate=0.4)
    assert client_for(manager).get("/api/interleaving/power/", params).json() == dataclasses.asdict(plan)
    out = io.StringIO()
    argv = [f"--{k.replace('_', '-')}={v}" for k, v in params.items()]
    call_command("plan_interleaving", *argv, stdout=out)
    assert out.getvalue().startswith(f"{plan.impressions:,} impressions")
    html = shown.content.decode()
    assert f"{plan.impressions} impressions" in html and "at α = 0.01" in html
    defaults = page.get("/online/interleaving/ab/").content.decode()
    assert 'name="alpha" value="0.05"' in defaults and 'name="power" value="0.8"' in defaults

"""An interleaving experiment's clients are checked in one place, the service (`experiments.create_experiment`
and `update_experiment`): the page's form, the API and the command give it usernames, and a username no
account has is refused by it, on `clients`, with one message, and nothing is created or changed."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client

from online import experiments
from online.experiment_models import InterleavingExperiment
from tests.conftest import client_for
from tests.factories import make_collection, make_run, make_user

MESSAGE = "no user named 'ghost'"
FIELDS = {"collection": "news", "name": "ab", "run_a": "alpha", "run_b": "beta", "length": "5",
          "method": "team_draft", "clients": "frontend ghost"}  # fmt: skip


@pytest.fixture
def news(db, manager):
    collection = make_collection(name="news", managers=[manager])
    for name in ("alpha", "beta"):
        make_run(collection=collection, name=name, lists={"q1": ["d001", "d002", "d003"]})
    make_user("frontend")
    return collection


def test_the_service_refuses_a_username_no_account_has(news) -> None:
    with pytest.raises(ValidationError) as refused:
        experiments.create_experiment(
            name="ab", collection=news, run_a="alpha", run_b="beta", clients=["frontend", "ghost"]
        )
    assert refused.value.message_dict == {"clients": [MESSAGE]}
    assert not InterleavingExperiment.objects.exists()


def test_the_service_takes_usernames_and_accounts_alike(news) -> None:
    tester = make_user("tester")
    experiment = experiments.create_experiment(
        name="ab", collection=news, run_a="alpha", run_b="beta", clients=["frontend", tester]
    )
    assert sorted(experiment.clients.values_list("username", flat=True)) == ["frontend", "tester"]


def test_the_form_the_api_and_the_command_refuse_an_unknown_client_alike(news, manager) -> None:
    page = Client()
    page.force_login(manager)
    shown = page.post("/online/new-interleaving/", FIELDS)
    assert shown.status_code == 400 and shown.context["errors"] == {"clients": [MESSAGE]}
    assert "no user named &#x27;ghost&#x27;" in shown.content.decode()

    answer = client_for(manager).post(
        "/api/interleaving/", {**FIELDS, "clients": ["frontend", "ghost"]}, format="json"
    )
    assert answer.status_code == 400 and answer.json() == {"clients": [MESSAGE]}

    with pytest.raises(CommandError) as refused:
        call_command("create_interleaving", "ab", "--collection", "news", "--a", "alpha", "--b", "beta",
                     "--clients", "frontend,ghost", stdout=io.StringIO())  # fmt: skip
    assert str(refused.value) == f"clients: {MESSAGE}"
    assert not InterleavingExperiment.objects.exists()


def test_the_api_refuses_an_unknown_client_of_an_experiment_and_changes_nothing(news, manager) -> None:
    experiment = experiments.create_experiment(
        name="ab", collection=news, run_a="alpha", run_b="beta", clients=["frontend"]
    )
    answer = client_for(manager).patch("/api/interleaving/ab/", {"clients": ["ghost"]}, format="json")
    assert answer.status_code == 400 and answer.json() == {"clients": [MESSAGE]}
    assert list(experiment.clients.values_list("username", flat=True)) == ["frontend"]
    with pytest.raises(ValidationError) as refused:
        experiments.update_experiment(experiment=experiment, clients=["ghost"], active=False)
    assert refused.value.message_dict == {"clients": [MESSAGE]}
    experiment.refresh_from_db()
    assert experiment.active and list(experiment.clients.values_list("username", flat=True)) == ["frontend"]

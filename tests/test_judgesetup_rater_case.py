"""A new rater account may not take a username that an existing account has ignoring case (``Admin1``
beside ``admin1``): the login is case-sensitive (Django's ModelBackend), so the two would be different
accounts one typo apart. Refused in `membership.create_rater_account`, the one rule every way of making a
rater's account goes through: the judging page (beside the username field) and ``add_raters --create``.
No API endpoint creates accounts; the API's "add raters" takes exact names and is tried here too."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.urls import reverse

from judgements import membership
from judgements.models import Judging
from pooling.models import Pool
from tests.conftest import client_for, require_services
from tests.factories import make_manager, make_pool, make_user

pytestmark = pytest.mark.usefixtures("fast_passwords")


@pytest.fixture
def owner(db: None) -> User:
    return make_manager("owner")


@pytest.fixture
def existing(db: None) -> User:
    return make_user("admin1")


@pytest.fixture
def pool(owner: User) -> Pool:
    return make_pool(name="cases", managers=[owner])


def accounts() -> list[str]:
    return sorted(User.objects.values_list("username", flat=True))


def create_on_page(user: User, pool: Pool, username: str) -> Any:
    client = Client()
    client.force_login(user)
    url = reverse("judging-setup:judging", kwargs={"name": pool.name})
    return client.post(url, {"action": "create", "username": username, "password": "a-long-pass-9"})


@pytest.mark.parametrize("name", ["Admin1", "ADMIN1", " aDmIn1 "])
def test_it_refuses_a_name_taken_ignoring_case_naming_the_account(existing: User, name: str) -> None:
    before = accounts()
    with pytest.raises(membership.AccountRefused) as refused:
        membership.create_rater_account(username=name, password="a-long-pass-9")
    assert refused.value.field == "username"
    assert "'admin1' exists already" in refused.value.message and "only in case" in refused.value.message
    assert accounts() == before


def test_it_still_says_plainly_that_the_exact_name_is_taken(existing: User) -> None:
    User.objects.create_user("Admin1")  # a pair made before the rule: the exact one is named
    with pytest.raises(membership.AccountRefused) as refused:
        membership.create_rater_account(username="Admin1", password=None)
    assert refused.value.message == "a user named 'Admin1' exists already: add them as an existing user"


def test_it_creates_a_name_no_account_has_in_any_case(existing: User) -> None:
    user = membership.create_rater_account(username="Admin2", password="a-long-pass-9")
    assert user.username == "Admin2" and user.check_password("a-long-pass-9")


def test_the_login_is_case_sensitive(existing: User) -> None:
    """Why the rule: ModelBackend finds the account by its exact username (no case folding)."""
    assert authenticate(username="admin1", password="pass-word-123") == existing
    assert authenticate(username="Admin1", password="pass-word-123") is None


def test_the_page_shows_the_refusal_beside_the_username(owner: User, existing: User, pool: Pool) -> None:
    before = accounts()
    response = create_on_page(owner, pool, "Admin1")
    assert response.status_code == 200
    errors = response.context["new"].errors
    assert list(errors) == ["username"] and "'admin1' exists already" in errors["username"][0]
    assert "only in case" in response.content.decode()
    assert accounts() == before
    assert not Judging.objects.get(pool=pool).raters.exists()


def test_only_the_pools_manager_may_create_an_account(existing: User, pool: Pool) -> None:
    before = accounts()
    assert create_on_page(make_manager("other"), pool, "Someone").status_code == 404
    assert create_on_page(make_user("a-rater"), pool, "Someone").status_code == 403
    assert accounts() == sorted([*before, "a-rater", "other"])


def test_the_command_refuses_it_and_creates_nothing(existing: User, pool: Pool) -> None:
    before = accounts()
    with pytest.raises(CommandError, match="only in case"):
        call_command("add_raters", pool.name, "Admin1", "--create")
    assert accounts() == before


def test_the_api_adds_raters_by_their_exact_name_only(owner: User, existing: User, pool: Pool) -> None:
    api = client_for(owner)
    url = f"/api/judging/{pool.name}/raters/"
    wrong_case = api.post(url, {"usernames": ["Admin1"]}, format="json")
    assert wrong_case.status_code == 400 and "'Admin1'" in str(wrong_case.json()["usernames"])
    assert api.post(url, {"usernames": ["admin1"]}, format="json").json()["raters"] == ["admin1"]


@pytest.mark.django_db(transaction=True)
def test_two_managers_making_one_name_in_two_cases_at_once_make_one_account(monkeypatch: Any) -> None:
    """PostgreSQL, a connection each: the first is between its check and its insert (checking the
    password) when the second starts. The second waits for the first to commit, then finds its account
    and is refused; both checked before either inserted, and two accounts were made, before."""
    require_services()
    checking, results = threading.Event(), []
    real_validate = membership.validate_password

    def slow_validate(password: str, user: Any = None) -> None:
        checking.set()
        time.sleep(1.0)  # the window: checked, not inserted
        real_validate(password, user)

    monkeypatch.setattr(membership, "validate_password", slow_validate)

    def make(name: str) -> None:
        try:
            membership.create_rater_account(username=name, password="a-long-pass-phrase-42")
            results.append(name)
        except membership.AccountRefused as exc:
            results.append(f"refused: {exc}")
        finally:
            connection.close()

    first = threading.Thread(target=make, args=("Alice",))
    first.start()
    assert checking.wait(timeout=30)
    second = threading.Thread(target=make, args=("alice",))
    second.start()
    for thread in (first, second):
        thread.join(timeout=60)

    assert list(User.objects.filter(username__iexact="alice").values_list("username", flat=True)) == ["Alice"]
    assert results[0] == "Alice" and "differs from 'alice' only in case" in results[1]

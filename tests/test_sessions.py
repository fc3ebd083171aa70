"""A browser's session and its user (`labeling.sessions`, `labeling.auth.ModelBackend`): on PostgreSQL each
read by one prepared statement, with Django's answers: an expired session or an inactive user is nobody,
a password changed elsewhere ends the session, and a session logged in under Django's own ModelBackend
stays logged in."""

from __future__ import annotations

from datetime import timedelta
from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from labeling import sessions
from tests.factories import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

URL = "/api/ping/"  # any view behind a login; this one does no work of its own


def logged_in(username: str = "ana", **fields) -> APIClient:
    make_user(username, password="pass-word-123", **fields)
    client = APIClient()
    assert client.login(username=username, password="pass-word-123")
    return client


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the prepared statements are PostgreSQL's")
def test_it_reads_the_session_and_its_user_by_one_prepared_statement_each():
    client = logged_in()
    with CaptureQueriesContext(connection) as queries:
        assert client.get(URL).status_code == 200
    # (a test runs in a transaction, in which each statement takes a savepoint)
    texts = [query["sql"] for query in queries.captured_queries if "SAVEPOINT" not in query["sql"]]
    assert texts == [sessions._session_sql(), texts[1]]
    assert texts[1].startswith("SELECT u.id,") and "WHERE u.id = %(id)s" in texts[1]


def test_it_answers_a_logged_in_session():
    assert logged_in().get(URL).status_code == 200


def test_it_treats_an_expired_session_as_nobody():
    client = logged_in()
    Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    assert client.get(URL).status_code == 401  # nobody: as without a session


def test_it_treats_an_inactive_user_as_nobody():
    client = logged_in()
    User.objects.filter(username="ana").update(is_active=False)
    assert client.get(URL).status_code == 401


def test_it_ends_the_session_when_the_password_changed_elsewhere():
    client = logged_in()
    user = User.objects.get(username="ana")
    user.set_password("a-new-pass-word-456")
    user.save()
    assert client.get(URL).status_code == 401


def test_it_keeps_a_session_logged_in_under_djangos_model_backend():
    user = make_user("old")
    store = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.create()
    client = APIClient()
    client.cookies[settings.SESSION_COOKIE_NAME] = store.session_key
    assert client.get(URL).status_code == 200

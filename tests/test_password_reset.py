"""Password reset: mail through EMAIL_BACKEND sent by a task, the same work for known and unknown
addresses, rate-limited, and off by PASSWORD_RESET_ENABLED."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

import labeling.accounts
from labeling import tasks

URL = "/accounts/password_reset/"


@pytest.fixture
def known(db):
    return User.objects.create_user("alice", email="alice@example.org", password="old-pass-word-123")


@pytest.fixture
def enqueued(monkeypatch):
    """The mail tasks the reset enqueued (run as well, in process)."""
    calls: list[dict] = []
    real = tasks.send_email.delay

    def delay(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(labeling.accounts.send_email, "delay", delay)
    return calls


@pytest.mark.django_db
def test_it_mails_a_working_reset_link_to_a_known_address(
    client, known, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, {"email": "alice@example.org"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["alice@example.org"]
    link = re.search(r"/accounts/reset/\S+/\S+/", mail.outbox[0].body).group(0)
    form = client.get(link, follow=True)
    assert form.status_code == 200
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": "n3w-Pass-word!", "new_password2": "n3w-Pass-word!"}
    )
    assert done.status_code == 302
    known.refresh_from_db()
    assert known.check_password("n3w-Pass-word!")


@pytest.mark.django_db
def test_it_does_the_same_work_for_an_unknown_address(
    client, known, enqueued, django_capture_on_commit_callbacks
):
    """Same answer, same queries, one message rendered and one task enqueued either way: only the task,
    in the worker, knows it has no recipient."""
    answers, queries = [], []
    for email in ("alice@example.org", "nobody@example.org"):
        with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
            response = client.post(URL, {"email": email})
        answers.append((response.status_code, response["Location"]))
        queries.append([re.sub(r"'[^']*'", "?", q["sql"]) for q in captured.captured_queries])
    assert answers[0] == answers[1]
    assert queries[0] == queries[1]
    assert [len(call["to"]) for call in enqueued] == [1, 0]
    assert enqueued[0]["subject"] == enqueued[1]["subject"]
    assert len(enqueued[1]["body"]) > 100  # rendered with a token for a stand-in user
    assert len(mail.outbox) == 1  # nothing sent to the unknown address


@pytest.mark.django_db
def test_it_limits_resets_per_address_and_per_email(client, known, settings):
    settings.PASSWORD_RESET_RATE = "2/hour"
    codes = [client.post(URL, {"email": f"x{n}@example.org"}).status_code for n in range(3)]
    assert codes == [302, 302, 429]
    other = client.__class__(REMOTE_ADDR="10.0.0.9")
    codes = [other.post(URL, {"email": "alice@example.org"}).status_code for _ in range(2)]
    third = client.__class__(REMOTE_ADDR="10.0.0.10").post(URL, {"email": "Alice@Example.org"})
    assert codes == [302, 302] and third.status_code == 429
    assert "Too many password reset requests" in third.content.decode()


@pytest.mark.django_db
def test_it_switches_the_reset_off_by_a_setting(client, known, settings):
    settings.PASSWORD_RESET_ENABLED = False
    assert client.get(URL).status_code == 404
    assert client.post(URL, {"email": "alice@example.org"}).status_code == 404
    assert client.get("/accounts/reset/done/").status_code == 404
    assert len(mail.outbox) == 0
    login = client.get("/accounts/login/")
    assert login.status_code == 200 and URL not in login.content.decode()
    settings.PASSWORD_RESET_ENABLED = True
    assert URL in client.get("/accounts/login/").content.decode()


def test_it_prints_mail_on_the_console_in_the_embedded_setup():
    from labeling import settings as project_settings

    assert project_settings.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"


def test_the_task_sends_nothing_without_a_recipient(db):
    assert tasks.send_email(subject="s", body="b", from_email=None, to=[]) == 0
    assert tasks.send_email(subject="s", body="b", from_email=None, to=["a@example.org"]) == 1
    assert len(mail.outbox) == 1

"""`GET /api/ping/`: the trivial authenticated endpoint (the anchor of benchmarks/rater_load.py)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

URL = "/api/ping/"


def test_it_answers_ok_to_a_token():
    token = Token.objects.create(user=User.objects.create_user("rater", password="rater-pass-123"))
    response = APIClient().get(URL, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_it_answers_ok_to_a_session():
    User.objects.create_user("rater", password="rater-pass-123")
    client = APIClient()
    assert client.login(username="rater", password="rater-pass-123")
    response = client.get(URL)
    assert response.status_code == 200
    assert response.json() == {"ok": True}


def test_it_answers_401_to_an_anonymous_caller():
    response = APIClient().get(URL)
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Token")


def test_it_answers_401_to_a_wrong_token():
    response = APIClient().get(URL, HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert response.status_code == 401


def test_it_answers_401_to_an_inactive_user():
    user = User.objects.create_user("gone", password="gone-pass-123", is_active=False)
    token = Token.objects.create(user=user)
    response = APIClient().get(URL, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 401


def test_it_allows_only_get():
    token = Token.objects.create(user=User.objects.create_user("rater", password="rater-pass-123"))
    response = APIClient().post(URL, HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 405

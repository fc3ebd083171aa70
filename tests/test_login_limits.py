"""Brute-force limits: django-axes locks a username and address after LOGIN_FAILURE_LIMIT wrong passwords
(the right one too, for the cool-off), on the login page, the admin's and the token endpoint; DRF throttles
answer 429 past the API's rates."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import F
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from judgements.models import Assignment

LIMIT = settings.AXES_FAILURE_LIMIT


def log_in(client, username: str, password: str, url: str = "/accounts/login/"):
    return client.post(url, {"username": username, "password": password})


def logged_in(client) -> bool:
    return "_auth_user_id" in client.session


@pytest.mark.django_db
def test_it_refuses_the_right_password_after_the_failure_limit_until_the_cooloff(client, rater, second_rater):
    assert LIMIT == 5
    for _ in range(LIMIT - 1):
        assert log_in(client, "rater", "wrong-password").status_code == 200  # the form again, with its error
    assert log_in(client, "rater", "wrong-password").status_code == 429  # the last allowed failure locks
    response = log_in(client, "rater", "rater-pass-123")
    assert response.status_code == 429 and not logged_in(client)
    assert "Too many failed logins" in response.content.decode()
    # The lock is for that username (from that address): another user still logs in.
    assert log_in(client, "rater2", "rater2-pass-123").status_code == 302 and logged_in(client)
    client.logout()
    # After the cool-off the right password works again, and a success clears the count.
    AccessAttempt.objects.update(
        attempt_time=F("attempt_time") - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert log_in(client, "rater", "rater-pass-123").status_code == 302 and logged_in(client)
    assert not AccessAttempt.objects.filter(username="rater").exists()


@pytest.mark.django_db
def test_it_lets_a_few_typos_through(client, rater):
    for _ in range(LIMIT - 1):
        log_in(client, "rater", "wrong-password")
    assert log_in(client, "rater", "rater-pass-123").status_code == 302 and logged_in(client)


@pytest.mark.django_db
def test_it_counts_the_admin_login_too(client, admin_user):
    for _ in range(LIMIT):
        log_in(client, "admin", "wrong-password", url="/admin/login/")
    response = log_in(client, "admin", "admin-pass-123", url="/admin/login/")
    assert response.status_code == 429 and not logged_in(client)


@pytest.mark.django_db
def test_it_does_not_count_a_forged_forwarded_address(client, rater):
    """Without BEHIND_PROXY the client's X-Forwarded-For is not its address: changing it at every guess
    does not escape the lock."""
    for n in range(LIMIT):
        client.post(
            "/accounts/login/", {"username": "rater", "password": "x"}, HTTP_X_FORWARDED_FOR=f"10.0.0.{n}"
        )
    response = client.post(
        "/accounts/login/",
        {"username": "rater", "password": "rater-pass-123"},
        HTTP_X_FORWARDED_FOR="10.9.9.9",
    )
    assert response.status_code == 429


@pytest.mark.django_db
def test_it_gives_a_token_for_the_right_password_and_locks_it_like_the_login(rater):
    api = APIClient()
    first = api.post("/api/auth/token/", {"username": "rater", "password": "rater-pass-123"}, format="json")
    assert first.status_code == 200 and len(first.json()["token"]) == 40
    again = api.post("/api/auth/token/", {"username": "rater", "password": "rater-pass-123"}, format="json")
    assert again.json() == first.json()
    assert APIClient(HTTP_AUTHORIZATION=f"Token {first.json()['token']}").get("/api/ping/").json() == {
        "ok": True
    }
    wrong = api.post("/api/auth/token/", {"username": "rater", "password": "nope"}, format="json")
    assert wrong.status_code == 400 and "non_field_errors" in wrong.json()
    for _ in range(LIMIT - 1):
        api.post("/api/auth/token/", {"username": "rater", "password": "nope"}, format="json")
    locked = api.post("/api/auth/token/", {"username": "rater", "password": "rater-pass-123"}, format="json")
    assert locked.status_code == 429 and "token" not in locked.json()
    assert "Too many failed logins" in locked.json()["detail"]


@pytest.fixture
def low_rates(monkeypatch):
    monkeypatch.setattr(
        SimpleRateThrottle, "THROTTLE_RATES", {"anon": "3/min", "user": "4/min", "login": "2/min"}
    )


@pytest.mark.django_db
def test_it_throttles_anonymous_requests_by_address(monkeypatch):
    """On the endpoints open to anonymous clients; elsewhere they get their 401 first (and a token, 160
    random bits, is not guessed by a few thousand tries)."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "3/min", "user": None, "login": None})
    api = APIClient()
    codes = [api.post("/api/auth/token/", {"username": "x", "password": "y"}).status_code for _ in range(4)]
    assert codes == [400, 400, 400, 429]
    assert APIClient(REMOTE_ADDR="10.1.2.3").post("/api/auth/token/", {}).status_code == 400


@pytest.mark.django_db
def test_it_throttles_each_user_on_their_own(low_rates, rater, second_rater):
    from tests.conftest import client_for

    first, second = client_for(rater), client_for(second_rater)
    codes = [first.get("/api/ping/").status_code for _ in range(5)]
    assert codes == [200, 200, 200, 200, 429]
    response = first.get("/api/ping/")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert second.get("/api/ping/").status_code == 200


@pytest.mark.django_db
def test_it_throttles_the_token_endpoint_at_the_login_rate(low_rates, rater):
    api = APIClient()
    codes = [
        api.post("/api/auth/token/", {"username": "nobody", "password": "x"}, format="json").status_code
        for _ in range(3)
    ]
    assert codes == [400, 400, 429]


@pytest.mark.django_db
def test_it_lets_requests_through_when_the_cache_is_down(low_rates, rater, monkeypatch):
    from django.core.cache import cache

    def down(*args, **kwargs):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    monkeypatch.setattr(cache, "get", down)
    from tests.conftest import client_for

    assert [client_for(rater).get("/api/ping/").status_code for _ in range(6)] == [200] * 6


@pytest.mark.django_db
def test_the_token_endpoint_is_in_the_schema():
    schema = APIClient().get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/auth/token/"]["post"]
    assert "token" in operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].lower()


@pytest.mark.django_db
def test_it_throttles_the_raters_hot_path_too(low_rates, rater):
    """`next` and `judgement` are answered without DRF's view in their usual case: the same rates hold."""
    from tests.conftest import client_for
    from tests.factories import make_pool

    make_pool(name="hot", raters=[rater])
    api = client_for(rater)
    codes = [api.post("/api/pools/hot/next/").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 200]
    response = api.post("/api/pools/hot/next/")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    lease = Assignment.objects.get(rater=rater, state="active")
    judged = api.post(f"/api/assignments/{lease.pk}/judgement/", {"grade": 1}, format="json")
    assert judged.status_code == 429

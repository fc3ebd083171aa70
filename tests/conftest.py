"""Shared fixtures: named personas, the API client, and the service checks for CI."""

from __future__ import annotations

import contextlib
import os

import pytest
from django.contrib.auth.models import Group
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchmarks._common import service_up
from labeling.celery import app as celery_app
from pooling.permissions import MANAGERS_GROUP
from tests.browser import browser, page  # noqa: F401 - the browser tests' fixtures, every module's
from tests.factories import make_user

IN_CI = os.environ.get("CI", "").lower() == "true"


def _own_cache_keys() -> None:
    """This test run's cache keys under a prefix of its own (CACHE_KEY_PREFIX, inherited by the workers
    and servers the tests start): each test's `cache.clear()` then empties only this run's keys, not those
    of another run sharing the Redis database (whose throttle counts and live progress it wiped)."""
    from django.conf import settings
    from django.test.utils import override_settings

    prefix = os.environ.setdefault("CACHE_KEY_PREFIX", f"test{os.getpid()}")
    caches = {alias: {**config, "KEY_PREFIX": prefix} for alias, config in settings.CACHES.items()}
    override_settings(CACHES=caches).enable()  # for the whole run; resets the cache connections


_own_cache_keys()


@pytest.fixture
def fast_passwords(settings):
    """Passwords hashed with a fast hasher (`pytest.mark.usefixtures("fast_passwords")`): for tests whose
    personas log in with real passwords in this process, where PBKDF2's rounds per account would be most
    of their set-up time. Not for every test: a server the tests start in another process hashes with
    the project's hashers, which do not read an MD5 hash."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def require_services() -> None:
    """Tests of the production setup need PostgreSQL and Redis: under CI they fail, never skip."""
    from django.conf import settings

    missing = []
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        missing.append("DATABASE_URL pointing at PostgreSQL")
    if not settings.CELERY_BROKER_URL.startswith("redis") or not service_up("127.0.0.1", 6379):
        missing.append("CELERY_BROKER_URL pointing at a running Redis")
    if missing:
        needs("needs " + " and ".join(missing))


def needs(message: str) -> None:
    """A test without what it needs (a service, Chromium): under CI it fails, never skips."""
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(autouse=True)
def eager_celery():
    """Tasks run in process in tests unless a test starts a real worker (see test_worker)."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture(autouse=True, scope="session")
def own_cache_keys_removed():
    """At the end of the run, its cache keys go (each test empties them before it starts; the last
    test's would stay in a shared Redis database, without an expiry for some)."""
    yield
    from django.core.cache import cache

    with contextlib.suppress(Exception):
        cache.clear()


@pytest.fixture(autouse=True)
def fresh_throttles():
    """Each test starts with empty API throttle counts (they live in the cache, shared by the whole run and
    keyed by address: without this, the suite's anonymous requests would add up to the `anon` rate)."""
    from django.core.cache import cache

    with contextlib.suppress(Exception):  # a test of its own stopped Redis: nothing to clear
        cache.clear()


@pytest.fixture(autouse=True)
def media_root(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def admin_user(db):
    return make_user("admin", password="admin-pass-123", is_staff=True, is_superuser=True)


@pytest.fixture
def manager(db):
    user = make_user("manager", password="manager-pass-123")
    group, _ = Group.objects.get_or_create(name=MANAGERS_GROUP)
    user.groups.add(group)
    return user


@pytest.fixture
def rater(db):
    return make_user("rater", password="rater-pass-123")


@pytest.fixture
def second_rater(db):
    return make_user("rater2", password="rater2-pass-123")


@pytest.fixture
def outsider(db):
    return make_user("outsider", password="outsider-pass-123")


@pytest.fixture
def api():
    return APIClient()


def page_text(user, url: str) -> str:
    """The text of the page at `url` as `user` reads it (logged in, answered 200): its tags dropped, its
    white space folded, for tests that compare a page's figures with the API's."""
    import re

    from django.test import Client

    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def client_for(user) -> APIClient:
    """An API client with the user's token (the way an API client authenticates; the rater loop's function
    views know no test-only shortcut)."""
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client

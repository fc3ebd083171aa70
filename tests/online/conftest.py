"""Fixtures of the online tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """The personas' passwords hashed with a fast hasher: these tests are about experiments, not logins,
    and PBKDF2's million rounds per account were most of their set-up time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_interleaving_caches():
    """The search path's per-process memos start empty: a test's ids may be an earlier test's."""
    from online import serving

    serving.clear_caches()
    yield
    serving.clear_caches()
